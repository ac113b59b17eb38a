/*
** ptx_math64.c -- exp, exp2, log, log2, tanh, sin, cos, erf, logistic,
** expm1, log1p and pow for f64, straight-line code (selects, no branches).
**
** Building blocks: e^x as 2^k (1 + r + t) with Cody-Waite reduction x = k ln2
** + r (r carried as a double plus a correction) and a degree-13 Taylor
** polynomial t of e^r - 1 - r on |r| <= ln2/2; 1 + r + t rounded once, then
** scaled by 2^k in two halves (exact but for a final rounding into the
** subnormals or to inf).  ln u as k ln2 + ln c + 2 atanh((m - c) / (m + c))
** where u = 2^k m and c is the middle of the 32nd of [1/2, 2) holding m (c = 1
** next to 1), carried as a double-double good to about 2^-65 relative, so
** that pow's y ln |x| stays within about 2^-55 even at the overflow threshold.
** sin/cos reduce x * 2/pi exactly for every finite
** x (Payne-Hanek: the 53-bit significand times a 192-bit window of 2/pi
** chosen by the exponent, all in 64-bit integer multiplies; the window is
** selected from immediates), leaving a 128-bit normalised fraction of a
** quadrant; Taylor polynomials to degree 19/20 on [-pi/4, pi/4].  erf:
** |x| < 1 x P(x^2); 1 <= |x| < 6 1 - e^(-x^2) g(x) with g = erfc e^(x^2)
** on [1, 2.5] and [2.5, 6] (Chebyshev fits, tools/fit_poly.c), 1 beyond.
** tanh = -expm1(-2|x|) / (2 + expm1(-2|x|)) with the sign of x; logistic =
** 1 / (1 + e^-x) or e^x / (1 + e^x) (no overflow); both divisions are
** corrected by one residual step.  Constants: tools/gen_math64.py.
**
** Measured error (spec/c/test_ptxmath.c runs this PTX on the CPU against
** long double references, 1e5 fresh inputs per function and run plus special
** and hard cases; the worst over several runs):
**   exp 0.75, exp2 0.76, expm1 0.82, log 0.50, log2 0.50, log1p 0.66,
**   sin 0.72, cos 0.72, pow 0.75 ulp                  (asserted bound: 1 ulp)
**   erf 1.27, logistic 1.40, tanh 1.65 ulp           (asserted bound: 2 ulp)
** Special values follow C99: exp overflow -> inf and underflow -> 0 through
** the subnormals, log(+-0) = -inf, log of a negative -> NaN, log1p(-1) =
** -inf, +-0 kept by sin, tanh, erf, expm1 and log1p, sin/cos(+-inf) = NaN,
** erf(+-inf) = +-1, pow's cases as ptx_math.c's f32 pow, NaN in -> NaN out.
** approx_math has no f64 hardware approximation to use: f64 always takes
** these accurate forms.
*/
#include <math.h>

#include "ptx.h"

#define LN2_CW_HI 0x1.62e42fefa3800p-1
#define LN2_CW_LO 0x1.ef35793c76730p-45
#define LN2_HI 0x1.62e42fefa39efp-1
#define LN2_LO 0x1.abc9e3b39803fp-56
#define PIO2_HI 0x1.921fb54442d18p+0
#define PIO2_LO 0x1.1a62633145c07p-54
#define LOG2E_HI 0x1.71547652b82fep+0
#define LOG2E_LO 0x1.777d0ffda0d24p-56
/* ln c_j (hi, lo), c_j = 1 for j = 0 and 31, else the middle of the j-th 32nd of [1, 2) (j <= 13) or [1/2, 1) */
static const double log_c_hi[32] = {
  0x0.0p+0, 0x1.77458f632dcfcp-5, 0x1.341d7961bd1d1p-4, 0x1.a926d3a4ad563p-4,
  0x1.0d77e7cd08e59p-3, 0x1.44d2b6ccb7d1ep-3, 0x1.7ab890210d909p-3, 0x1.af3c94e80bff3p-3,
  0x1.e27076e2af2e6p-3, 0x1.0a324e27390e3p-2, 0x1.22941fbcf7966p-2, 0x1.3a64c556945eap-2,
  0x1.51aad872df82dp-2, 0x1.686c81e9b14afp-2, -0x1.4718dc271c41bp-2, -0x1.314f1e1d35ce4p-2,
  -0x1.1bf99635a6b95p-2, -0x1.07138604d5862p-2, -0x1.e530effe71012p-3, -0x1.bd087383bd8adp-3,
  -0x1.95a5adcf7017fp-3, -0x1.6f0128b756abcp-3, -0x1.4913d8333b561p-3, -0x1.23d712a49c202p-3,
  -0x1.fe89139dbd566p-4, -0x1.b6ac88dad5b1cp-4, -0x1.700d30aeac0e1p-4, -0x1.2aa04a44717a5p-4,
  -0x1.ccb73cdddb2ccp-5, -0x1.466aed42de3eap-5, -0x1.8492528c8cabfp-6, 0x0.0p+0,
};
static const double log_c_lo[32] = {
  0x0.0p+0, 0x1.18d3ca87b9296p-59, -0x1.b599f227becbbp-58, 0x1.942f48aa70ea9p-58,
  0x1.9a5dc5e9030acp-57, 0x1.9f4f6543e1f88p-57, 0x1.be36b2d6a0608p-59, -0x1.398cff3641985p-58,
  -0x1.61578001e0162p-59, 0x1.7dcfde8061c03p-56, -0x1.76f5eb09628afp-56, -0x1.c68651945f97cp-57,
  0x1.3927ac19f55e3p-59, -0x1.ddea0f7f58e3dp-57, -0x1.8fb4c14c56eefp-60, 0x1.3d69909e5c3dcp-56,
  0x1.12aeb84249223p-57, -0x1.cdb16ed4e9138p-56, -0x1.2276041f43042p-59, -0x1.dd355f6a516d7p-60,
  -0x1.142c507fb7a3dp-58, 0x1.8de59c21e166cp-57, 0x1.0d5604930f135p-58, 0x1.6e38161051d69p-57,
  0x1.ac9f4215f9393p-58, 0x1.0057eed1ca59fp-59, 0x1.72566212cdd05p-61, 0x1.d15d38d2fa3f7p-58,
  0x1.e48fb0500efd4p-59, 0x1.cdd6f7f4a137ep-59, 0x1.d192d0619fa67p-60, 0x0.0p+0,
};
#define PI_4 0x1.921fb54442d18p-1       /* pi/4 rounded down */

/* -- Instruction shorthands: a fresh register of class cls holding the result ------------ */

static preg op2(pe *e, int cls, const char *opc, po a) {
  preg d = pe_reg(e, cls);
  pe_ins(e, opc, 2, R(d), a);
  return d;
}

static preg op3(pe *e, int cls, const char *opc, po a, po b) {
  preg d = pe_reg(e, cls);
  pe_ins(e, opc, 3, R(d), a, b);
  return d;
}

static preg op4(pe *e, int cls, const char *opc, po a, po b, po c) {
  preg d = pe_reg(e, cls);
  pe_ins(e, opc, 4, R(d), a, b, c);
  return d;
}

static preg add(pe *e, po a, po b) { return op3(e, PR_FD, "add.rn.f64", a, b); }
static preg sub(pe *e, po a, po b) { return op3(e, PR_FD, "sub.rn.f64", a, b); }
static preg mul(pe *e, po a, po b) { return op3(e, PR_FD, "mul.rn.f64", a, b); }
static preg div_(pe *e, po a, po b) { return op3(e, PR_FD, "div.rn.f64", a, b); }
static preg fma_(pe *e, po a, po b, po c) { return op4(e, PR_FD, "fma.rn.f64", a, b, c); }
static preg neg(pe *e, preg a) { return op2(e, PR_FD, "neg.f64", R(a)); }
static preg sel(pe *e, po a, po b, preg p) { return op4(e, PR_FD, "selp.f64", a, b, R(p)); }
static preg cmp(pe *e, const char *opc, preg a, po b) { return op3(e, PR_P, opc, R(a), b); }

/* a + b = h + l exactly (Knuth's two-sum). */
typedef struct dd { preg h, l; } dd;

static dd two_sum(pe *e, po a, po b) {
  dd s;
  s.h = add(e, a, b);
  preg bb = sub(e, R(s.h), a), ab = sub(e, R(s.h), R(bb));
  preg da = sub(e, a, R(ab)), db = sub(e, b, R(bb));
  s.l = add(e, R(da), R(db));
  return s;
}

/* a + b = h + l exactly when |a| >= |b| (or a's exponent is at least b's). */
static dd fast_two_sum(pe *e, po a, po b) {
  dd s;
  s.h = add(e, a, b);
  preg t = sub(e, R(s.h), a);
  s.l = sub(e, b, R(t));
  return s;
}

/* x clamped to [lo, hi], NaN kept (min/max.f64 would drop it). */
static preg clamp(pe *e, preg x, double lo, double hi) {
  preg c = op3(e, PR_FD, "max.f64", R(x), F64(lo));
  pe_ins(e, "min.f64", 3, R(c), R(c), F64(hi));
  preg nan = op2(e, PR_P, "testp.notanumber.f64", R(x));
  return sel(e, R(x), R(c), nan);
}

/* v where |x| >= 2^-54, else x (where the function is x to f64 precision; keeps -0 and subnormals). */
static preg keep_tiny(pe *e, preg x, preg v) {
  preg ax = op2(e, PR_FD, "abs.f64", R(x));
  preg tiny = cmp(e, "setp.lt.f64", ax, F64(0x1p-54));
  return sel(e, R(x), R(v), tiny);
}

/* tbl[j] for a b32 j in [0, 32): a tree of selects on j's bits. */
static preg select32(pe *e, preg j, const double *tbl) {
  preg v[16], bit[5];
  for (int b = 0; b < 5; b++) {
    preg t = op3(e, PR_R, "and.b32", R(j), I(1 << b));
    bit[b] = op3(e, PR_P, "setp.ne.u32", R(t), I(0));
  }
  for (int i = 0; i < 16; i++) v[i] = sel(e, F64(tbl[2 * i + 1]), F64(tbl[2 * i]), bit[0]);
  for (int n = 8, b = 1; n >= 1; n /= 2, b++)
    for (int i = 0; i < n; i++) v[i] = sel(e, R(v[2 * i + 1]), R(v[2 * i]), bit[b]);
  return v[0];
}

/* -- e^x ------------------------------------------------------------------------------------- */

/* t with e^(rh + rl) - 1 = rh + t (to about 2^-60 relative) for |rh| <= ln2/2 (+ rounding), |rl| <= 2^-40. */
static preg exp_poly(pe *e, preg rh, preg rl) {
  static const double c[] = { 1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880,
                              1.0 / 40320, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5 };
  preg q = ptx_horner(e, true, rh, c, 12);
  preg r2 = mul(e, R(rh), R(rh));
  preg p0 = fma_(e, R(q), R(r2), R(rh));                 /* e^rh - 1 */
  preg cl = fma_(e, R(rl), R(p0), R(rl));                /* e^rh (e^rl - 1) to first order in rl */
  preg r2l = fma_(e, R(rh), R(rh), R(neg(e, r2)));       /* rh^2 - r2, exactly */
  cl = fma_(e, R(q), R(r2l), R(cl));
  return fma_(e, R(q), R(r2), R(cl));
}

/* e^(x + xl) = 2^ki (1 + rh + t) for x in [-746, 710] or NaN, |xl| tiny (0: none);
** ki is k as a b32 (NaN -> 0; rh and t are NaN then). */
static void exp_cw(pe *e, preg x, preg xl, preg *ki, preg *rh, preg *t) {
  preg k = mul(e, R(x), F64(LOG2E_HI));
  pe_ins(e, "cvt.rni.f64.f64", 2, R(k), R(k));
  preg r1 = fma_(e, R(k), F64(-LN2_CW_HI), R(x));        /* exact */
  *rh = fma_(e, R(k), F64(-LN2_CW_LO), R(r1));
  preg d = sub(e, R(r1), R(*rh));
  preg rl = fma_(e, R(k), F64(-LN2_CW_LO), R(d));        /* what rh's rounding lost */
  if (xl) rl = add(e, R(rl), R(xl));
  *t = exp_poly(e, *rh, rl);
  *ki = op2(e, PR_R, "cvt.rzi.s32.f64", R(k));
}

/* 2^k for a b32 k in [-1022, 1023]. */
static preg pow2(pe *e, preg k) {
  preg b = op2(e, PR_RD, "cvt.s64.s32", R(k));
  pe_ins(e, "add.s64", 3, R(b), R(b), I(1023));
  pe_ins(e, "shl.b64", 3, R(b), R(b), I(52));
  return op2(e, PR_FD, "mov.b64", R(b));
}

/* 2^ki (1 + rh + t) for ki in [-1076, 1025]: 1 + rh + t rounded once, then
** scaled by 2^ki in two halves (exact, or one rounding to a subnormal or inf). */
static preg exp_scale(pe *e, preg ki, preg rh, preg t) {
  dd a = fast_two_sum(e, F64(1.0), R(rh));
  preg w = add(e, R(a.h), R(add(e, R(a.l), R(t))));
  preg k1 = op3(e, PR_R, "shr.s32", R(ki), I(1));
  preg k2 = op3(e, PR_R, "sub.s32", R(ki), R(k1));
  preg v = mul(e, R(w), R(pow2(e, k1)));
  return mul(e, R(v), R(pow2(e, k2)));
}

static preg exp64(pe *e, preg x) {
  preg ki, rh, t;
  exp_cw(e, clamp(e, x, -746, 710), 0, &ki, &rh, &t);
  return exp_scale(e, ki, rh, t);
}

static preg exp2_64(pe *e, preg x) {
  preg xc = clamp(e, x, -1076, 1025);
  preg k = op2(e, PR_FD, "cvt.rni.f64.f64", R(xc));
  preg f = sub(e, R(xc), R(k));                           /* exact, |f| <= 1/2 */
  preg rh = mul(e, R(f), F64(LN2_HI));
  preg rl = fma_(e, R(f), F64(LN2_HI), R(neg(e, rh)));
  rl = fma_(e, R(f), F64(LN2_LO), R(rl));
  preg t = exp_poly(e, rh, rl);
  return exp_scale(e, op2(e, PR_R, "cvt.rzi.s32.f64", R(k)), rh, t);
}

/* e^x - 1 for x in [-60, 40] (or NaN): (2^k - 1) + 2^k (rh + t) with k <= 58, rounded once
** (a two-sum of the first two terms; 2^k - 1 is exact up to k = 53, beyond it the -1
** joins the small terms). */
static preg expm1_core(pe *e, preg x, preg *ki, preg *rh, preg *t) {
  exp_cw(e, x, 0, ki, rh, t);
  preg kc = op3(e, PR_R, "min.s32", R(*ki), I(1000));
  preg s = pow2(e, kc);
  preg big = cmp(e, "setp.gt.s32", *ki, I(53));
  preg sm1 = sel(e, R(s), R(sub(e, R(s), F64(1.0))), big);
  dd a = two_sum(e, R(sm1), R(mul(e, R(s), R(*rh))));
  preg lo = fma_(e, R(s), R(*t), R(a.l));
  lo = add(e, R(lo), R(sel(e, F64(-1.0), F64(0.0), big)));
  return add(e, R(a.h), R(lo));
}

static preg expm1_64(pe *e, preg x) {
  preg xc = clamp(e, x, -60, 710), ki, rh, t;
  preg r = expm1_core(e, xc, &ki, &rh, &t);
  preg big = cmp(e, "setp.gt.f64", xc, F64(40.0));       /* e^x - 1 rounds as e^x */
  r = sel(e, R(exp_scale(e, ki, rh, t)), R(r), big);
  return keep_tiny(e, x, r);
}

/* num / (dh + dl) rounded to nearest, corrected by one residual step. */
static preg div_dd(pe *e, po num, preg dh, preg dl) {
  preg q = div_(e, num, R(dh));
  preg nq = neg(e, q);
  preg res = fma_(e, R(nq), R(dh), num);
  res = fma_(e, R(nq), R(dl), R(res));
  preg c = div_(e, R(res), R(dh));
  return add(e, R(q), R(c));
}

static preg logistic64(pe *e, preg x) {
  preg na = neg(e, op2(e, PR_FD, "abs.f64", R(x)));
  preg t = exp64(e, na);                                  /* e^-|x| */
  dd den = fast_two_sum(e, F64(1.0), R(t));
  preg pos = cmp(e, "setp.ge.f64", x, F64(0.0));
  preg num = sel(e, F64(1.0), R(t), pos);
  return div_dd(e, R(num), den.h, den.l);
}

static preg tanh64(pe *e, preg x) {
  preg m2 = mul(e, R(op2(e, PR_FD, "abs.f64", R(x))), F64(-2.0));
  preg ki, rh, t;
  preg em = expm1_core(e, clamp(e, m2, -60, 0), &ki, &rh, &t);   /* e^-2|x| - 1 */
  dd den = fast_two_sum(e, F64(2.0), R(em));
  preg q = div_dd(e, R(neg(e, em)), den.h, den.l);
  pe_ins(e, "copysign.f64", 3, R(q), R(x), R(q));
  preg ax = op2(e, PR_FD, "abs.f64", R(x));
  preg tiny = cmp(e, "setp.lt.f64", ax, F64(0x1p-27));
  return sel(e, R(x), R(q), tiny);
}

/* -- ln ---------------------------------------------------------------------------------------- */

/* For a positive finite u (others give garbage; callers select): u = 2^k m and
** ln u = k ln2 + M, M = ln c + 2 atanh((m - c) / (m + c)) as a double-double
** (|M| <= 0.35, relative error about 2^-65); kd = k as an f64. */
static dd log_core(pe *e, preg u, preg *kd) {
  preg sub_ = cmp(e, "setp.lt.f64", u, F64(0x1p-1022));
  preg us = sel(e, R(mul(e, R(u), F64(0x1p54))), R(u), sub_);
  preg adj = op4(e, PR_R, "selp.s32", I(-54), I(0), R(sub_));
  preg b = op2(e, PR_RD, "mov.b64", R(us));
  preg t = op3(e, PR_RD, "shr.u64", R(b), I(47));
  preg j = op2(e, PR_R, "cvt.u32.u64", R(t));
  preg ex = op3(e, PR_R, "shr.u32", R(j), I(5));          /* the biased exponent */
  pe_ins(e, "and.b32", 3, R(j), R(j), I(31));             /* the top 5 bits of the significand */
  preg mb = op3(e, PR_RD, "and.b64", R(b), I(0x000FFFFFFFFFFFFFLL));
  pe_ins(e, "or.b64", 3, R(mb), R(mb), I(0x3FF0000000000000LL));    /* m in [1, 2) */
  preg hi = cmp(e, "setp.ge.u32", j, I(14));               /* m >= 1.4375: use m / 2 */
  preg mh = op3(e, PR_RD, "sub.s64", R(mb), I(1LL << 52));
  pe_ins(e, "selp.b64", 4, R(mb), R(mh), R(mb), R(hi));
  preg k = op3(e, PR_R, "add.s32", R(ex), R(adj));
  pe_ins(e, "sub.s32", 3, R(k), R(k), I(1023));
  preg inc = op4(e, PR_R, "selp.s32", I(1), I(0), R(hi));
  pe_ins(e, "add.s32", 3, R(k), R(k), R(inc));
  *kd = op2(e, PR_FD, "cvt.rn.f64.s32", R(k));
  /* c: m with its low 47 bits replaced by the middle of their range, or 1 (j = 0, 31) */
  preg cb = op3(e, PR_RD, "and.b64", R(mb), I((int64_t)0xFFFF800000000000ULL));
  pe_ins(e, "or.b64", 3, R(cb), R(cb), I(0x0000400000000000LL));
  preg one = cmp(e, "setp.eq.u32", j, I(0));
  pe_ins(e, "setp.eq.or.u32", 4, R(one), R(j), I(31), R(one));
  pe_ins(e, "selp.b64", 4, R(cb), I(0x3FF0000000000000LL), R(cb), R(one));
  preg m = op2(e, PR_FD, "mov.b64", R(mb)), c = op2(e, PR_FD, "mov.b64", R(cb));
  preg f = sub(e, R(m), R(c));                                  /* exact */
  dd den = fast_two_sum(e, R(c), R(m));
  /* s = f / (m + c) = sh + sl; ln(m / c) = 2s + s^3 R(s^2) */
  preg sh = div_(e, R(f), R(den.h));
  preg nsh = neg(e, sh);
  preg r = fma_(e, R(nsh), R(den.h), R(f));
  r = fma_(e, R(nsh), R(den.l), R(r));
  preg sl = div_(e, R(r), R(den.h));
  static const double atanh_c[] = { 2.0 / 11, 2.0 / 9, 2.0 / 7, 2.0 / 5, 2.0 / 3 };
  preg z = mul(e, R(sh), R(sh));
  preg rz = ptx_horner(e, true, z, atanh_c, 5);
  preg s3 = mul(e, R(sh), R(z));
  preg tail = fma_(e, R(s3), R(rz), R(add(e, R(sl), R(sl))));
  dd lm = fast_two_sum(e, R(add(e, R(sh), R(sh))), R(tail));
  dd s = two_sum(e, R(select32(e, j, log_c_hi)), R(lm.h));
  preg lo = add(e, R(s.l), R(lm.l));
  s.l = add(e, R(lo), R(select32(e, j, log_c_lo)));
  return s;
}

/* ln u as a double-double for a positive finite u. */
static dd log_dd(pe *e, preg u) {
  preg kd;
  dd m = log_core(e, u, &kd);
  preg a = mul(e, R(kd), F64(LN2_CW_HI));                    /* exact */
  dd s = two_sum(e, R(a), R(m.h));
  preg lo = fma_(e, R(kd), F64(LN2_CW_LO), R(m.l));
  lo = add(e, R(lo), R(s.l));
  return fast_two_sum(e, R(s.h), R(lo));
}

/* v for a positive finite x; log's values elsewhere: -inf at +-0, inf at inf, NaN below 0 and for NaN. */
static preg log_special(pe *e, preg x, preg v) {
  preg pos = cmp(e, "setp.gt.f64", x, F64(0.0));
  preg ok = cmp(e, "setp.lt.f64", x, F64(INFINITY));
  pe_ins(e, "and.pred", 3, R(ok), R(ok), R(pos));
  preg sp = sel(e, R(x), F64(NAN), pos);
  preg zero = cmp(e, "setp.eq.f64", x, F64(0.0));
  sp = sel(e, F64(-INFINITY), R(sp), zero);
  return sel(e, R(v), R(sp), ok);
}

static preg log64(pe *e, preg x) {
  dd l = log_dd(e, x);
  return log_special(e, x, l.h);
}

static preg log2_64(pe *e, preg x) {
  preg kd;
  dd m = log_core(e, x, &kd);
  preg ph = mul(e, R(m.h), F64(LOG2E_HI));
  preg pl = fma_(e, R(m.h), F64(LOG2E_HI), R(neg(e, ph)));
  pl = fma_(e, R(m.h), F64(LOG2E_LO), R(pl));
  pl = fma_(e, R(m.l), F64(LOG2E_HI), R(pl));
  dd s = two_sum(e, R(kd), R(ph));
  preg v = add(e, R(s.h), R(add(e, R(s.l), R(pl))));
  return log_special(e, x, v);
}

static preg log1p64(pe *e, preg x) {
  dd u = two_sum(e, F64(1.0), R(x));                        /* 1 + x exactly */
  dd l = log_dd(e, u.h);
  preg c = div_(e, R(u.l), R(u.h));                          /* ln(uh + ul) - ln uh */
  preg v = add(e, R(l.h), R(add(e, R(l.l), R(c))));
  return keep_tiny(e, x, log_special(e, u.h, v));
}

/* -- pow --------------------------------------------------------------------------------------- */

/* d = x^y: e^(y ln|x|) with y ln|x| as a double-double, then C99's signs and special cases. */
static void pow64(pe *e, preg d, preg x, preg y) {
  preg a = op2(e, PR_FD, "abs.f64", R(x));
  dd l = log_dd(e, a);
  preg pos = cmp(e, "setp.gt.f64", a, F64(0.0));
  preg ok = cmp(e, "setp.lt.f64", a, F64(INFINITY));
  pe_ins(e, "and.pred", 3, R(ok), R(ok), R(pos));
  preg zero = cmp(e, "setp.eq.f64", a, F64(0.0));
  preg lsp = sel(e, F64(-INFINITY), R(a), zero);             /* ln 0 = -inf; inf and NaN stay */
  l.h = sel(e, R(l.h), R(lsp), ok);
  l.l = sel(e, R(l.l), F64(0.0), ok);
  preg th = mul(e, R(y), R(l.h));
  preg tl = fma_(e, R(y), R(l.h), R(neg(e, th)));
  tl = fma_(e, R(y), R(l.l), R(tl));
  preg ath = op2(e, PR_FD, "abs.f64", R(th));
  preg inr = cmp(e, "setp.lt.f64", ath, F64(746.0));
  tl = sel(e, R(tl), F64(0.0), inr);                         /* huge, inf or NaN th: no correction */
  preg ki, rh, t;
  exp_cw(e, clamp(e, th, -746, 710), tl, &ki, &rh, &t);
  preg mag = exp_scale(e, ki, rh, t);
  /* y an integer (inf counts as even), odd; x's sign bit; x negative and finite */
  preg yt = op2(e, PR_FD, "cvt.rzi.f64.f64", R(y));
  preg yint = cmp(e, "setp.eq.f64", yt, R(y));
  preg h = mul(e, R(y), F64(0.5));
  preg ht = op2(e, PR_FD, "cvt.rzi.f64.f64", R(h));
  preg odd = cmp(e, "setp.ne.f64", ht, R(h));
  pe_ins(e, "and.pred", 3, R(odd), R(odd), R(yint));
  preg xb = op2(e, PR_RD, "mov.b64", R(x));
  preg xs = cmp(e, "setp.lt.s64", xb, I(0));
  pe_ins(e, "and.pred", 3, R(xs), R(xs), R(odd));
  mag = sel(e, R(neg(e, mag)), R(mag), xs);                  /* odd y keeps x's sign */
  preg p1 = cmp(e, "setp.lt.f64", x, F64(0.0));
  preg p2 = cmp(e, "setp.gt.f64", x, F64(-INFINITY));
  pe_ins(e, "and.pred", 3, R(p1), R(p1), R(p2));
  pe_ins(e, "not.pred", 2, R(p2), R(yint));
  pe_ins(e, "and.pred", 3, R(p1), R(p1), R(p2));
  mag = sel(e, F64(NAN), R(mag), p1);                        /* negative ^ non-integer */
  /* pow(x, +-0) = pow(1, y) = pow(-1, +-inf) = 1 */
  preg one = cmp(e, "setp.eq.f64", y, F64(0.0));
  pe_ins(e, "setp.eq.or.f64", 4, R(one), R(x), F64(1.0), R(one));
  preg ay = op2(e, PR_FD, "abs.f64", R(y));
  preg q1 = cmp(e, "setp.eq.f64", ay, F64(INFINITY));
  pe_ins(e, "setp.eq.and.f64", 4, R(q1), R(a), F64(1.0), R(q1));
  pe_ins(e, "or.pred", 3, R(one), R(one), R(q1));
  pe_ins(e, "selp.f64", 4, R(d), F64(1.0), R(mag), R(one));
}

/* -- sin, cos ---------------------------------------------------------------------------------- */

/* 64 zero bits, then the first 1216 bits of 2/pi (weights 2^-1 on) */
static const uint64_t two_over_pi[20] = {
  0x0000000000000000ULL, 0xA2F9836E4E441529ULL, 0xFC2757D1F534DDC0ULL, 0xDB6295993C439041ULL,
  0xFE5163ABDEBBC561ULL, 0xB7246E3A424DD2E0ULL, 0x06492EEA09D1921CULL, 0xFE1DEB1CB129A73EULL,
  0xE88235F52EBB4484ULL, 0xE99C7026B45F7E41ULL, 0x3991D639835339F4ULL, 0x9C845F8BBDF9283BULL,
  0x1FF897FFDE05980FULL, 0xEF2F118B5A0A6D1FULL, 0x6D367ECF27CB09B7ULL, 0x4F463F669E5FEA2DULL,
  0x7527BAC7EBE5F17BULL, 0x3D0739F78A5292EAULL, 0x6BFB5FB11F8D5D08ULL, 0x56033046FC7B6BABULL,
};

/* |x| = (q + (rh + rl) / (pi/2)) * pi/2 with |rh| <= pi/4 (q a b32 quadrant);
** xb holds x's bits.  |x| < pi/4 gives rh = |x|, rl = 0, q = 0. */
static void reduce_pio2(pe *e, preg x, preg xb, preg *rh_, preg *rl_, preg *q_) {
  preg ab = op3(e, PR_RD, "and.b64", R(xb), I(0x7FFFFFFFFFFFFFFFLL));
  preg m = op3(e, PR_RD, "and.b64", R(ab), I(0x000FFFFFFFFFFFFFLL));
  pe_ins(e, "or.b64", 3, R(m), R(m), I(1LL << 52));
  preg t = op3(e, PR_RD, "shr.u64", R(ab), I(52));
  preg be = op2(e, PR_R, "cvt.u32.u64", R(t));
  /* |x| = m 2^E, E = be - 1075: the window starts at the bit of 2/pi of weight 2^-(E-1),
  ** table bit be - 1013 (64 zero bits first), so m * window mod 2^192 holds x 2/pi mod 4
  ** with 2 integer and 190 fraction bits */
  preg ps = op3(e, PR_R, "sub.s32", R(be), I(1013));
  pe_ins(e, "max.s32", 3, R(ps), R(ps), I(0));
  preg wi = op3(e, PR_R, "shr.u32", R(ps), I(6));
  preg sh = op3(e, PR_R, "and.b32", R(ps), I(63));
  preg rsh = op3(e, PR_R, "sub.s32", I(64), R(sh));
  preg is[17] = { 0 };
  for (int w = 1; w <= 16; w++) is[w] = cmp(e, "setp.eq.u32", wi, I(w));
  preg tw[4];
  for (int j = 0; j < 4; j++) {          /* tw[j] = table[wi + j] */
    tw[j] = op2(e, PR_RD, "mov.b64", U(two_over_pi[j]));
    for (int w = 1; w <= 16; w++) pe_ins(e, "selp.b64", 4, R(tw[j]), U(two_over_pi[j + w]), R(tw[j]), R(is[w]));
  }
  preg W[3];
  for (int j = 0; j < 3; j++) {          /* shr by 64 gives 0 */
    W[j] = op3(e, PR_RD, "shl.b64", R(tw[j]), R(sh));
    preg lo = op3(e, PR_RD, "shr.b64", R(tw[j + 1]), R(rsh));
    pe_ins(e, "or.b64", 3, R(W[j]), R(W[j]), R(lo));
  }
  /* N = m * (W0:W1:W2) mod 2^192 = L2:L1:L0 */
  preg a0 = op3(e, PR_RD, "mul.lo.u64", R(m), R(W[0]));
  preg blo = op3(e, PR_RD, "mul.lo.u64", R(m), R(W[1])), bhi = op3(e, PR_RD, "mul.hi.u64", R(m), R(W[1]));
  preg L0 = op3(e, PR_RD, "mul.lo.u64", R(m), R(W[2])), chi = op3(e, PR_RD, "mul.hi.u64", R(m), R(W[2]));
  preg L1 = op3(e, PR_RD, "add.u64", R(blo), R(chi));
  preg cy = op3(e, PR_P, "setp.lt.u64", R(L1), R(blo));
  preg cv = op4(e, PR_RD, "selp.b64", I(1), I(0), R(cy));
  preg L2 = op3(e, PR_RD, "add.u64", R(a0), R(bhi));
  pe_ins(e, "add.u64", 3, R(L2), R(L2), R(cv));
  /* the quadrant rounded to nearest, and the rest as a signed 128-bit fraction Fh:Fl (2^-128 units) */
  preg qd = op3(e, PR_RD, "add.u64", R(L2), I(1LL << 61));
  pe_ins(e, "shr.u64", 3, R(qd), R(qd), I(62));
  preg q = op2(e, PR_R, "cvt.u32.u64", R(qd));
  preg Fh = op3(e, PR_RD, "shl.b64", R(L2), I(2)), Fl = op3(e, PR_RD, "shl.b64", R(L1), I(2));
  pe_ins(e, "shr.u64", 3, R(L1), R(L1), I(62));
  pe_ins(e, "or.b64", 3, R(Fh), R(Fh), R(L1));
  pe_ins(e, "shr.u64", 3, R(L0), R(L0), I(62));
  pe_ins(e, "or.b64", 3, R(Fl), R(Fl), R(L0));
  preg negf = cmp(e, "setp.lt.s64", Fh, I(0));
  preg nl = op2(e, PR_RD, "neg.s64", R(Fl)), nh = op2(e, PR_RD, "not.b64", R(Fh));
  preg lz = cmp(e, "setp.eq.u64", Fl, I(0));
  preg c1 = op4(e, PR_RD, "selp.b64", I(1), I(0), R(lz));
  pe_ins(e, "add.u64", 3, R(nh), R(nh), R(c1));
  pe_ins(e, "selp.b64", 4, R(Fh), R(nh), R(Fh), R(negf));
  pe_ins(e, "selp.b64", 4, R(Fl), R(nl), R(Fl), R(negf));
  /* normalise: |fraction| = (Nh + Nl 2^-64) 2^-(64+n) quadrants */
  preg n = op2(e, PR_R, "clz.b64", R(Fh));
  pe_ins(e, "min.u32", 3, R(n), R(n), I(63));
  preg rn = op3(e, PR_R, "sub.s32", I(64), R(n));
  preg Nh = op3(e, PR_RD, "shl.b64", R(Fh), R(n));
  preg sl = op3(e, PR_RD, "shr.b64", R(Fl), R(rn));
  pe_ins(e, "or.b64", 3, R(Nh), R(Nh), R(sl));
  preg Nl = op3(e, PR_RD, "shl.b64", R(Fl), R(n));
  preg top = op3(e, PR_RD, "and.b64", R(Nh), I(~0x7FFLL));
  preg rem = op3(e, PR_RD, "and.b64", R(Nh), I(0x7FF));
  preg d1 = op2(e, PR_FD, "cvt.rn.f64.u64", R(top));           /* exact */
  preg d2 = fma_(e, R(op2(e, PR_FD, "cvt.rn.f64.u64", R(Nl))), F64(0x1p-64),
                 R(op2(e, PR_FD, "cvt.rn.f64.u64", R(rem))));
  preg se = op3(e, PR_R, "sub.s32", I(1023 - 64), R(n));
  preg sb = op2(e, PR_RD, "cvt.u64.u32", R(se));
  pe_ins(e, "shl.b64", 3, R(sb), R(sb), I(52));
  preg sc = op2(e, PR_FD, "mov.b64", R(sb));
  preg a1 = mul(e, R(d1), R(sc)), a2 = mul(e, R(d2), R(sc));   /* exact */
  preg rh = mul(e, R(a1), F64(PIO2_HI));
  preg rl = fma_(e, R(a1), F64(PIO2_HI), R(neg(e, rh)));
  preg t2 = mul(e, R(a2), F64(PIO2_HI));
  t2 = fma_(e, R(a1), F64(PIO2_LO), R(t2));
  rl = add(e, R(rl), R(t2));
  rh = sel(e, R(neg(e, rh)), R(rh), negf);
  rl = sel(e, R(neg(e, rl)), R(rl), negf);
  /* small arguments need no reduction */
  preg ax = op2(e, PR_FD, "abs.f64", R(x));
  preg small = cmp(e, "setp.lt.f64", ax, F64(PI_4));
  *rh_ = sel(e, R(ax), R(rh), small);
  *rl_ = sel(e, F64(0.0), R(rl), small);
  *q_ = op4(e, PR_R, "selp.b32", I(0), R(q), R(small));
}

static preg sincos64(pe *e, preg x, bool cosine) {
  static const double cs[] = { -1.0 / 121645100408832000, 1.0 / 355687428096000, -1.0 / 1307674368000,
                               1.0 / 6227020800, -1.0 / 39916800, 1.0 / 362880, -1.0 / 5040, 1.0 / 120, -1.0 / 6 };
  static const double cc[] = { 1.0 / 2432902008176640000, -1.0 / 6402373705728000, 1.0 / 20922789888000,
                               -1.0 / 87178291200, 1.0 / 479001600, -1.0 / 3628800, 1.0 / 40320, -1.0 / 720,
                               1.0 / 24 };
  preg xb = op2(e, PR_RD, "mov.b64", R(x)), rh, rl, q;
  reduce_pio2(e, x, xb, &rh, &rl, &q);
  if (cosine) pe_ins(e, "add.s32", 3, R(q), R(q), I(1));   /* cos x = sin(x + pi/2) */
  preg z = mul(e, R(rh), R(rh));
  /* sin(rh + rl) = rh + rh z ps(z) + rl (1 - z/2) */
  preg ps = ptx_horner(e, true, z, cs, 9);
  preg hz = mul(e, R(z), F64(-0.5));
  preg rlc = fma_(e, R(hz), R(rl), R(rl));
  preg ts = fma_(e, R(mul(e, R(rh), R(z))), R(ps), R(rlc));
  preg sn = add(e, R(rh), R(ts));
  /* cos(rh + rl) = w + ((1 - w) - z/2) - ze/2 - rh rl + z^2 pc(z), w = 1 - z/2, ze = rh^2 - z */
  preg pc = ptx_horner(e, true, z, cc, 9);
  preg ze = fma_(e, R(rh), R(rh), R(neg(e, z)));
  preg w = add(e, F64(1.0), R(hz));
  preg tc = sub(e, F64(1.0), R(w));
  tc = add(e, R(tc), R(hz));
  tc = fma_(e, R(ze), F64(-0.5), R(tc));
  tc = fma_(e, R(neg(e, rh)), R(rl), R(tc));
  tc = fma_(e, R(mul(e, R(z), R(z))), R(pc), R(tc));
  preg cn = add(e, R(w), R(tc));
  preg qb = op3(e, PR_R, "and.b32", R(q), I(1));
  preg odd = cmp(e, "setp.ne.u32", qb, I(0));
  preg v = sel(e, R(cn), R(sn), odd);
  qb = op3(e, PR_R, "and.b32", R(q), I(2));
  preg ng = cmp(e, "setp.ne.u32", qb, I(0));
  if (!cosine) {   /* sin(-x) = -sin x */
    preg sg = cmp(e, "setp.lt.s64", xb, I(0));
    pe_ins(e, "xor.pred", 3, R(ng), R(ng), R(sg));
  }
  v = sel(e, R(neg(e, v)), R(v), ng);
  preg ab = op3(e, PR_RD, "and.b64", R(xb), I(0x7FFFFFFFFFFFFFFFLL));
  preg nf = cmp(e, "setp.ge.u64", ab, I(0x7FF0000000000000LL));   /* inf, NaN -> NaN */
  return sel(e, F64(NAN), R(v), nf);
}

/* -- erf ---------------------------------------------------------------------------------------- */

/* erf(x) / x as a polynomial in x^2 on [0, 1] (the last entry is the constant term) */
static const double erf64_small[] = {
  /* degree 14, max relative error 1.394e-16 (2^-52.7); of the fit alone 2^-56.0 */
  -5.7525539887137711e-11, 4.0517988963983953e-10, -1.2105090263503371e-09, 1.1979608416368137e-09,
  1.1865135540745086e-08, -1.6121947954417237e-07, 1.6447994136692401e-06, -1.4925077427285771e-05,
  0.0001205531685995534, -0.00085483267165562676, 0.0052239776216572381, -0.026866170644850498,
  0.11283791670954046, -0.37612638903183737, 1.1283791670955126,
};
/* erfc(x) e^(x^2) as polynomials in (x - 1.75) / 0.75 on [1, 2.5] and (x - 4.25) / 1.75 on [2.5, 6] */
static const double erf64_mid[] = {
  /* degree 18, max relative error 1.567e-16 (2^-52.5); of the fit alone 2^-54.5 */
  1.7062184998195562e-12, -9.196921002541103e-12, 4.0877315421461446e-11, -2.120932734994696e-10,
  1.091488481194669e-09, -5.4141804407825678e-09, 2.6200072392006113e-08, -1.2365977773189096e-07,
  5.6801677596272481e-07, -2.5345110886687821e-06, 1.0962893597749664e-05, -4.5856167044947362e-05,
  0.00018495607834046618, -0.00071689144562654857, 0.0026591791241937371, -0.0093909354924592431,
  0.03136704192398658, -0.098232259135863934, 0.28497223473743638,
};
static const double erf64_big[] = {
  /* degree 18, max relative error 5.971e-15 (2^-47.3); of the fit alone 2^-47.3 */
  6.192063667365133e-10, -2.0913011183898433e-09, 4.044202174535716e-09, -1.3135458557661517e-08,
  4.8000362142495978e-08, -1.5312342136700879e-07, 4.7572070065128244e-07, -1.4761773979919506e-06,
  4.5207167958101978e-06, -1.3632246864584568e-05, 4.0486245418500712e-05, -0.00011835406923732324,
  0.00034031161757331734, -0.00096173299437015477, 0.0026690037168547787, -0.0072669543166607817,
  0.019391340463739096, -0.05065257997558998, 0.12934527478598792,
};

static preg erf64(pe *e, preg x) {
  preg a = op2(e, PR_FD, "abs.f64", R(x));
  preg v = mul(e, R(a), R(a));
  /* a c0 + a v Q(v) */
  preg qs = ptx_horner(e, true, v, erf64_small, 14);
  preg t = mul(e, R(a), R(mul(e, R(v), R(qs))));
  preg small = fma_(e, R(a), F64(erf64_small[14]), R(t));
  preg u1 = mul(e, R(add(e, R(a), F64(-1.75))), F64(1.0 / 0.75));
  preg u2 = mul(e, R(add(e, R(a), F64(-4.25))), F64(1.0 / 1.75));
  preg g1 = ptx_horner(e, true, u1, erf64_mid, 19), g2 = ptx_horner(e, true, u2, erf64_big, 19);
  preg lt = cmp(e, "setp.lt.f64", a, F64(2.5));
  preg g = sel(e, R(g1), R(g2), lt);
  /* e^-(v + vl) with v + vl = a^2 exactly */
  preg vl = fma_(e, R(a), R(a), R(neg(e, v)));
  preg ki, rh, et;
  exp_cw(e, clamp(e, neg(e, v), -746, 0), neg(e, vl), &ki, &rh, &et);
  preg ex = exp_scale(e, ki, rh, et);
  preg big = fma_(e, R(neg(e, ex)), R(g), F64(1.0));            /* 1 - erfc */
  pe_ins(e, "setp.lt.f64", 3, R(lt), R(a), F64(1.0));
  preg r = sel(e, R(small), R(big), lt);
  pe_ins(e, "setp.lt.f64", 3, R(lt), R(a), F64(6.0));
  r = sel(e, R(r), F64(1.0), lt);                                /* 1 from 6 on, and for inf */
  preg nan = op2(e, PR_P, "testp.notanumber.f64", R(x));
  r = sel(e, R(x), R(r), nan);
  pe_ins(e, "copysign.f64", 3, R(r), R(x), R(r));
  return r;
}

/* -- Entry points ----------------------------------------------------------------------------------- */

bool ptx_math64_unary(pe *e, int code, preg d, preg x) {
  preg v;
  switch (code) {
  case IR_exp: v = exp64(e, x); break;
  case IR_exp2: v = exp2_64(e, x); break;
  case IR_log: v = log64(e, x); break;
  case IR_log2: v = log2_64(e, x); break;
  case IR_tanh: v = tanh64(e, x); break;
  case IR_sin: v = sincos64(e, x, false); break;
  case IR_cos: v = sincos64(e, x, true); break;
  case IR_erf: v = erf64(e, x); break;
  case IR_logistic: v = logistic64(e, x); break;
  case IR_expm1: v = expm1_64(e, x); break;
  case IR_log1p: v = log1p64(e, x); break;
  default: return false;
  }
  pe_ins(e, "mov.f64", 2, R(d), R(v));
  return true;
}

void ptx_math64_pow(pe *e, preg d, preg x, preg y) { pow64(e, d, x, y); }
