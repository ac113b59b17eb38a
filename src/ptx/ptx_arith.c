/*
** ptx_arith.c -- constants, elementwise math and conversions, one element
** at a time.  f16 and bf16 are computed in f32 and rounded once per op
** (exactly the interpreter's result for + - * / sqrt); accurate exp, log
** and tanh use range reduction so approx_math=false stays within a few ulp
** (sin, cos, erf, expm1, log1p, logistic and pow: ptx_math.c; every one of
** these for f64: ptx_math64.c, also under approx_math).  round,
** round_away, trunc, sign, floor, ceil, max and min are exact; max/min
** return NaN when either operand is NaN (max.NaN; f64 through testp).
**
** Subnormals and specials: the accurate forms keep f32 subnormal inputs and
** results (log scales a subnormal input by 2^23 first; exp builds 2^n in two
** halves so results down to 2^-149 round once), +-0 (tanh(-0) = -0, log(+-0)
** = -inf, rsqrt(-0) = -inf), +-inf and NaN as C99 does.  approx_math: exp,
** exp2, log and log2 are ex2.approx.ftz / lg2.approx.ftz, which flush f32
** subnormal inputs and results to zero (exp results below 2^-126 are 0, log
** of a subnormal is -inf; the interpreter does the same under approx_math);
** sqrt.approx, rsqrt.approx and tanh.approx keep subnormals.  Relative
** error there: ex2/lg2/sqrt/rsqrt about 2^-22 (exp adds |x| 2^-24 from
** rounding x log2(e); log's error is absolute near 1), tanh 2^-16.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ptx.h"

#define LOG2E 1.4426950408889634
#define LN2 0.6931471805599453

static const char *sfx(int dt) { return dt_table[dt].ptx; }

static void op2(pe *e, const char *opc, int dt, preg d, preg a) {
  char s[48];
  snprintf(s, sizeof s, "%s.%s", opc, sfx(dt));
  pe_ins(e, s, 2, R(d), R(a));
}

static void op3(pe *e, const char *opc, int dt, preg d, preg a, preg b) {
  char s[48];
  snprintf(s, sizeof s, "%s.%s", opc, sfx(dt));
  pe_ins(e, s, 3, R(d), R(a), R(b));
}

/* -- Constants and moves ---------------------------------------------------------- */

static void mov_const(pe *e, int dt, preg d, double x) {
  char s[32];
  switch (dt) {
  case MGPU_PRED: pe_ins(e, x != 0 ? "setp.eq.u32" : "setp.ne.u32", 3, R(d), I(0), I(0)); return;
  case MGPU_F32: pe_ins(e, "mov.f32", 2, R(d), F32(x)); return;
  case MGPU_F64: pe_ins(e, "mov.f64", 2, R(d), F64(x)); return;
  case MGPU_F16: case MGPU_BF16: {
    unsigned char raw[2];
    dt_store(dt, raw, x);
    snprintf(s, sizeof s, "0x%02X%02X", raw[1], raw[0]);
    pe_ins(e, "mov.b16", 2, R(d), S(s));
    return;
  }
  case MGPU_F8E4M3: case MGPU_F8E5M2: {
    unsigned char raw;
    dt_store(dt, &raw, x);
    pe_ins(e, "mov.b32", 2, R(d), I(raw));
    return;
  }
  case MGPU_I64: pe_ins(e, "mov.s64", 2, R(d), I((int64_t)x)); return;
  case MGPU_U64: pe_ins(e, "mov.u64", 2, R(d), U(x >= 9223372036854775808.0 ? (uint64_t)x : (uint64_t)(int64_t)x)); return;
  default: pe_ins(e, "mov.s32", 2, R(d), I(dt_wrap_int(dt, (int64_t)x))); return;
  }
}

void ptx_const(pe *e, const ir_op *op) {
  mov_const(e, (int)ir_ints(e->k, op)[0], pe_vreg(e, op->res), op->num);
}

static const char *mov_type(int dt) {
  switch (pe_cls(dt)) {
  case PR_P: return "mov.pred";
  case PR_H: return "mov.b16";
  case PR_F: return "mov.f32";
  case PR_FD: return "mov.f64";
  case PR_RD: return "mov.b64";
  default: return "mov.b32";
  }
}

void ptx_move(pe *e, int dtype, preg dst, preg src, uint32_t n, bool src_scalar) {
  const char *m = mov_type(dtype);
  for (uint32_t j = 0; j < n; j++) pe_ins(e, m, 2, R(dst + j), R(src_scalar ? src : src + j));
}

void ptx_broadcast(pe *e, const ir_op *op) {
  uint32_t src = ir_opds(e->k, op)[0];
  ptx_move(e, ir_vtype(e->k, src)->dtype, pe_vreg(e, op->res), pe_vreg(e, src), pe_nregs(e, op->res), true);
}

/* -- f16/bf16 through f32 ----------------------------------------------------------- */

static preg up(pe *e, int dt, preg a) {
  if (dt == MGPU_F32) return a;
  preg f = pe_reg(e, PR_F);
  pe_ins(e, dt == MGPU_BF16 ? "cvt.f32.bf16" : "cvt.f32.f16", 2, R(f), R(a));
  return f;
}

static void down(pe *e, int dt, preg d, preg f) {
  if (dt == MGPU_F32) { if (d != f) pe_ins(e, "mov.f32", 2, R(d), R(f)); return; }
  pe_ins(e, dt == MGPU_BF16 ? "cvt.rn.bf16.f32" : "cvt.rn.f16.f32", 2, R(d), R(f));
}

/* -- Accurate f32 functions ------------------------------------------------------------ */

/* d = e^x (or 2^x when base2): x = n*ln2 + r with |r| <= ln2/2, 2^n * 2^(r*log2e). */
static void f32_exp(pe *e, preg d, preg a, bool base2, bool approx) {
  preg t = pe_reg(e, PR_F);
  if (approx) {
    if (base2) pe_ins(e, "ex2.approx.ftz.f32", 2, R(d), R(a));
    else {
      pe_ins(e, "mul.f32", 3, R(t), R(a), F32(LOG2E));
      pe_ins(e, "ex2.approx.ftz.f32", 2, R(d), R(t));
    }
    return;
  }
  preg x = pe_reg(e, PR_F), n = pe_reg(e, PR_F), r = pe_reg(e, PR_F), m = pe_reg(e, PR_F), s = pe_reg(e, PR_F);
  /* clamp keeps inf/-inf out of the reduction; NaN passes through */
  pe_ins(e, "max.NaN.f32", 3, R(x), R(a), F32(base2 ? -152.0 : -105.0));
  pe_ins(e, "min.NaN.f32", 3, R(x), R(x), F32(base2 ? 130.0 : 90.0));
  if (base2) {
    pe_ins(e, "cvt.rni.f32.f32", 2, R(n), R(x));
    pe_ins(e, "sub.rn.f32", 3, R(r), R(x), R(n));
  } else {
    pe_ins(e, "mul.rn.f32", 3, R(t), R(x), F32(LOG2E));
    pe_ins(e, "cvt.rni.f32.f32", 2, R(n), R(t));
    pe_ins(e, "fma.rn.f32", 4, R(r), R(n), F32(-0.693145751953125), R(x));
    pe_ins(e, "fma.rn.f32", 4, R(r), R(n), F32(-1.428606765330187e-06), R(r));
    pe_ins(e, "mul.rn.f32", 3, R(r), R(r), F32(LOG2E));
  }
  /* |r| <= 1/2: flushing a subnormal r gives 2^0, the same f32 result */
  pe_ins(e, "ex2.approx.ftz.f32", 2, R(m), R(r));
  /* 2^n in two halves so that n down to -150 stays representable before the product */
  preg h = pe_reg(e, PR_F), s2 = pe_reg(e, PR_F);
  pe_ins(e, "mul.rn.f32", 3, R(h), R(n), F32(0.5));
  pe_ins(e, "cvt.rmi.f32.f32", 2, R(h), R(h));
  pe_ins(e, "sub.rn.f32", 3, R(t), R(n), R(h));
  pe_ins(e, "ex2.approx.f32", 2, R(s), R(h));
  pe_ins(e, "ex2.approx.f32", 2, R(s2), R(t));
  pe_ins(e, "mul.rn.f32", 3, R(m), R(m), R(s));
  pe_ins(e, "mul.rn.f32", 3, R(d), R(m), R(s2));
}

/* d = ln(x), or log2(x): x = 2^k * m with m in [sqrt(1/2), sqrt(2)),
** ln(m) = 2 atanh(f / (2 + f)) with f = m - 1, by its odd series. */
static void f32_log(pe *e, preg d, preg a, bool base2, bool approx) {
  if (approx) {
    pe_ins(e, "lg2.approx.ftz.f32", 2, R(d), R(a));
    if (!base2) pe_ins(e, "mul.f32", 3, R(d), R(d), F32(LN2));
    return;
  }
  preg psub = pe_reg(e, PR_P), ax = pe_reg(e, PR_F), t = pe_reg(e, PR_F);
  preg ib = pe_reg(e, PR_R), ki = pe_reg(e, PR_R), adj = pe_reg(e, PR_R), mb = pe_reg(e, PR_R);
  pe_ins(e, "setp.lt.f32", 3, R(psub), R(a), F32(1.1754943508222875e-38));
  pe_ins(e, "mul.rn.f32", 3, R(t), R(a), F32(8388608.0));
  pe_ins(e, "selp.f32", 4, R(ax), R(t), R(a), R(psub));
  pe_ins(e, "selp.s32", 4, R(adj), I(-23), I(0), R(psub));
  pe_ins(e, "mov.b32", 2, R(ib), R(ax));
  pe_ins(e, "sub.s32", 3, R(ib), R(ib), I(0x3f3504f3));
  pe_ins(e, "shr.s32", 3, R(ki), R(ib), I(23));
  pe_ins(e, "add.s32", 3, R(ki), R(ki), R(adj));
  pe_ins(e, "and.b32", 3, R(mb), R(ib), I(0x007fffff));
  pe_ins(e, "add.s32", 3, R(mb), R(mb), I(0x3f3504f3));
  preg m = pe_reg(e, PR_F), f = pe_reg(e, PR_F), den = pe_reg(e, PR_F), s = pe_reg(e, PR_F), z = pe_reg(e, PR_F);
  preg p = pe_reg(e, PR_F), kf = pe_reg(e, PR_F), lo = pe_reg(e, PR_F);
  pe_ins(e, "mov.b32", 2, R(m), R(mb));
  pe_ins(e, "sub.rn.f32", 3, R(f), R(m), F32(1.0));
  pe_ins(e, "add.rn.f32", 3, R(den), R(f), F32(2.0));
  pe_ins(e, "div.rn.f32", 3, R(s), R(f), R(den));
  pe_ins(e, "mul.rn.f32", 3, R(z), R(s), R(s));
  pe_ins(e, "fma.rn.f32", 4, R(p), R(z), F32(1.0 / 9), F32(1.0 / 7));
  pe_ins(e, "fma.rn.f32", 4, R(p), R(p), R(z), F32(1.0 / 5));
  pe_ins(e, "fma.rn.f32", 4, R(p), R(p), R(z), F32(1.0 / 3));
  pe_ins(e, "mul.rn.f32", 3, R(p), R(p), R(z));
  pe_ins(e, "add.rn.f32", 3, R(t), R(s), R(s));
  pe_ins(e, "fma.rn.f32", 4, R(lo), R(t), R(p), R(t));          /* ln(m) = 2s(1 + p) */
  pe_ins(e, "cvt.rn.f32.s32", 2, R(kf), R(ki));
  if (base2) {
    pe_ins(e, "mul.rn.f32", 3, R(lo), R(lo), F32(LOG2E));
    pe_ins(e, "add.rn.f32", 3, R(t), R(kf), R(lo));
  } else {
    pe_ins(e, "fma.rn.f32", 4, R(t), R(kf), F32(0.693145751953125), R(lo));
    pe_ins(e, "fma.rn.f32", 4, R(t), R(kf), F32(1.428606765330187e-06), R(t));
  }
  /* 0 -> -inf, inf -> inf, negative or NaN -> NaN: what lg2.approx gives */
  preg sp = pe_reg(e, PR_F), ok = pe_reg(e, PR_P), fin = pe_reg(e, PR_P);
  pe_ins(e, "lg2.approx.f32", 2, R(sp), R(a));
  pe_ins(e, "setp.gt.f32", 3, R(ok), R(a), F32(0.0));
  pe_ins(e, "setp.lt.f32", 3, R(fin), R(a), F32(INFINITY));
  pe_ins(e, "and.pred", 3, R(ok), R(ok), R(fin));
  pe_ins(e, "selp.f32", 4, R(d), R(t), R(sp), R(ok));
}

/* d = tanh(x): odd polynomial below |x| = 0.625, (1 - e^-2|x|) / (1 + e^-2|x|) above. */
static void f32_tanh(pe *e, preg d, preg a, bool approx) {
  if (approx) { pe_ins(e, "tanh.approx.f32", 2, R(d), R(a)); return; }
  preg ax = pe_reg(e, PR_F), t = pe_reg(e, PR_F), num = pe_reg(e, PR_F), den = pe_reg(e, PR_F), big = pe_reg(e, PR_F);
  pe_ins(e, "abs.f32", 2, R(ax), R(a));
  pe_ins(e, "mul.rn.f32", 3, R(t), R(ax), F32(-2.0));
  f32_exp(e, t, t, false, false);
  pe_ins(e, "sub.rn.f32", 3, R(num), F32(1.0), R(t));
  pe_ins(e, "add.rn.f32", 3, R(den), F32(1.0), R(t));
  pe_ins(e, "div.rn.f32", 3, R(big), R(num), R(den));
  pe_ins(e, "copysign.f32", 3, R(big), R(a), R(big));
  preg z = pe_reg(e, PR_F), p = pe_reg(e, PR_F), small = pe_reg(e, PR_F), ps = pe_reg(e, PR_P);
  pe_ins(e, "mul.rn.f32", 3, R(z), R(a), R(a));
  pe_ins(e, "fma.rn.f32", 4, R(p), R(z), F32(-5.70498872745e-3), F32(2.06390887954e-2));
  pe_ins(e, "fma.rn.f32", 4, R(p), R(p), R(z), F32(-5.37397155531e-2));
  pe_ins(e, "fma.rn.f32", 4, R(p), R(p), R(z), F32(1.33314422036e-1));
  pe_ins(e, "fma.rn.f32", 4, R(p), R(p), R(z), F32(-3.33332819422e-1));
  pe_ins(e, "mul.rn.f32", 3, R(p), R(p), R(z));
  pe_ins(e, "fma.rn.f32", 4, R(small), R(a), R(p), R(a));
  /* a(1 + p) has a's sign; the fma alone gives (-0)(-0) + -0 = +0 at a = -0 */
  pe_ins(e, "copysign.f32", 3, R(small), R(a), R(small));
  pe_ins(e, "setp.lt.f32", 3, R(ps), R(ax), F32(0.625));
  pe_ins(e, "selp.f32", 4, R(d), R(small), R(big), R(ps));
}

/* round half away from zero, sign (+-1, zeros and NaN kept), in f32 or f64 (exact) */
static void round_away(pe *e, bool wide, preg d, preg x) {
  const char *t = wide ? "f64" : "f32";
  char opc[32];
  int c = wide ? PR_FD : PR_F;
  preg tr = pe_reg(e, c), df = pe_reg(e, c), one = pe_reg(e, c), far = pe_reg(e, PR_P);
  snprintf(opc, sizeof opc, "cvt.rzi.%s.%s", t, t);
  pe_ins(e, opc, 2, R(tr), R(x));
  op3(e, "sub.rn", wide ? MGPU_F64 : MGPU_F32, df, x, tr);             /* exact */
  op2(e, "abs", wide ? MGPU_F64 : MGPU_F32, df, df);
  snprintf(opc, sizeof opc, "setp.ge.%s", t);
  pe_ins(e, opc, 3, R(far), R(df), wide ? F64(0.5) : F32(0.5));
  snprintf(opc, sizeof opc, "mov.%s", t);
  pe_ins(e, opc, 2, R(one), wide ? F64(1.0) : F32(1.0));
  op3(e, "copysign", wide ? MGPU_F64 : MGPU_F32, one, x, one);
  op3(e, "add.rn", wide ? MGPU_F64 : MGPU_F32, one, tr, one);
  snprintf(opc, sizeof opc, "selp.%s", t);
  pe_ins(e, opc, 4, R(d), R(one), R(tr), R(far));
}

static void float_sign(pe *e, bool wide, preg d, preg x) {
  const char *t = wide ? "f64" : "f32";
  char opc[32];
  preg one = pe_reg(e, wide ? PR_FD : PR_F), keep = pe_reg(e, PR_P);
  snprintf(opc, sizeof opc, "mov.%s", t);
  pe_ins(e, opc, 2, R(one), wide ? F64(1.0) : F32(1.0));
  op3(e, "copysign", wide ? MGPU_F64 : MGPU_F32, one, x, one);
  snprintf(opc, sizeof opc, "setp.equ.%s", t);                           /* zero or NaN */
  pe_ins(e, opc, 3, R(keep), R(x), wide ? F64(0.0) : F32(0.0));
  snprintf(opc, sizeof opc, "selp.%s", t);
  pe_ins(e, opc, 4, R(d), R(x), R(one), R(keep));
}

/* -- Elementwise ops on one element ---------------------------------------------------------- */

void ptx_float_unary(pe *e, int code, int dt, preg d, preg a, bool approx) {
  if (dt == MGPU_F64) {
    switch (code) {
    case IR_round: pe_ins(e, "cvt.rni.f64.f64", 2, R(d), R(a)); return;
    case IR_trunc: pe_ins(e, "cvt.rzi.f64.f64", 2, R(d), R(a)); return;
    case IR_round_away: round_away(e, true, d, a); return;
    case IR_sign: float_sign(e, true, d, a); return;
    case IR_neg: op2(e, "neg", dt, d, a); return;
    case IR_abs: op2(e, "abs", dt, d, a); return;
    case IR_sqrt: op2(e, "sqrt.rn", dt, d, a); return;
    case IR_rsqrt: op2(e, "sqrt.rn", dt, d, a); op2(e, "rcp.rn", dt, d, d); return;
    case IR_floor: pe_ins(e, "cvt.rmi.f64.f64", 2, R(d), R(a)); return;
    case IR_ceil: pe_ins(e, "cvt.rpi.f64.f64", 2, R(d), R(a)); return;
    default:
      if (!ptx_math64_unary(e, code, d, a)) pe_fail(e, "unexpected f64 unary op");
      return;
    }
  }
  preg x = up(e, dt, a);
  preg r = dt == MGPU_F32 ? d : pe_reg(e, PR_F);
  switch (code) {
  case IR_neg: pe_ins(e, "neg.f32", 2, R(r), R(x)); break;
  case IR_abs: pe_ins(e, "abs.f32", 2, R(r), R(x)); break;
  case IR_exp: f32_exp(e, r, x, false, approx); break;
  case IR_exp2: f32_exp(e, r, x, true, approx); break;
  case IR_log: f32_log(e, r, x, false, approx); break;
  case IR_log2: f32_log(e, r, x, true, approx); break;
  case IR_sqrt: pe_ins(e, approx ? "sqrt.approx.f32" : "sqrt.rn.f32", 2, R(r), R(x)); break;
  case IR_rsqrt:
    if (approx) pe_ins(e, "rsqrt.approx.f32", 2, R(r), R(x));
    else { pe_ins(e, "sqrt.rn.f32", 2, R(r), R(x)); pe_ins(e, "rcp.rn.f32", 2, R(r), R(r)); }
    break;
  case IR_tanh: f32_tanh(e, r, x, approx); break;
  case IR_floor: pe_ins(e, "cvt.rmi.f32.f32", 2, R(r), R(x)); break;
  case IR_ceil: pe_ins(e, "cvt.rpi.f32.f32", 2, R(r), R(x)); break;
  case IR_round: pe_ins(e, "cvt.rni.f32.f32", 2, R(r), R(x)); break;
  case IR_trunc: pe_ins(e, "cvt.rzi.f32.f32", 2, R(r), R(x)); break;
  case IR_round_away: round_away(e, false, r, x); break;
  case IR_sign: float_sign(e, false, r, x); break;
  default:
    if (!ptx_math_unary(e, code, r, x, approx)) pe_fail(e, "unexpected unary op");
  }
  down(e, dt, d, r);
}

void ptx_float_binary(pe *e, int code, int dt, preg d, preg a, preg b, bool approx) {
  bool wide = dt == MGPU_F64;
  preg x = wide ? a : up(e, dt, a), y = wide ? b : up(e, dt, b);
  int cdt = wide ? MGPU_F64 : MGPU_F32;
  preg r = (dt == cdt) ? d : pe_reg(e, PR_F);
  const char *rn = approx && !wide ? "" : ".rn";
  char opc[32];
  switch (code) {
  case IR_add: case IR_sub: case IR_mul:
    snprintf(opc, sizeof opc, "%s%s.%s", code == IR_add ? "add" : code == IR_sub ? "sub" : "mul", rn, sfx(cdt));
    pe_ins(e, opc, 3, R(r), R(x), R(y));
    break;
  case IR_div:
    op3(e, approx && !wide ? "div.full" : "div.rn", cdt, r, x, y);
    break;
  case IR_rem: {   /* x - trunc(x / y) * y, fused */
    preg q = pe_reg(e, pe_cls(cdt));
    op3(e, "div.rn", cdt, q, x, y);
    snprintf(opc, sizeof opc, "cvt.rzi.%s.%s", sfx(cdt), sfx(cdt));
    pe_ins(e, opc, 2, R(q), R(q));
    op2(e, "neg", cdt, q, q);
    snprintf(opc, sizeof opc, "fma.rn.%s", sfx(cdt));
    pe_ins(e, opc, 4, R(r), R(q), R(y), R(x));
    break;
  }
  case IR_max: case IR_min:
    op3(e, code == IR_max ? (wide ? "max" : "max.NaN") : (wide ? "min" : "min.NaN"), cdt, r, x, y);
    if (wide) {   /* max.f64 ignores NaN operands; the result must be NaN */
      preg nan = pe_reg(e, PR_P);
      pe_ins(e, "testp.notanumber.f64", 2, R(nan), R(x));
      pe_ins(e, "selp.f64", 4, R(r), R(x), R(r), R(nan));
      pe_ins(e, "testp.notanumber.f64", 2, R(nan), R(y));
      pe_ins(e, "selp.f64", 4, R(r), R(y), R(r), R(nan));
    }
    break;
  case IR_pow:
    if (wide) ptx_math64_pow(e, r, x, y);
    else ptx_math_pow(e, r, x, y, approx);
    break;
  default: pe_fail(e, "unexpected binary op");
  }
  if (!wide) down(e, dt, d, r);
}

/* Re-normalise an 8/16-bit integer held in a b32 register. */
static void wrap_narrow(pe *e, int dt, preg d) {
  switch (dt) {
  case MGPU_I8: pe_ins(e, "cvt.s32.s8", 2, R(d), R(d)); break;
  case MGPU_I16: pe_ins(e, "cvt.s32.s16", 2, R(d), R(d)); break;
  case MGPU_U8: pe_ins(e, "and.b32", 3, R(d), R(d), I(0xff)); break;
  case MGPU_U16: pe_ins(e, "and.b32", 3, R(d), R(d), I(0xffff)); break;
  default: break;
  }
}

/* The 32/64-bit PTX type an integer dtype computes in. */
static const char *int_sfx(int dt) {
  if (dt == MGPU_I64) return "s64";
  if (dt == MGPU_U64) return "u64";
  return dt_issigned(dt) ? "s32" : "u32";
}

static const char *int_bits(int dt) { return pe_cls(dt) == PR_RD ? "b64" : "b32"; }

static void int_unary(pe *e, int code, int dt, preg d, preg a) {
  char opc[32];
  if (dt == MGPU_PRED) { pe_ins(e, "not.pred", 2, R(d), R(a)); return; }
  bool wide = pe_cls(dt) == PR_RD;
  int bits = dt_table[dt].bits;
  switch (code) {
  case IR_clz: case IR_popcount: {   /* of the dtype's own bits; the count is a u32 */
    preg v = a, n = wide ? pe_reg(e, PR_R) : d;
    if (dt == MGPU_I8 || dt == MGPU_I16) {
      v = pe_reg(e, PR_R);
      pe_ins(e, "and.b32", 3, R(v), R(a), I(dt == MGPU_I8 ? 0xff : 0xffff));
    }
    snprintf(opc, sizeof opc, "%s.%s", code == IR_clz ? "clz" : "popc", int_bits(dt));
    pe_ins(e, opc, 2, R(n), R(v));
    if (code == IR_clz && bits < 32) pe_ins(e, "sub.s32", 3, R(n), R(n), I(32 - bits));
    if (wide) pe_ins(e, "cvt.u64.u32", 2, R(d), R(n));
    return;
  }
  case IR_sign: {
    preg gt = pe_reg(e, PR_P), lt = pe_reg(e, PR_P);
    const char *sel = wide ? "selp.b64" : "selp.b32";
    if (!dt_issigned(dt)) {
      snprintf(opc, sizeof opc, "setp.ne.%s", int_sfx(dt));
      pe_ins(e, opc, 3, R(gt), R(a), I(0));
      pe_ins(e, sel, 4, R(d), I(1), I(0), R(gt));
      return;
    }
    snprintf(opc, sizeof opc, "setp.gt.%s", int_sfx(dt));
    pe_ins(e, opc, 3, R(gt), R(a), I(0));
    snprintf(opc, sizeof opc, "setp.lt.%s", int_sfx(dt));
    pe_ins(e, opc, 3, R(lt), R(a), I(0));
    pe_ins(e, sel, 4, R(d), I(1), I(0), R(gt));
    pe_ins(e, sel, 4, R(d), I(-1), R(d), R(lt));
    return;
  }
  case IR_neg: snprintf(opc, sizeof opc, "neg.%s", int_sfx(dt)); break;
  case IR_abs: snprintf(opc, sizeof opc, "abs.%s", int_sfx(dt)); break;
  default: snprintf(opc, sizeof opc, "not.%s", int_bits(dt)); break;
  }
  pe_ins(e, opc, 2, R(d), R(a));
  wrap_narrow(e, dt, d);
}

/* d = a op b; imm (when not NULL) is b's value, a constant, which goes into
** the instruction as an immediate (a division or remainder by one becomes
** pe_divrem_const). */
static void int_binary(pe *e, int code, int dt, preg d, preg a, preg b, const int64_t *imm) {
  char opc[32];
  if (imm && (code == IR_div || code == IR_rem) && (dt == MGPU_I32 || dt == MGPU_U32) && *imm >= 2 &&
      (dt == MGPU_U32 || *imm <= INT32_MAX)) {
    pe_divrem_const(e, code == IR_rem, dt == MGPU_I32, d, a, *imm);
    return;
  }
  if (dt == MGPU_PRED) {
    snprintf(opc, sizeof opc, "%s.pred", code == IR_and ? "and" : code == IR_or ? "or" : "xor");
    pe_ins(e, opc, 3, R(d), R(a), R(b));
    return;
  }
  const char *t = int_sfx(dt), *bits = int_bits(dt);
  switch (code) {
  case IR_add: snprintf(opc, sizeof opc, "add.%s", t); break;
  case IR_sub: snprintf(opc, sizeof opc, "sub.%s", t); break;
  case IR_mul: snprintf(opc, sizeof opc, "mul.lo.%s", t); break;
  case IR_div: snprintf(opc, sizeof opc, "div.%s", t); break;
  case IR_rem: snprintf(opc, sizeof opc, "rem.%s", t); break;
  case IR_max: snprintf(opc, sizeof opc, "max.%s", t); break;
  case IR_min: snprintf(opc, sizeof opc, "min.%s", t); break;
  case IR_and: snprintf(opc, sizeof opc, "and.%s", bits); break;
  case IR_or: snprintf(opc, sizeof opc, "or.%s", bits); break;
  case IR_xor: snprintf(opc, sizeof opc, "xor.%s", bits); break;
  case IR_shl: case IR_shr: {
    preg amt = b;
    if (pe_cls(dt) == PR_RD) {   /* shift amounts are u32; clamp before truncating */
      preg c = pe_reg(e, PR_RD);
      amt = pe_reg(e, PR_R);
      pe_ins(e, "min.u64", 3, R(c), R(b), I(64));
      pe_ins(e, "cvt.u32.u64", 2, R(amt), R(c));
    }
    if (code == IR_shl) snprintf(opc, sizeof opc, "shl.%s", bits);
    else snprintf(opc, sizeof opc, "shr.%s", t);
    pe_ins(e, opc, 3, R(d), R(a), R(amt));
    wrap_narrow(e, dt, d);
    return;
  }
  default: pe_fail(e, "unexpected integer op");
  }
  pe_ins(e, opc, 3, R(d), R(a), imm ? I(*imm) : R(b));
  if (code != IR_max && code != IR_min) wrap_narrow(e, dt, d);
}

/* A scalar integer constant's value (wrapped to its dtype). */
static bool const_int(const pe *e, uint32_t v, int64_t *out) {
  const ir_kernel *k = e->k;
  int32_t def = k->vals.v[v].def;
  if (def < 0 || (k->vals.v[v].flags & IRV_ARG) || k->ops.v[def].code != IR_const) return false;
  int dt = ir_vtype(k, v)->dtype;
  if (dt_isfloat(dt) || dt == MGPU_PRED || dt == MGPU_U64) return false;
  *out = dt == MGPU_I64 ? (int64_t)k->ops.v[def].num : dt_wrap_int(dt, (int64_t)k->ops.v[def].num);
  return true;
}

static void compare(pe *e, int code, int dt, preg d, preg a, preg b) {
  static const char *const fname[] = { "lt", "le", "gt", "ge", "eq", "neu" };
  static const char *const iname[] = { "lt", "le", "gt", "ge", "eq", "ne" };
  int c = code - IR_lt;
  char opc[32];
  if (dt == MGPU_PRED) {
    preg t = pe_reg(e, PR_P);
    if (code != IR_eq && code != IR_ne) pe_fail(e, "ordering comparisons of preds are not supported; use and/or/not");
    pe_ins(e, "xor.pred", 3, R(t), R(a), R(b));
    if (code == IR_eq) pe_ins(e, "not.pred", 2, R(d), R(t));
    else pe_ins(e, "mov.pred", 2, R(d), R(t));
    return;
  }
  if (dt_isfloat(dt)) {
    bool wide = dt == MGPU_F64;
    preg x = wide ? a : up(e, dt, a), y = wide ? b : up(e, dt, b);
    snprintf(opc, sizeof opc, "setp.%s.%s", fname[c], wide ? "f64" : "f32");
    pe_ins(e, opc, 3, R(d), R(x), R(y));
    return;
  }
  snprintf(opc, sizeof opc, "setp.%s.%s", iname[c], int_sfx(dt));
  pe_ins(e, opc, 3, R(d), R(a), R(b));
}

static void select_el(pe *e, int dt, preg d, preg c, preg a, preg b) {
  if (dt == MGPU_PRED) {
    preg t1 = pe_reg(e, PR_P), t2 = pe_reg(e, PR_P), nc = pe_reg(e, PR_P);
    pe_ins(e, "and.pred", 3, R(t1), R(c), R(a));
    pe_ins(e, "not.pred", 2, R(nc), R(c));
    pe_ins(e, "and.pred", 3, R(t2), R(nc), R(b));
    pe_ins(e, "or.pred", 3, R(d), R(t1), R(t2));
    return;
  }
  static const char *const sel[PR__COUNT] = { NULL, "selp.b16", "selp.b32", "selp.f32", "selp.b64", "selp.f64" };
  pe_ins(e, sel[pe_cls(dt)], 4, R(d), R(a), R(b), R(c));
}

/* -- Conversions --------------------------------------------------------------------------------- */

static void convert(pe *e, int from, int to, preg d, preg a) {
  char opc[48];
  if (from == to) { ptx_move(e, to, d, a, 1, false); return; }
  if (from == MGPU_PRED) {
    switch (pe_cls(to)) {
    case PR_H: pe_ins(e, "selp.b16", 4, R(d), S(to == MGPU_BF16 ? "0x3F80" : "0x3C00"), S("0x0000"), R(a)); return;
    case PR_F: pe_ins(e, "selp.f32", 4, R(d), F32(1), F32(0), R(a)); return;
    case PR_FD: pe_ins(e, "selp.f64", 4, R(d), F64(1), F64(0), R(a)); return;
    case PR_RD: pe_ins(e, "selp.b64", 4, R(d), I(1), I(0), R(a)); return;
    default: pe_ins(e, "selp.b32", 4, R(d), I(1), I(0), R(a)); return;
    }
  }
  if (to == MGPU_PRED) {
    if (dt_isfloat(from)) {
      bool wide = from == MGPU_F64;
      preg x = wide ? a : up(e, from, a);
      pe_ins(e, wide ? "setp.neu.f64" : "setp.neu.f32", 3, R(d), R(x), wide ? F64(0) : F32(0));
    } else {
      snprintf(opc, sizeof opc, "setp.ne.%s", int_sfx(from));
      pe_ins(e, opc, 3, R(d), R(a), I(0));
    }
    return;
  }
  if (dt_isfloat(from) && dt_isfloat(to)) {
    if (from == MGPU_F64 || to == MGPU_F64) {
      preg x = from == MGPU_F64 ? a : up(e, from, a);
      if (to == MGPU_F64) { pe_ins(e, "cvt.f64.f32", 2, R(d), R(x)); return; }
      preg f = to == MGPU_F32 ? d : pe_reg(e, PR_F);
      pe_ins(e, "cvt.rn.f32.f64", 2, R(f), R(x));
      down(e, to, d, f);
      return;
    }
    down(e, to, d, up(e, from, a));
    return;
  }
  if (dt_isfloat(from)) {   /* float -> int: truncate, saturate, NaN -> 0 */
    preg x = a;
    const char *fs = "f64";
    if (from != MGPU_F64) { x = up(e, from, a); fs = "f32"; }
    snprintf(opc, sizeof opc, "cvt.rzi.%s.%s", int_sfx(to), fs);
    pe_ins(e, opc, 2, R(d), R(x));
    static const int64_t lo[] = { [MGPU_I8] = -128, [MGPU_I16] = -32768, [MGPU_U8] = 0, [MGPU_U16] = 0 };
    static const int64_t hi[] = { [MGPU_I8] = 127, [MGPU_I16] = 32767, [MGPU_U8] = 255, [MGPU_U16] = 65535 };
    if (to == MGPU_I8 || to == MGPU_I16 || to == MGPU_U8 || to == MGPU_U16) {
      snprintf(opc, sizeof opc, "max.%s", int_sfx(to));
      pe_ins(e, opc, 3, R(d), R(d), I(lo[to]));
      snprintf(opc, sizeof opc, "min.%s", int_sfx(to));
      pe_ins(e, opc, 3, R(d), R(d), I(hi[to]));
    }
    return;
  }
  if (dt_isfloat(to)) {   /* int -> float: f32 first for the 16-bit formats */
    if (to == MGPU_F64 || to == MGPU_F32) {
      snprintf(opc, sizeof opc, "cvt.rn.%s.%s", sfx(to), int_sfx(from));
      pe_ins(e, opc, 2, R(d), R(a));
      return;
    }
    preg f = pe_reg(e, PR_F);
    snprintf(opc, sizeof opc, "cvt.rn.f32.%s", int_sfx(from));
    pe_ins(e, opc, 2, R(f), R(a));
    down(e, to, d, f);
    return;
  }
  /* int -> int */
  bool w_from = pe_cls(from) == PR_RD, w_to = pe_cls(to) == PR_RD;
  if (w_to && !w_from) {
    snprintf(opc, sizeof opc, "cvt.%s.%s", int_sfx(to), int_sfx(from));
    pe_ins(e, opc, 2, R(d), R(a));
  } else if (w_from && !w_to) {
    pe_ins(e, "cvt.u32.u64", 2, R(d), R(a));
    wrap_narrow(e, to, d);
  } else {
    pe_ins(e, w_to ? "mov.b64" : "mov.b32", 2, R(d), R(a));
    wrap_narrow(e, to, d);
  }
}

static void bitcast(pe *e, int from, int to, preg d, preg a) {
  int cf = pe_cls(from), ct = pe_cls(to);
  if (cf == ct) { ptx_move(e, to, d, a, 1, false); wrap_narrow(e, to, d); return; }
  if (ct == PR_H) {             /* 16-bit int (b32) -> f16/bf16 */
    preg hi = pe_reg(e, PR_H);
    pe_ins(e, "mov.b32", 2, RV((preg[]){ d, hi }, 2), R(a));
    return;
  }
  if (cf == PR_H) {             /* f16/bf16 -> 16-bit int */
    pe_ins(e, to == MGPU_I16 ? "cvt.s32.s16" : "cvt.u32.u16", 2, R(d), R(a));
    return;
  }
  pe_ins(e, ct == PR_RD || ct == PR_FD ? "mov.b64" : "mov.b32", 2, R(d), R(a));
}

void ptx_binop(pe *e, int code, int dtype, preg d, preg a, preg b) {
  if (dt_isfloat(dtype)) ptx_float_binary(e, code, dtype, d, a, b, false);
  else int_binary(e, code, dtype, d, a, b, NULL);
}

void ptx_elementwise(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  const uint32_t *o = ir_opds(k, op);
  preg d = pe_vreg(e, op->res);
  uint32_t n = pe_nregs(e, op->res);
  bool approx = k->opts.approx_math != 0;
  int cls = ir_optab[op->code].cls;
  int dt = ir_vtype(k, o[cls == IRC_SELECT ? 1 : 0])->dtype;
  preg src[3];
  bool arr[3];
  for (uint32_t j = 0; j < op->nopd; j++) {
    src[j] = pe_vreg(e, o[j]);
    arr[j] = ir_vtype(k, o[j])->kind == MGPU_VALUE_ARRAY;
  }
  uint32_t first = 0;
  int to = cls == IRC_CONVERT ? (int)ir_ints(k, op)[0] : -1;
  int64_t imm;
  bool has_imm = cls == IRC_BINARY && !dt_isfloat(dt) && !arr[1] && const_int(e, o[1], &imm);
  if (op->code == IR_astype && dt == MGPU_F32 && arr[0] && (to == MGPU_BF16 || to == MGPU_F16)) {
    /* two elements per packing cvt (the high half takes the second) */
    for (; first + 1 < n; first += 2) {
      preg w = pe_reg(e, PR_R);
      pe_ins(e, to == MGPU_BF16 ? "cvt.rn.bf16x2.f32" : "cvt.rn.f16x2.f32", 3, R(w), R(src[0] + first + 1), R(src[0] + first));
      pe_ins(e, "mov.b32", 2, RV((preg[]){ d + first, d + first + 1 }, 2), R(w));
    }
  }
  for (uint32_t i = first; i < n; i++) {
    preg a = arr[0] ? src[0] + i : src[0];
    preg b = op->nopd > 1 ? (arr[1] ? src[1] + i : src[1]) : 0;
    switch (cls) {
    case IRC_UNARY:
      if (dt_isfloat(dt)) ptx_float_unary(e, op->code, dt, d + i, a, approx);
      else int_unary(e, op->code, dt, d + i, a);
      break;
    case IRC_BINARY:
      if (dt_isfloat(dt)) ptx_float_binary(e, op->code, dt, d + i, a, b, approx);
      else int_binary(e, op->code, dt, d + i, a, b, has_imm ? &imm : NULL);
      break;
    case IRC_COMPARE: compare(e, op->code, dt, d + i, a, b); break;
    case IRC_SELECT: select_el(e, dt, d + i, a, b, arr[2] ? src[2] + i : src[2]); break;
    case IRC_CONVERT:
      if (op->code == IR_bitcast) bitcast(e, dt, (int)ir_ints(k, op)[0], d + i, a);
      else convert(e, dt, (int)ir_ints(k, op)[0], d + i, a);
      break;
    default: pe_fail(e, "unexpected elementwise op");
    }
  }
}
