/*
** interp_ops.c -- elementwise semantics.  Floats are computed in double and
** rounded to their dtype once per op (for + - * / sqrt this is exactly the
** correctly rounded result the GPU computes through f32); integers wrap to
** their width with PTX's rules for shifts and division by zero.
**
** Accuracy of the transcendental functions (sin cos erf logistic expm1
** log1p pow exp exp2 log log2 tanh): the C library's double result (within
** an ulp of double) rounded once to the dtype, so at most 0.5 ulp of the
** dtype plus 2^-28 ulp (double rounding), i.e. correctly rounded but for
** rare near-ties.  For f64 these are the C library's results themselves
** (glibc: within 1 ulp; logistic, composed of exp, within 2-3 ulp), but sin
** and cos come from sinl and cosl: glibc 2.36's double cos is 8 ulp off at
** 6381956970095103 * 2^797, the hardest argument to reduce.  round, round_away, trunc, sign, floor, ceil, max, min
** are exact.  max/min propagate NaN (like jax.lax.max); the sign of
** max(-0, +0) is unspecified.  Under approx_math exp, exp2, log and log2
** flush f32 subnormal inputs and results to zero, as ex2.approx.ftz and
** lg2.approx.ftz do on the GPU (log of a subnormal is -inf); the other
** functions keep their accurate values.
*/
#include <float.h>
#include <math.h>

#include "interp.h"

ival interp_const(int dtype, double x) {
  ival v;
  if (dt_isfloat(dtype)) v.f = dt_round(dtype, x);
  else if (dtype == MGPU_U64 && x >= 9223372036854775808.0) v.i = (int64_t)(uint64_t)x;
  else v.i = dt_wrap_int(dtype, (int64_t)x);
  return v;
}

/* The f32 remainder the GPU computes: x - trunc(x / y) * y, fused. */
static double frem(int dtype, double x, double y) {
  double q = trunc(dt_round(MGPU_F32, x / y));
  return dt_round(dtype, fma(-q, y, x));
}

static double funary(int code, double x) {
  switch (code) {
  case IR_neg: return -x;
  case IR_abs: return fabs(x);
  case IR_exp: return exp(x);
  case IR_exp2: return exp2(x);
  case IR_log: return log(x);
  case IR_log2: return log2(x);
  case IR_sqrt: return sqrt(x);
  case IR_rsqrt: return 1.0 / sqrt(x);
  case IR_tanh: return tanh(x);
  case IR_floor: return floor(x);
  case IR_ceil: return ceil(x);
  case IR_sin: return (double)sinl(x);
  case IR_cos: return (double)cosl(x);
  case IR_erf: return erf(x);
  case IR_logistic: return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));   /* no overflow */
  case IR_expm1: return expm1(x);
  case IR_log1p: return log1p(x);
  case IR_round: return nearbyint(x);      /* the default rounding mode: half to even */
  case IR_round_away: return round(x);
  case IR_trunc: return trunc(x);
  case IR_sign: return (isnan(x) || x == 0) ? x : copysign(1.0, x);
  default: mgpu_unreachable();
  }
}

/* Leading zeros and set bits of the dtype's `bits`-wide pattern. */
static int64_t ibits(int code, int bits, uint64_t ux) {
  if (bits < 64) ux &= (1ULL << bits) - 1;
  int64_t n = 0;
  if (code == IR_popcount) {
    for (; ux; ux &= ux - 1) n++;
    return n;
  }
  for (int b = bits - 1; b >= 0 && !((ux >> b) & 1); b--) n++;
  return n;
}

static int64_t iunary(int code, int dtype, int64_t x) {
  switch (code) {
  case IR_neg: return dt_wrap_int(dtype, (int64_t)(0 - (uint64_t)x));
  case IR_abs: return dt_wrap_int(dtype, x < 0 ? (int64_t)(0 - (uint64_t)x) : x);
  case IR_not: return dtype == MGPU_PRED ? !x : dt_wrap_int(dtype, ~x);
  case IR_sign: return dt_issigned(dtype) ? (x > 0) - (x < 0) : x != 0;
  case IR_clz: case IR_popcount: return ibits(code, dt_table[dtype].bits, (uint64_t)x);
  default: mgpu_unreachable();
  }
}

/* An f32 subnormal to a zero of its sign (what .ftz does to inputs and results). */
static double ftz32(double x) { return x != 0 && fabs(x) < FLT_MIN ? copysign(0.0, x) : x; }

void interp_unary(int code, int dtype, bool approx, const ival *a, ival *out, int64_t n) {
  bool ftz = approx && dtype != MGPU_F64 &&
             (code == IR_exp || code == IR_exp2 || code == IR_log || code == IR_log2);
  if (ftz) {
    for (int64_t i = 0; i < n; i++)
      out[i].f = dt_round(dtype, ftz32(dt_round(MGPU_F32, funary(code, ftz32(a[i].f)))));
  } else if (dt_isfloat(dtype)) {
    for (int64_t i = 0; i < n; i++) out[i].f = dt_round(dtype, funary(code, a[i].f));
  } else {
    for (int64_t i = 0; i < n; i++) out[i].i = iunary(code, dtype, a[i].i);
  }
}

static double fbinary(int code, int dtype, double x, double y) {
  switch (code) {
  case IR_add: return x + y;
  case IR_sub: return x - y;
  case IR_mul: return x * y;
  case IR_div: return x / y;
  case IR_rem: return frem(dtype, x, y);
  case IR_max: return (isnan(x) || isnan(y)) ? NAN : fmax(x, y);
  case IR_min: return (isnan(x) || isnan(y)) ? NAN : fmin(x, y);
  case IR_pow: return pow(x, y);
  default: mgpu_unreachable();
  }
}

static int64_t ibinary(int code, int dtype, int64_t x, int64_t y) {
  int bits = dt_table[dtype].bits;
  bool sg = dt_issigned(dtype);
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  if (!sg && bits < 64) { ux &= (1ULL << bits) - 1; uy &= (1ULL << bits) - 1; }
  switch (code) {
  case IR_add: return dt_wrap_int(dtype, (int64_t)(ux + uy));
  case IR_sub: return dt_wrap_int(dtype, (int64_t)(ux - uy));
  case IR_mul: return dt_wrap_int(dtype, (int64_t)(ux * uy));
  case IR_div:
    if (y == 0) return dt_wrap_int(dtype, -1);             /* PTX: unspecified; hardware gives all ones */
    if (sg) return (x == INT64_MIN && y == -1) ? x : dt_wrap_int(dtype, x / y);
    return dt_wrap_int(dtype, (int64_t)(ux / uy));
  case IR_rem:
    if (y == 0) return x;
    if (sg) return (y == -1) ? 0 : dt_wrap_int(dtype, x % y);
    return dt_wrap_int(dtype, (int64_t)(ux % uy));
  case IR_max: return sg ? (x > y ? x : y) : (int64_t)(ux > uy ? ux : uy);
  case IR_min: return sg ? (x < y ? x : y) : (int64_t)(ux < uy ? ux : uy);
  case IR_and: return x & y;
  case IR_or: return x | y;
  case IR_xor: return dtype == MGPU_PRED ? (x ^ y) & 1 : dt_wrap_int(dtype, x ^ y);
  case IR_shl: return uy >= (uint64_t)bits ? 0 : dt_wrap_int(dtype, (int64_t)(ux << uy));
  case IR_shr:
    if (sg) return uy >= (uint64_t)bits ? (x < 0 ? -1 : 0) : dt_wrap_int(dtype, x >> uy);
    return uy >= (uint64_t)bits ? 0 : dt_wrap_int(dtype, (int64_t)(ux >> uy));
  default: mgpu_unreachable();
  }
}

void interp_binary(int code, int dtype, const ival *a, int sa, const ival *b, int sb, ival *out, int64_t n) {
  if (dt_isfloat(dtype)) {
    for (int64_t i = 0; i < n; i++) out[i].f = dt_round(dtype, fbinary(code, dtype, a[i * sa].f, b[i * sb].f));
  } else {
    for (int64_t i = 0; i < n; i++) out[i].i = ibinary(code, dtype, a[i * sa].i, b[i * sb].i);
  }
}

static int cmp_f(int code, double x, double y) {
  switch (code) {   /* ordered comparisons: false with NaN, ne true */
  case IR_lt: return x < y;
  case IR_le: return x <= y;
  case IR_gt: return x > y;
  case IR_ge: return x >= y;
  case IR_eq: return x == y;
  default: return !(x == y);
  }
}

static int cmp_i(int code, bool sg, int64_t x, int64_t y) {
  if (!sg) {
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    switch (code) {
    case IR_lt: return ux < uy;
    case IR_le: return ux <= uy;
    case IR_gt: return ux > uy;
    case IR_ge: return ux >= uy;
    case IR_eq: return ux == uy;
    default: return ux != uy;
    }
  }
  switch (code) {
  case IR_lt: return x < y;
  case IR_le: return x <= y;
  case IR_gt: return x > y;
  case IR_ge: return x >= y;
  case IR_eq: return x == y;
  default: return x != y;
  }
}

void interp_compare(int code, int dtype, const ival *a, int sa, const ival *b, int sb, ival *out, int64_t n) {
  if (dt_isfloat(dtype)) {
    for (int64_t i = 0; i < n; i++) out[i].i = cmp_f(code, a[i * sa].f, b[i * sb].f);
  } else {
    bool sg = dt_issigned(dtype);
    for (int64_t i = 0; i < n; i++) out[i].i = cmp_i(code, sg, a[i * sa].i, b[i * sb].i);
  }
}

void interp_convert(int code, int from, int to, const ival *a, ival *out, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (code == IR_bitcast) {
      unsigned char raw[8] = { 0 };
      if (dt_isfloat(from)) dt_store(from, raw, a[i].f); else dt_store_int(from, raw, a[i].i);
      if (dt_isfloat(to)) out[i].f = dt_load(to, raw); else out[i].i = dt_load_int(to, raw);
    } else if (to == MGPU_PRED) {
      out[i].i = dt_isfloat(from) ? a[i].f != 0 : a[i].i != 0;   /* NaN is true */
    } else if (dt_isfloat(to)) {
      double x = dt_isfloat(from) ? a[i].f : (from == MGPU_U64 ? (double)(uint64_t)a[i].i : (double)a[i].i);
      /* narrow float formats are reached through f32, as the GPU converts */
      if (dt_bytes(to) < 4 && from != MGPU_F32 && !(dt_isfloat(from) && dt_bytes(from) < 4)) x = dt_round(MGPU_F32, x);
      out[i].f = dt_round(to, x);
    } else if (dt_isfloat(from)) {
      unsigned char raw[8];
      dt_store(to, raw, a[i].f);          /* truncating, saturating, NaN -> 0 */
      out[i].i = dt_load_int(to, raw);
    } else {
      out[i].i = dt_wrap_int(to, a[i].i);
    }
  }
}
