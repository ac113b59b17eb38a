/*
** dtype.c -- the element-type table and exact conversions between doubles
** and every element encoding (RNE; f8 formats saturate like cvt.satfinite).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define DT_ENTRY(nm, en, by, bi, cl, px, pb) [en] = { #nm, by, bi, cl, px, pb },
const dt_info dt_table[MGPU_DTYPE_COUNT] = { DT_DEF(DT_ENTRY) };
#undef DT_ENTRY

#define DT_ONE(nm, en, by, bi, cl, px, pb) + 1
_Static_assert(0 DT_DEF(DT_ONE) == MGPU_DTYPE_COUNT, "DT_DEF must list every mgpu_dtype");
#undef DT_ONE

int dt_lookup(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < MGPU_DTYPE_COUNT; i++)
    if (strcmp(dt_table[i].name, name) == 0) return i;
  if (strcmp(name, "bool") == 0) return MGPU_PRED;
  if (strcmp(name, "float32") == 0) return MGPU_F32;
  if (strcmp(name, "float16") == 0) return MGPU_F16;
  if (strcmp(name, "bfloat16") == 0) return MGPU_BF16;
  if (strcmp(name, "int32") == 0) return MGPU_I32;
  return -1;
}

/* -- Small float formats -------------------------------------------------- */

typedef struct fmt {
  int mbits;      /* explicit mantissa bits */
  int ebits;
  int bias;
  double maxval;  /* largest finite value */
  bool sat;       /* overflow saturates (f8 satfinite) instead of going to inf */
  uint32_t nan;   /* canonical NaN encoding (without sign) */
} fmt;

static const fmt F16  = { 10, 5, 15, 65504.0, false, 0x7e00 };
static const fmt BF16 = { 7, 8, 127, 3.3895313892515355e38, false, 0x7fc0 };
static const fmt E4M3 = { 3, 4, 7, 448.0, true, 0x7f };
static const fmt E5M2 = { 2, 5, 15, 57344.0, true, 0x7e };

static const fmt *fmt_of(int dtype) {
  switch (dtype) {
  case MGPU_F16: return &F16;
  case MGPU_BF16: return &BF16;
  case MGPU_F8E4M3: return &E4M3;
  case MGPU_F8E5M2: return &E5M2;
  default: return NULL;
  }
}

/* Round x to the format (round to nearest, ties to even). */
static double fmt_round(const fmt *f, double x) {
  if (isnan(x)) return x;
  if (isinf(x)) return f->sat ? copysign(f->maxval, x) : x;
  if (x == 0) return x;
  int e;
  frexp(x, &e);                       /* |x| = m * 2^e, m in [0.5, 1) */
  int emin = 1 - f->bias;             /* smallest normal is 2^emin */
  int q = (e - 1 < emin ? emin : e - 1) - f->mbits;  /* quantum exponent */
  double r = ldexp(nearbyint(ldexp(x, -q)), q);
  if (fabs(r) > f->maxval) {
    if (f->sat) return copysign(f->maxval, x);
    return copysign(INFINITY, x);
  }
  return r;
}

static uint32_t fmt_encode(const fmt *f, double x) {
  uint32_t sign = signbit(x) ? 1u << (f->ebits + f->mbits) : 0;
  if (isnan(x)) return f->nan;
  x = fmt_round(f, x);
  double a = fabs(x);
  if (a == 0) return sign;
  if (isinf(a)) return sign | (((1u << f->ebits) - 1) << f->mbits);
  int e;
  double m = frexp(a, &e);            /* a = m * 2^e */
  int E = e - 1 + f->bias;
  if (E >= 1) {
    uint32_t mant = (uint32_t)ldexp(m * 2 - 1, f->mbits);
    return sign | ((uint32_t)E << f->mbits) | mant;
  }
  uint32_t mant = (uint32_t)ldexp(a, f->bias - 1 + f->mbits);
  return sign | mant;
}

static double fmt_decode(const fmt *f, uint32_t bits) {
  uint32_t mmask = (1u << f->mbits) - 1, emask = (1u << f->ebits) - 1;
  uint32_t mant = bits & mmask, E = (bits >> f->mbits) & emask;
  bool neg = (bits >> (f->ebits + f->mbits)) & 1;
  double v;
  if (f->sat && f == &E4M3) {
    if (E == emask && mant == mmask) return NAN;
  } else if (E == emask) {
    v = mant ? NAN : INFINITY;
    return neg ? -v : v;
  }
  if (E == 0) v = ldexp((double)mant, 1 - f->bias - f->mbits);
  else v = ldexp(1.0 + ldexp((double)mant, -f->mbits), (int)E - f->bias);
  return neg ? -v : v;
}

uint16_t dt_f32_to_bf16(float f) { return (uint16_t)fmt_encode(&BF16, f); }
float dt_bf16_to_f32(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
uint16_t dt_f32_to_f16(float f) { return (uint16_t)fmt_encode(&F16, f); }
float dt_f16_to_f32(uint16_t h) { return (float)fmt_decode(&F16, h); }

/* -- Integers -------------------------------------------------------------- */

int64_t dt_wrap_int(int dtype, int64_t x) {
  switch (dtype) {
  case MGPU_PRED: return x != 0;
  case MGPU_I8: return (int8_t)x;
  case MGPU_I16: return (int16_t)x;
  case MGPU_I32: return (int32_t)x;
  case MGPU_U8: return (uint8_t)x;
  case MGPU_U16: return (uint16_t)x;
  case MGPU_U32: return (uint32_t)x;
  default: return x;   /* i64, u64 (u64 kept as its bit pattern) */
  }
}

/* The range of an integer dtype narrower than 64 bits. */
static void int_range(int dtype, int64_t *lo, int64_t *hi) {
  unsigned bits = dt_table[dtype].bits;
  *lo = dt_issigned(dtype) ? -(INT64_C(1) << (bits - 1)) : 0;
  *hi = dt_issigned(dtype) ? (INT64_C(1) << (bits - 1)) - 1 : (INT64_C(1) << bits) - 1;
}

bool dt_int_fits(int dtype, int64_t x) {
  if (dtype == MGPU_PRED || dt_bytes(dtype) == 8) return true;
  int64_t lo, hi;
  int_range(dtype, &lo, &hi);
  return x >= lo && x <= hi;
}

void dt_range_str(int dtype, char *out, size_t n) {
  int64_t lo, hi;
  if (dtype == MGPU_I64) snprintf(out, n, "i64 holds integers from -2^63 to 2^63 - 1");
  else if (dtype == MGPU_U64) snprintf(out, n, "u64 holds integers from 0 to 2^64 - 1");
  else if (dtype == MGPU_PRED || !dt_isint(dtype)) snprintf(out, n, "%s", dt_name(dtype));
  else {
    int_range(dtype, &lo, &hi);
    snprintf(out, n, "%s holds integers from %lld to %lld", dt_name(dtype), (long long)lo, (long long)hi);
  }
}

const char *dt_misfit(int dtype, double x) {
  if (!dt_isint(dtype)) return NULL;
  if (isnan(x) || (!isinf(x) && x != floor(x))) return "not an integer";
  unsigned bits = dt_table[dtype].bits;
  double lo = dt_issigned(dtype) ? -ldexp(1, (int)bits - 1) : 0;
  double hi = ldexp(1, dt_issigned(dtype) ? (int)bits - 1 : (int)bits);   /* exclusive */
  return x >= lo && x < hi ? NULL : "out of range";
}

void dt_num_str(double x, char *out, size_t n) {
  /* the shortest of 15-17 digits that reads back as x, found in a buffer of our own (gcc's
  ** -fsanitize=null with -O2 otherwise sees a path where out is null after strtod's check) */
  char buf[32] = "nan";   /* (a NaN's sign bit means nothing) */
  for (int prec = 15; !isnan(x) && prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (strtod(buf, NULL) == x) break;
  }
  snprintf(out, n, "%s", buf);
}

/* Convert a double to an integer dtype the way cvt.rzi.sat does: truncate,
** saturate to the range, NaN -> 0. */
static int64_t float_to_int(int dtype, double x) {
  if (isnan(x)) return 0;
  x = trunc(x);
  double lo, hi;
  switch (dtype) {
  case MGPU_PRED: return x != 0;
  case MGPU_I8: lo = -128; hi = 127; break;
  case MGPU_I16: lo = -32768; hi = 32767; break;
  case MGPU_I32: lo = -2147483648.0; hi = 2147483647.0; break;
  case MGPU_I64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
  case MGPU_U8: lo = 0; hi = 255; break;
  case MGPU_U16: lo = 0; hi = 65535; break;
  case MGPU_U32: lo = 0; hi = 4294967295.0; break;
  default: lo = 0; hi = 18446744073709551615.0; break;
  }
  if (x <= lo) return dtype == MGPU_I64 ? INT64_MIN : (int64_t)lo;
  if (x >= hi) {
    if (dtype == MGPU_I64) return INT64_MAX;
    if (dtype == MGPU_U64) return (int64_t)UINT64_MAX;
    return (int64_t)hi;
  }
  if (dtype == MGPU_U64) return (int64_t)(uint64_t)x;
  return (int64_t)x;
}

double dt_round(int dtype, double x) {
  switch (dtype) {
  case MGPU_F64: return x;
  case MGPU_F32: return (double)(float)x;
  default: break;
  }
  const fmt *f = fmt_of(dtype);
  if (f) return fmt_round(f, x);
  int64_t i = float_to_int(dtype, x);
  return dtype == MGPU_U64 ? (double)(uint64_t)i : (double)i;
}

void dt_store(int dtype, void *dst, double x) {
  switch (dtype) {
  case MGPU_F64: memcpy(dst, &x, 8); return;
  case MGPU_F32: { float f = (float)x; memcpy(dst, &f, 4); return; }
  case MGPU_F16: case MGPU_BF16: { uint16_t h = (uint16_t)fmt_encode(fmt_of(dtype), x); memcpy(dst, &h, 2); return; }
  case MGPU_F8E4M3: case MGPU_F8E5M2: *(uint8_t *)dst = (uint8_t)fmt_encode(fmt_of(dtype), x); return;
  default: dt_store_int(dtype, dst, float_to_int(dtype, x)); return;
  }
}

/* NaNs come back as the one canonical quiet NaN: payloads mean nothing to
** callers, and LuaJIT reads some payloads (e.g. a widened f32 0xffffffff)
** as tagged values rather than numbers. */
static double canon(double x) { return isnan(x) ? NAN : x; }

double dt_load(int dtype, const void *src) {
  switch (dtype) {
  case MGPU_F64: { double d; memcpy(&d, src, 8); return canon(d); }
  case MGPU_F32: { float f; memcpy(&f, src, 4); return canon(f); }
  case MGPU_F16: case MGPU_BF16: { uint16_t h; memcpy(&h, src, 2); return fmt_decode(fmt_of(dtype), h); }
  case MGPU_F8E4M3: case MGPU_F8E5M2: return fmt_decode(fmt_of(dtype), *(const uint8_t *)src);
  case MGPU_U64: return (double)(uint64_t)dt_load_int(dtype, src);
  default: return (double)dt_load_int(dtype, src);
  }
}

void dt_store_int(int dtype, void *dst, int64_t x) {
  switch (dt_bytes(dtype)) {
  case 1: { uint8_t v = (uint8_t)x; memcpy(dst, &v, 1); return; }
  case 2: { uint16_t v = (uint16_t)x; memcpy(dst, &v, 2); return; }
  case 4: { uint32_t v = (uint32_t)x; memcpy(dst, &v, 4); return; }
  default: memcpy(dst, &x, 8); return;
  }
}

int64_t dt_load_int(int dtype, const void *src) {
  switch (dtype) {
  case MGPU_PRED: return *(const uint8_t *)src != 0;
  case MGPU_I8: return *(const int8_t *)src;
  case MGPU_U8: return *(const uint8_t *)src;
  case MGPU_I16: { int16_t v; memcpy(&v, src, 2); return v; }
  case MGPU_U16: { uint16_t v; memcpy(&v, src, 2); return v; }
  case MGPU_I32: { int32_t v; memcpy(&v, src, 4); return v; }
  case MGPU_U32: { uint32_t v; memcpy(&v, src, 4); return v; }
  default: { int64_t v; memcpy(&v, src, 8); return v; }
  }
}
