/*
** ptx_math.c -- sin, cos, erf, logistic, expm1, log1p and pow for f32 (and
** for f16/bf16 through f32).
**
** Accurate forms (the default) compute in f64, which the H100 runs at half
** the f32 rate, with argument reductions and polynomials whose error stays
** near 2^-40, so the f32 result is the correctly rounded one except when
** the exact value lies within about 2^-40 (relative) of a rounding tie:
**
**   sin, cos, erf, logistic, expm1, log1p, pow   bound 1 ulp; measured 0.5001 ulp: every
**                                                 finite f32 for sin and cos, every 1009th
**                                                 f32 for the others, 2e7 pairs for pow
**                                                 (the same sequence run in C), plus 2.5e6
**                                                 inputs each of this PTX in a simulator
**   f16, bf16 (rounded through f32)             bound 1 ulp of the narrow type
**
** sin/cos reduce x * 2/pi exactly: the 24-bit significand times a 96-bit
** window of the bits of 2/pi chosen by the exponent (Payne-Hanek with
** integer multiplies and no memory: the window is selected from immediates),
** leaving a 94-bit fraction of a quadrant; Taylor polynomials of degree 13
** and 14 on [-pi/4, pi/4] (truncation error below 2^-45).  exp goes through
** x = k ln2 + r, |r| <= ln2/2 with a degree-12 Taylor polynomial of
** e^r - 1; log through x = 2^k m, m in [sqrt(1/2), sqrt(2)), ln m =
** 2 atanh(s) with s = (m-1)/(m+1) and the atanh series to s^23.  erf:
** |x| < 1.5 a polynomial of degree 12 in x^2 times x; 1.5 <= |x| < 4
** 1 - e^(-x^2) g(x) with g(x) = erfc(x) e^(x^2) a polynomial of degree 16
** in (|x| - 2.75) / 1.25; 1 beyond.  Their coefficients are Chebyshev
** interpolants computed in long double (tools/fit_poly.c).  Special values
** follow C99: pow's cases (pow(x, 0) = 1, pow(1, y) = 1, pow(-1, +-inf) =
** 1, signed zeros and infinities for odd integer y, NaN for negative x and
** non-integer y), log1p(-1) = -inf, expm1 and log1p keep -0, erf(+-inf) =
** +-1, sin/cos(+-inf) = NaN.
**
** approx_math forms are f32 with the hardware approximations (sin.approx,
** cos.approx, ex2.approx, lg2.approx, rcp.approx): sin/cos absolute error
** about 2^-20.5 on [-pi, pi] (growing with |x| beyond); expm1, log1p and
** logistic a few ulp (relative 2^-21) except where ex2.approx's argument
** rounding costs |x| * 2^-24 relative; erf absolute 2^-22; pow relative
** |y log2 x| * 2^-22.  The special values are those of the accurate forms.
*/
#include <math.h>
#include <stdio.h>

#include "ptx.h"

#define LOG2E 1.4426950408889634
#define LN2_HI 0x1.62e42fefa39efp-1     /* ln 2 rounded to double */
#define LN2_LO 0x1.abc9e3b39803fp-56    /* ln 2 - LN2_HI */
#define PI_4 0.78539816339744828

static preg fd(pe *e) { return pe_reg(e, PR_FD); }
static preg f32(pe *e) { return pe_reg(e, PR_F); }
static preg b32(pe *e) { return pe_reg(e, PR_R); }
static preg b64(pe *e) { return pe_reg(e, PR_RD); }
static preg prd(pe *e) { return pe_reg(e, PR_P); }

preg ptx_horner(pe *e, bool wide, preg x, const double *c, int n) {
  preg p = wide ? fd(e) : f32(e);
  const char *fma = wide ? "fma.rn.f64" : "fma.rn.f32";
  po (*K)(double) = wide ? F64 : F32;
  pe_ins(e, fma, 4, R(p), R(x), K(c[0]), K(c[1]));
  for (int i = 2; i < n; i++) pe_ins(e, fma, 4, R(p), R(p), R(x), K(c[i]));
  return p;
}

/* -- f64 cores ------------------------------------------------------------------------ */

/* e^x = s (1 + p) for finite (or NaN) f64 x with |x| <= 300: s = 2^k, p = e^r - 1. */
static void d_exp(pe *e, preg x, preg *s, preg *p) {
  static const double c[] = { 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320,
                              1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5 };
  preg k = fd(e), r = fd(e), r2 = fd(e), ki = b32(e), kb = b64(e);
  pe_ins(e, "mul.rn.f64", 3, R(k), R(x), F64(LOG2E));
  pe_ins(e, "cvt.rni.f64.f64", 2, R(k), R(k));
  pe_ins(e, "fma.rn.f64", 4, R(r), R(k), F64(-LN2_HI), R(x));
  pe_ins(e, "fma.rn.f64", 4, R(r), R(k), F64(-LN2_LO), R(r));
  preg q = ptx_horner(e, true, r, c, 11);
  pe_ins(e, "mul.rn.f64", 3, R(r2), R(r), R(r));
  *p = fd(e);
  pe_ins(e, "fma.rn.f64", 4, R(*p), R(q), R(r2), R(r));
  pe_ins(e, "cvt.rzi.s32.f64", 2, R(ki), R(k));      /* NaN -> 0 */
  pe_ins(e, "add.s32", 3, R(ki), R(ki), I(1023));
  pe_ins(e, "cvt.s64.s32", 2, R(kb), R(ki));
  pe_ins(e, "shl.b64", 3, R(kb), R(kb), I(52));
  *s = fd(e);
  pe_ins(e, "mov.b64", 2, R(*s), R(kb));
}

/* ln(1 + f) = 2 atanh(s), s = f / (2 + f), by the odd series 2s (1 + z p(z)),
** z = s^2, p's n coefficients c highest first.  wide: f64, rounded to
** nearest; else f32 with the approximate division. */
static preg log1p_series(pe *e, bool wide, preg f, const double *c, int n) {
  preg den = wide ? fd(e) : f32(e), s = wide ? fd(e) : f32(e), z = wide ? fd(e) : f32(e);
  preg t = wide ? fd(e) : f32(e), tz = wide ? fd(e) : f32(e);
  po two = wide ? F64(2.0) : F32(2.0);
  pe_ins(e, wide ? "add.rn.f64" : "add.f32", 3, R(den), R(f), two);
  pe_ins(e, wide ? "div.rn.f64" : "div.approx.f32", 3, R(s), R(f), R(den));
  pe_ins(e, wide ? "mul.rn.f64" : "mul.f32", 3, R(z), R(s), R(s));
  preg p = ptx_horner(e, wide, z, c, n);
  pe_ins(e, wide ? "add.rn.f64" : "add.f32", 3, R(t), R(s), R(s));
  pe_ins(e, wide ? "mul.rn.f64" : "mul.f32", 3, R(tz), R(t), R(z));
  pe_ins(e, wide ? "fma.rn.f64" : "fma.rn.f32", 4, R(t), R(tz), R(p), R(t));
  return t;
}

/* ln u for a positive, finite f64 u (other inputs give garbage: callers select). */
static preg d_log(pe *e, preg u) {
  static const double c[] = { 1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                              1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3 };
  const int64_t SQRT_HALF = 0x3FE6A09E667F3BCDLL;   /* bits of sqrt(1/2) */
  preg b = b64(e), k = b64(e), mb = b64(e);
  preg m = fd(e), f = fd(e), kd = fd(e), res = fd(e);
  pe_ins(e, "mov.b64", 2, R(b), R(u));
  pe_ins(e, "sub.s64", 3, R(b), R(b), I(SQRT_HALF));
  pe_ins(e, "shr.s64", 3, R(k), R(b), I(52));
  pe_ins(e, "and.b64", 3, R(mb), R(b), I(0x000FFFFFFFFFFFFFLL));
  pe_ins(e, "add.s64", 3, R(mb), R(mb), I(SQRT_HALF));
  pe_ins(e, "mov.b64", 2, R(m), R(mb));
  pe_ins(e, "sub.rn.f64", 3, R(f), R(m), F64(1.0));
  preg t = log1p_series(e, true, f, c, 11);                       /* ln m */
  pe_ins(e, "cvt.rn.f64.s64", 2, R(kd), R(k));
  pe_ins(e, "fma.rn.f64", 4, R(res), R(kd), F64(LN2_LO), R(t));
  pe_ins(e, "fma.rn.f64", 4, R(res), R(kd), F64(LN2_HI), R(res));
  return res;
}

/* f64 of an f32 clamped to [lo, hi], NaN kept. */
static preg clamp_up(pe *e, preg x, double lo, double hi) {
  preg c = f32(e), xd = fd(e);
  pe_ins(e, "max.NaN.f32", 3, R(c), R(x), F32(lo));
  pe_ins(e, "min.NaN.f32", 3, R(c), R(c), F32(hi));
  pe_ins(e, "cvt.f64.f32", 2, R(xd), R(c));
  return xd;
}

/* d = x where |x| < 2^-26 (the function is x to f32 precision there; keeps -0). */
static void keep_tiny(pe *e, preg d, preg x, preg v) {
  preg ax = f32(e), tiny = prd(e);
  pe_ins(e, "abs.f32", 2, R(ax), R(x));
  pe_ins(e, "setp.lt.f32", 3, R(tiny), R(ax), F32(0x1p-26));
  pe_ins(e, "selp.f32", 4, R(d), R(x), R(v), R(tiny));
}

/* -- sin, cos ------------------------------------------------------------------------------ */

/* The first 224 bits of 2/pi after 32 zero bits, most significant first. */
static const uint32_t two_over_pi[8] = { 0, 0xA2F9836E, 0x4E441529, 0xFC2757D1,
                                         0xF534DDC0, 0xDB629599, 0x3C439041, 0xFE5163AB };

/* |x| = (q + r / (pi/2)) * pi/2 with |r| <= pi/4 (r an f64, q a b32 quadrant);
** xb holds x's bits.  |x| < pi/4 (and denormals) give r = |x|, q = 0. */
static void reduce_pio2(pe *e, preg x, preg xb, preg *rr, preg *qq) {
  preg ab = b32(e), be = b32(e), m = b32(e), ps = b32(e), wi = b32(e), sh = b32(e);
  pe_ins(e, "and.b32", 3, R(ab), R(xb), I(0x7fffffff));
  pe_ins(e, "shr.u32", 3, R(be), R(ab), I(23));
  pe_ins(e, "and.b32", 3, R(m), R(ab), I(0x7fffff));
  pe_ins(e, "or.b32", 3, R(m), R(m), I(0x800000));
  /* x = m 2^(be-150); with E = be - 150 the bits of 2/pi from weight 2^-(E-1)
  ** on give x 2/pi mod 4 in 2 integer and 94 fraction bits: table bit be - 120 */
  pe_ins(e, "sub.s32", 3, R(ps), R(be), I(120));
  pe_ins(e, "max.s32", 3, R(ps), R(ps), I(0));
  pe_ins(e, "shr.u32", 3, R(wi), R(ps), I(5));
  pe_ins(e, "and.b32", 3, R(sh), R(ps), I(31));
  preg is[5] = { 0 };
  for (int j = 1; j <= 4; j++) {
    is[j] = prd(e);
    pe_ins(e, "setp.eq.u32", 3, R(is[j]), R(wi), I(j));
  }
  preg t[4];
  for (int j = 0; j < 4; j++) {          /* t[j] = table[wi + j] */
    t[j] = b32(e);
    pe_ins(e, "mov.b32", 2, R(t[j]), U(two_over_pi[j]));
    for (int w = 1; w <= 4; w++) pe_ins(e, "selp.b32", 4, R(t[j]), U(two_over_pi[j + w]), R(t[j]), R(is[w]));
  }
  preg w[3], pw[3];
  for (int j = 0; j < 3; j++) {
    w[j] = b32(e);
    pe_ins(e, "shf.l.wrap.b32", 4, R(w[j]), R(t[j + 1]), R(t[j]), R(sh));
    pw[j] = b64(e);
    pe_ins(e, "mul.wide.u32", 3, R(pw[j]), R(m), R(w[j]));
  }
  /* N = m * (w0:w1:w2) mod 2^96 = top:lo */
  preg lo = b64(e), t64 = b64(e), cy = prd(e), top = b32(e), h = b32(e), c32 = b32(e);
  pe_ins(e, "shl.b64", 3, R(t64), R(pw[1]), I(32));
  pe_ins(e, "add.s64", 3, R(lo), R(pw[2]), R(t64));
  pe_ins(e, "setp.lt.u64", 3, R(cy), R(lo), R(pw[2]));
  pe_ins(e, "cvt.u32.u64", 2, R(top), R(pw[0]));
  pe_ins(e, "shr.u64", 3, R(t64), R(pw[1]), I(32));
  pe_ins(e, "cvt.u32.u64", 2, R(h), R(t64));
  pe_ins(e, "add.s32", 3, R(top), R(top), R(h));
  pe_ins(e, "selp.b32", 4, R(c32), I(1), I(0), R(cy));
  pe_ins(e, "add.s32", 3, R(top), R(top), R(c32));
  /* the fraction as a signed 64-bit number of 2^-64 quadrants, rounded to the nearest quadrant */
  preg fr = b64(e), q = b32(e), r = fd(e);
  pe_ins(e, "cvt.u64.u32", 2, R(fr), R(top));
  pe_ins(e, "shl.b64", 3, R(fr), R(fr), I(34));
  pe_ins(e, "shr.u64", 3, R(t64), R(lo), I(30));
  pe_ins(e, "or.b64", 3, R(fr), R(fr), R(t64));
  pe_ins(e, "add.s32", 3, R(q), R(top), I(0x20000000));
  pe_ins(e, "shr.u32", 3, R(q), R(q), I(30));
  pe_ins(e, "cvt.rn.f64.s64", 2, R(r), R(fr));
  pe_ins(e, "mul.rn.f64", 3, R(r), R(r), F64(1.5707963267948966 * 0x1p-64));
  /* small arguments need no reduction */
  preg xd = fd(e), small = prd(e);
  pe_ins(e, "cvt.f64.f32", 2, R(xd), R(x));
  pe_ins(e, "abs.f64", 2, R(xd), R(xd));
  pe_ins(e, "setp.lt.f64", 3, R(small), R(xd), F64(PI_4));
  pe_ins(e, "selp.f64", 4, R(r), R(xd), R(r), R(small));
  pe_ins(e, "selp.b32", 4, R(q), I(0), R(q), R(small));
  *rr = r;
  *qq = q;
}

static void f32_sincos(pe *e, preg d, preg x, bool cosine, bool approx) {
  if (approx) { pe_ins(e, cosine ? "cos.approx.f32" : "sin.approx.f32", 2, R(d), R(x)); return; }
  static const double cs[] = { 1.0 / 6227020800, -1.0 / 39916800, 1.0 / 362880, -1.0 / 5040, 1.0 / 120, -1.0 / 6 };
  static const double cc[] = { 1.0 / 87178291200, -1.0 / 479001600, 1.0 / 3628800, -1.0 / 40320, 1.0 / 720,
                               -1.0 / 24, 0.5 };
  preg xb = b32(e), r, q;
  pe_ins(e, "mov.b32", 2, R(xb), R(x));
  reduce_pio2(e, x, xb, &r, &q);
  if (cosine) pe_ins(e, "add.s32", 3, R(q), R(q), I(1));   /* cos x = sin(x + pi/2) */
  preg z = fd(e), sn = fd(e), cn = fd(e), v = fd(e), nv = fd(e);
  pe_ins(e, "mul.rn.f64", 3, R(z), R(r), R(r));
  preg ps = ptx_horner(e, true, z, cs, 6);
  pe_ins(e, "mul.rn.f64", 3, R(ps), R(ps), R(z));
  pe_ins(e, "fma.rn.f64", 4, R(sn), R(ps), R(r), R(r));           /* sin r = r + r z p */
  preg pc = ptx_horner(e, true, z, cc, 7);
  pe_ins(e, "neg.f64", 2, R(pc), R(pc));
  pe_ins(e, "fma.rn.f64", 4, R(cn), R(pc), R(z), F64(1.0));       /* cos r = 1 - z p */
  preg qb = b32(e), odd = prd(e), neg = prd(e);
  pe_ins(e, "and.b32", 3, R(qb), R(q), I(1));
  pe_ins(e, "setp.ne.u32", 3, R(odd), R(qb), I(0));
  pe_ins(e, "selp.f64", 4, R(v), R(cn), R(sn), R(odd));
  pe_ins(e, "and.b32", 3, R(qb), R(q), I(2));
  pe_ins(e, "setp.ne.u32", 3, R(neg), R(qb), I(0));
  if (!cosine) {   /* sin(-x) = -sin x */
    preg sg = prd(e);
    pe_ins(e, "setp.lt.s32", 3, R(sg), R(xb), I(0));
    pe_ins(e, "xor.pred", 3, R(neg), R(neg), R(sg));
  }
  pe_ins(e, "neg.f64", 2, R(nv), R(v));
  pe_ins(e, "selp.f64", 4, R(v), R(nv), R(v), R(neg));
  preg nf = prd(e), ab = b32(e);
  pe_ins(e, "and.b32", 3, R(ab), R(xb), I(0x7fffffff));
  pe_ins(e, "setp.ge.u32", 3, R(nf), R(ab), I(0x7f800000));      /* inf, NaN -> NaN */
  pe_ins(e, "selp.f64", 4, R(v), F64(NAN), R(v), R(nf));
  pe_ins(e, "cvt.rn.f32.f64", 2, R(d), R(v));
}

/* -- erf ------------------------------------------------------------------------------------ */

/* erf(x) / x as a polynomial in x^2 on [0, 1.5^2]. */
static const double erf_small[] = {
  3.4001814648600667e-11, -9.0700811693689203e-10, 1.3706590037368892e-08, -1.6113448461902576e-07,
  1.6422251959182074e-06, -1.4921278963026088e-05, 0.00012055002553647288, -0.00085483102079578937,
  0.0052239770742979379, -0.026866170537346454, 0.11283791669857593, -0.37612638903139761, 1.1283791670955097 };
/* erfc(x) e^(x^2) as a polynomial in (x - 2.75) / 1.25 on [1.5, 4]. */
static const double erf_big[] = {
  3.822612899828659e-09, -1.4139367877918918e-08, 3.5194817234185383e-08, -1.2386143629326829e-07,
  4.5593297617191331e-07, -1.5507412161972628e-06, 5.1397210836389047e-06, -1.6740596687846491e-05,
  5.3287771512390927e-05, -0.00016545696635596408, 0.00050041880954565, -0.001471542441297013,
  0.0041981979654455871, -0.011590503717720508, 0.030872801542622844, -0.07904704695052972,
  0.19366209627906869 };
/* the same at f32 precision (approx_math): degrees 7 and 9 */
static const double erf_small32[] = {
  -5.7243383480862705e-06, 9.2523425209955376e-05, -0.00080611124141965335, 0.0051751854067774699,
  -0.026839085239348744, 0.11283043939400797, -0.37612559552821401, 1.1283791531735015 };
static const double erf_big32[] = {
  -2.1197961481335447e-05, 6.8207158132663247e-05, -0.00016138470203228824, 0.00048675649731691744,
  -0.0014730252304377997, 0.0042031773545619603, -0.011590316739947542, 0.030872173393377646,
  -0.079047050696349694, 0.19366210886390731 };

static void f32_erf(pe *e, preg d, preg x, bool approx) {
  bool w = !approx;
  const char *t = w ? "f64" : "f32";
  char opc[32];
#define OPC(fmt) (snprintf(opc, sizeof opc, fmt, t), opc)
  po (*K)(double) = w ? F64 : F32;
  preg xv = x, a = w ? fd(e) : f32(e), z = w ? fd(e) : f32(e), u = w ? fd(e) : f32(e);
  preg small = w ? fd(e) : f32(e), ex = w ? fd(e) : f32(e), big = w ? fd(e) : f32(e), r = w ? fd(e) : f32(e);
  if (w) { xv = fd(e); pe_ins(e, "cvt.f64.f32", 2, R(xv), R(x)); }
  pe_ins(e, OPC("abs.%s"), 2, R(a), R(xv));
  pe_ins(e, OPC("mul.rn.%s"), 3, R(z), R(a), R(a));
  preg p = w ? ptx_horner(e, true, z, erf_small, 13) : ptx_horner(e, false, z, erf_small32, 8);
  pe_ins(e, OPC("mul.rn.%s"), 3, R(small), R(p), R(a));
  pe_ins(e, OPC("add.rn.%s"), 3, R(u), R(a), K(-2.75));
  pe_ins(e, OPC("mul.rn.%s"), 3, R(u), R(u), K(0.8));
  preg g = w ? ptx_horner(e, true, u, erf_big, 17) : ptx_horner(e, false, u, erf_big32, 10);
  if (w) {
    preg mz = fd(e), s, em1;
    pe_ins(e, "min.f64", 3, R(mz), R(z), F64(300.0));
    pe_ins(e, "neg.f64", 2, R(mz), R(mz));
    d_exp(e, mz, &s, &em1);
    pe_ins(e, "fma.rn.f64", 4, R(ex), R(s), R(em1), R(s));
  } else {
    pe_ins(e, "mul.f32", 3, R(ex), R(z), F32(-LOG2E));
    pe_ins(e, "ex2.approx.f32", 2, R(ex), R(ex));
  }
  pe_ins(e, OPC("neg.%s"), 2, R(g), R(g));
  pe_ins(e, OPC("fma.rn.%s"), 4, R(big), R(g), R(ex), K(1.0));   /* 1 - erfc */
  preg lt = prd(e), nan = prd(e);
  pe_ins(e, OPC("setp.lt.%s"), 3, R(lt), R(a), K(1.5));
  pe_ins(e, OPC("selp.%s"), 4, R(r), R(small), R(big), R(lt));
  pe_ins(e, OPC("setp.lt.%s"), 3, R(lt), R(a), K(4.0));
  pe_ins(e, OPC("selp.%s"), 4, R(r), R(r), K(1.0), R(lt));        /* 1 from 4 on, and for inf */
  pe_ins(e, OPC("testp.notanumber.%s"), 2, R(nan), R(xv));
  pe_ins(e, OPC("selp.%s"), 4, R(r), R(xv), R(r), R(nan));
  pe_ins(e, OPC("copysign.%s"), 3, R(r), R(xv), R(r));
#undef OPC
  if (w) pe_ins(e, "cvt.rn.f32.f64", 2, R(d), R(r));
  else pe_ins(e, "mov.f32", 2, R(d), R(r));
}

/* -- expm1, log1p, logistic ----------------------------------------------------------------------- */

static void f32_expm1(pe *e, preg d, preg x, bool approx) {
  preg v = f32(e);
  if (approx) {   /* |x| < 0.5: Taylor to x^9; else ex2 - 1 */
    static const double c[] = { 1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5 };
    preg q = ptx_horner(e, false, x, c, 8), x2 = f32(e), sm = f32(e), bg = f32(e), ax = f32(e), lt = prd(e);
    pe_ins(e, "mul.f32", 3, R(x2), R(x), R(x));
    pe_ins(e, "fma.rn.f32", 4, R(sm), R(q), R(x2), R(x));
    pe_ins(e, "mul.f32", 3, R(bg), R(x), F32(LOG2E));
    pe_ins(e, "ex2.approx.f32", 2, R(bg), R(bg));
    pe_ins(e, "sub.f32", 3, R(bg), R(bg), F32(1.0));
    pe_ins(e, "abs.f32", 2, R(ax), R(x));
    pe_ins(e, "setp.lt.f32", 3, R(lt), R(ax), F32(0.5));
    pe_ins(e, "selp.f32", 4, R(d), R(sm), R(bg), R(lt));
    return;
  }
  preg xd = clamp_up(e, x, -200, 200), s, p, sm1 = fd(e), r = fd(e);
  d_exp(e, xd, &s, &p);
  pe_ins(e, "sub.rn.f64", 3, R(sm1), R(s), F64(1.0));
  pe_ins(e, "fma.rn.f64", 4, R(r), R(s), R(p), R(sm1));             /* 2^k (1 + p) - 1 */
  pe_ins(e, "cvt.rn.f32.f64", 2, R(v), R(r));
  keep_tiny(e, d, x, v);
}

static void f32_log1p(pe *e, preg d, preg x, bool approx) {
  preg u32 = f32(e), sp = f32(e), v = f32(e);
  pe_ins(e, "add.rn.f32", 3, R(u32), R(x), F32(1.0));
  pe_ins(e, "lg2.approx.f32", 2, R(sp), R(u32));    /* -inf at -1, NaN below, inf, NaN */
  if (approx) {   /* |x| < 0.25: 2 atanh(x / (2 + x)) by its series; else lg2(1 + x) ln 2 */
    static const double c[] = { 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3 };
    preg ax = f32(e), lt = prd(e);
    preg t = log1p_series(e, false, x, c, 4);
    pe_ins(e, "mul.f32", 3, R(sp), R(sp), F32(0.6931471805599453));
    pe_ins(e, "abs.f32", 2, R(ax), R(x));
    pe_ins(e, "setp.lt.f32", 3, R(lt), R(ax), F32(0.25));
    pe_ins(e, "selp.f32", 4, R(d), R(t), R(sp), R(lt));
    return;
  }
  preg xd = fd(e), u = fd(e), ok = prd(e), fin = prd(e);
  pe_ins(e, "cvt.f64.f32", 2, R(xd), R(x));
  pe_ins(e, "add.rn.f64", 3, R(u), R(xd), F64(1.0));   /* exact for |x| >= 2^-26 below 2^26 */
  preg l = d_log(e, u);
  pe_ins(e, "cvt.rn.f32.f64", 2, R(v), R(l));
  pe_ins(e, "setp.gt.f64", 3, R(ok), R(u), F64(0.0));
  pe_ins(e, "setp.lt.f64", 3, R(fin), R(u), F64(INFINITY));
  pe_ins(e, "and.pred", 3, R(ok), R(ok), R(fin));
  pe_ins(e, "selp.f32", 4, R(v), R(v), R(sp), R(ok));
  keep_tiny(e, d, x, v);
}

static void f32_logistic(pe *e, preg d, preg x, bool approx) {
  if (approx) {   /* t = e^-|x|: 1 / (1 + t) for x >= 0, t / (1 + t) below (no overflow) */
    preg t = f32(e), q = f32(e), tq = f32(e), neg = prd(e);
    pe_ins(e, "abs.f32", 2, R(t), R(x));
    pe_ins(e, "mul.f32", 3, R(t), R(t), F32(-LOG2E));
    pe_ins(e, "ex2.approx.f32", 2, R(t), R(t));
    pe_ins(e, "add.f32", 3, R(q), R(t), F32(1.0));
    pe_ins(e, "rcp.approx.f32", 2, R(q), R(q));
    pe_ins(e, "mul.f32", 3, R(tq), R(t), R(q));
    pe_ins(e, "setp.lt.f32", 3, R(neg), R(x), F32(0.0));
    pe_ins(e, "selp.f32", 4, R(d), R(tq), R(q), R(neg));
    return;
  }
  preg xd = clamp_up(e, x, -200, 200), s, p, den = fd(e);
  pe_ins(e, "neg.f64", 2, R(xd), R(xd));
  d_exp(e, xd, &s, &p);
  pe_ins(e, "fma.rn.f64", 4, R(den), R(s), R(p), R(s));
  pe_ins(e, "add.rn.f64", 3, R(den), R(den), F64(1.0));
  pe_ins(e, "rcp.rn.f64", 2, R(den), R(den));
  pe_ins(e, "cvt.rn.f32.f64", 2, R(d), R(den));
}

/* -- pow --------------------------------------------------------------------------------------------- */

/* d = x^y (f32): |x|^y from exp(y ln|x|), then C99's signs and special cases. */
void ptx_math_pow(pe *e, preg d, preg x, preg y, bool approx) {
  preg mag = f32(e);
  if (approx) {
    preg ax = f32(e);
    pe_ins(e, "abs.f32", 2, R(ax), R(x));
    pe_ins(e, "lg2.approx.f32", 2, R(ax), R(ax));
    pe_ins(e, "mul.f32", 3, R(ax), R(ax), R(y));
    pe_ins(e, "ex2.approx.f32", 2, R(mag), R(ax));    /* y lg2|x| NaN -> NaN */
  } else {
    preg xd = fd(e), yd = fd(e), a = fd(e), lsp = fd(e), t = fd(e), s, p, r = fd(e);
    preg ok = prd(e), fin = prd(e), zero = prd(e), nan = prd(e);
    pe_ins(e, "cvt.f64.f32", 2, R(xd), R(x));
    pe_ins(e, "cvt.f64.f32", 2, R(yd), R(y));
    pe_ins(e, "abs.f64", 2, R(a), R(xd));
    preg l = d_log(e, a);
    pe_ins(e, "setp.gt.f64", 3, R(ok), R(a), F64(0.0));
    pe_ins(e, "setp.lt.f64", 3, R(fin), R(a), F64(INFINITY));
    pe_ins(e, "and.pred", 3, R(ok), R(ok), R(fin));
    pe_ins(e, "setp.eq.f64", 3, R(zero), R(a), F64(0.0));
    pe_ins(e, "selp.f64", 4, R(lsp), F64(-INFINITY), R(a), R(zero));   /* ln 0 = -inf; inf, NaN stay */
    pe_ins(e, "selp.f64", 4, R(l), R(l), R(lsp), R(ok));
    pe_ins(e, "mul.rn.f64", 3, R(t), R(yd), R(l));
    pe_ins(e, "testp.notanumber.f64", 2, R(nan), R(t));
    pe_ins(e, "max.f64", 3, R(t), R(t), F64(-300.0));
    pe_ins(e, "min.f64", 3, R(t), R(t), F64(300.0));
    d_exp(e, t, &s, &p);
    pe_ins(e, "fma.rn.f64", 4, R(r), R(s), R(p), R(s));
    pe_ins(e, "selp.f64", 4, R(r), F64(NAN), R(r), R(nan));
    pe_ins(e, "cvt.rn.f32.f64", 2, R(mag), R(r));
  }
  /* y an integer (inf counts as even), odd; x's sign bit; x negative and finite */
  preg yt = f32(e), h = f32(e), yint = prd(e), odd = prd(e), xs = prd(e), p1 = prd(e), p2 = prd(e);
  preg xb = b32(e), nm = f32(e);
  pe_ins(e, "cvt.rzi.f32.f32", 2, R(yt), R(y));
  pe_ins(e, "setp.eq.f32", 3, R(yint), R(yt), R(y));
  pe_ins(e, "mul.rn.f32", 3, R(h), R(y), F32(0.5));
  pe_ins(e, "cvt.rzi.f32.f32", 2, R(yt), R(h));
  pe_ins(e, "setp.ne.f32", 3, R(odd), R(yt), R(h));
  pe_ins(e, "and.pred", 3, R(odd), R(odd), R(yint));
  pe_ins(e, "mov.b32", 2, R(xb), R(x));
  pe_ins(e, "setp.lt.s32", 3, R(xs), R(xb), I(0));
  pe_ins(e, "and.pred", 3, R(xs), R(xs), R(odd));
  pe_ins(e, "neg.f32", 2, R(nm), R(mag));
  pe_ins(e, "selp.f32", 4, R(mag), R(nm), R(mag), R(xs));               /* odd y keeps x's sign */
  pe_ins(e, "setp.lt.f32", 3, R(p1), R(x), F32(0.0));
  pe_ins(e, "setp.gt.f32", 3, R(p2), R(x), F32(-INFINITY));
  pe_ins(e, "and.pred", 3, R(p1), R(p1), R(p2));
  pe_ins(e, "not.pred", 2, R(p2), R(yint));
  pe_ins(e, "and.pred", 3, R(p1), R(p1), R(p2));
  pe_ins(e, "selp.f32", 4, R(mag), F32(NAN), R(mag), R(p1));            /* negative ^ non-integer */
  /* pow(x, +-0) = pow(1, y) = pow(-1, +-inf) = 1 */
  preg one = prd(e), ay = f32(e), ax = f32(e);
  pe_ins(e, "setp.eq.f32", 3, R(one), R(y), F32(0.0));
  pe_ins(e, "setp.eq.or.f32", 4, R(one), R(x), F32(1.0), R(one));
  pe_ins(e, "abs.f32", 2, R(ay), R(y));
  pe_ins(e, "abs.f32", 2, R(ax), R(x));
  pe_ins(e, "setp.eq.f32", 3, R(p1), R(ay), F32(INFINITY));
  pe_ins(e, "setp.eq.and.f32", 4, R(p1), R(ax), F32(1.0), R(p1));
  pe_ins(e, "or.pred", 3, R(one), R(one), R(p1));
  pe_ins(e, "selp.f32", 4, R(d), F32(1.0), R(mag), R(one));
}

/* d = f(x) for one f32 element; false when `code` is not one of these functions. */
bool ptx_math_unary(pe *e, int code, preg d, preg x, bool approx) {
  switch (code) {
  case IR_sin: f32_sincos(e, d, x, false, approx); return true;
  case IR_cos: f32_sincos(e, d, x, true, approx); return true;
  case IR_erf: f32_erf(e, d, x, approx); return true;
  case IR_expm1: f32_expm1(e, d, x, approx); return true;
  case IR_log1p: f32_log1p(e, d, x, approx); return true;
  case IR_logistic: f32_logistic(e, d, x, approx); return true;
  default: return false;
  }
}
