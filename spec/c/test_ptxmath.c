/*
** test_ptxmath.c -- the PTX the emitter writes for one element of each
** accurate math function, run by the CPU evaluator (ptx_eval.c) on many
** inputs against long double references, with the ulp bounds asserted:
** every f64 function (random inputs over wide ranges, special values,
** arguments next to multiples of pi/2, the overflow and underflow edges,
** pow near overflow and near 1), and the f32/f16/bf16 forms whose README
** bound is 1 ulp (all 65536 f16 and bf16 inputs of the unary ones).
** Random inputs are fresh each run (MGPU_TEST_SEED=n repeats one);
** MGPU_MATH_VERBOSE=1 prints every measured bound.
*/
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <time.h>

#include "../../src/ptx/ptx.h"
#include "ptx_eval.h"
#include "test.h"

/* -- One function's PTX ------------------------------------------------------------------ */

typedef struct fprog { pxe_prog *p; preg d, a, b; } fprog;

/* An emitter writing into its own body, with no kernel: enough for one op's code. */
static void emitter(pe *e, mem_alloc *A, diag *D) {
  mem_alloc_default(A);
  memset(e, 0, sizeof *e);
  diag_clear(D);
  e->d = D;
  sb_init(&e->body, A);
}

/* Emit code (dtype dt, one element; binary: two operands) and compile it for the evaluator. */
static bool emit(int code, int dt, bool binary, bool approx, fprog *f, char *text, size_t textlen) {
  mem_alloc A;
  diag D;
  pe e;
  jmp_buf jb;
  emitter(&e, &A, &D);
  D.jmp = &jb;
  volatile bool ok = false;
  f->p = NULL;
  if (!setjmp(jb)) {
    int cls = pe_cls(dt);
    f->a = pe_reg(&e, cls);
    f->b = binary ? pe_reg(&e, cls) : 0;
    f->d = pe_reg(&e, cls);
    if (binary) ptx_float_binary(&e, code, dt, f->d, f->a, f->b, approx);
    else ptx_float_unary(&e, code, dt, f->d, f->a, approx);
    char err[700];
    if (text) snprintf(text, textlen, "%s", sb_str(&e.body));
    f->p = pxe_compile(sb_str(&e.body), err, sizeof err);
    if (!f->p) fprintf(stderr, "%s: %s\n", ir_optab[code].name, err);
    ok = f->p != NULL;
  } else {
    fprintf(stderr, "emit %s: %s\n", ir_optab[code].name, D.msg);
  }
  sb_free(&e.body);
  return ok;
}

/* -- Formats, bits, errors ------------------------------------------------------------------ */

typedef struct fmt { int dt, prec, emin; } fmt;
static const fmt F64_ = { MGPU_F64, 53, -1022 }, F32_ = { MGPU_F32, 24, -126 }, F16_ = { MGPU_F16, 11, -14 },
                 BF16_ = { MGPU_BF16, 8, -126 };

static uint64_t bits_of(const fmt *f, double x) {
  if (f->dt == MGPU_F64) { uint64_t u; memcpy(&u, &x, 8); return u; }
  if (f->dt == MGPU_F32) { float g = (float)x; uint32_t u; memcpy(&u, &g, 4); return u; }
  unsigned char raw[2];
  dt_store(f->dt, raw, x);
  return (uint64_t)raw[0] | (uint64_t)raw[1] << 8;
}

static double value_of(const fmt *f, uint64_t b) {
  if (f->dt == MGPU_F64) { double x; memcpy(&x, &b, 8); return x; }
  if (f->dt == MGPU_F32) { float g; uint32_t u = (uint32_t)b; memcpy(&g, &u, 4); return g; }
  unsigned char raw[2] = { (unsigned char)b, (unsigned char)(b >> 8) };
  return dt_load(f->dt, raw);
}

/* |got - ref| in ulps of the format at ref; specials (NaN, inf, overflow, zero signs) exact or infinite error. */
static double ulp_err(const fmt *f, double got, long double ref) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got) ? 0 : INFINITY;
  double rr = f->dt == MGPU_F64 ? (double)ref : f->dt == MGPU_F32 ? (float)ref : dt_round(f->dt, (double)ref);
  if (isinf(rr) || isinf(got)) return got == rr ? 0 : INFINITY;
  if (rr == 0 && got == 0) return signbit(rr) == signbit(got) ? 0 : INFINITY;
  int ex = ref == 0 ? f->emin : ilogbl(ref);
  if (ex < f->emin) ex = f->emin;
  return (double)(fabsl((long double)got - ref) / ldexpl(1, ex - f->prec + 1));
}

/* -- Inputs --------------------------------------------------------------------------------- */

static uint64_t rng;
static uint64_t rnd64(void) {            /* splitmix64 */
  uint64_t z = (rng += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static double unif(double lo, double hi) { return lo + (hi - lo) * (double)(rnd64() >> 11) * 0x1p-53; }
static double sgn(double x) { return rnd64() & 1 ? -x : x; }
/* |x| = 2^e with e uniform in [elo, ehi), either sign */
static double logmag(double elo, double ehi) { return sgn(exp2(unif(elo, ehi))); }
/* any finite double (or float): uniform bits */
static double anybits(const fmt *f) {
  for (;;) {
    double x = value_of(f, f->dt == MGPU_F64 ? rnd64() : rnd64() & 0xffffffffu);
    if (isfinite(x)) return x;
  }
}

static const double specials[] = { 0.0, -0.0, INFINITY, -INFINITY, NAN, 1, -1, 0.5, -0.5, 2, -2, 3, -3, 0.1,
                                   DBL_MIN, -DBL_MIN, 0x1p-1074, -0x1p-1074, 0x1.8p-1060, DBL_MAX, -DBL_MAX,
                                   FLT_MIN, FLT_MAX, 0x1p-149, 1e-300, -1e-300, 1e300, -1e300, 0x1p-54, 0x1p-27 };
#define NSPEC ((int)(sizeof specials / sizeof specials[0]))

/* -- Checks --------------------------------------------------------------------------------- */

typedef long double (*ref1)(long double);
typedef long double (*ref2)(long double, long double);
typedef double (*gen1)(const fmt *f, int i);

static long double logistic_l(long double x) { return 1 / (1 + expl(-x)); }

static bool verbose(void) { const char *v = getenv("MGPU_MATH_VERBOSE"); return v && *v && *v != '0'; }

typedef struct worst { double err, x, y, got; long n; } worst;

static void note(worst *w, double err, double x, double y, double got) {
  w->n++;
  if (!(err <= w->err)) { w->err = err; w->x = x; w->y = y; w->got = got; }
}

static void report(const char *what, const fmt *f, const worst *w, double bound, size_t nins) {
  bool bad = !(w->err <= bound);
  if (bad || verbose())
    fprintf(bad ? stderr : stdout, "  %-9s %-4s max %.4f ulp (bound %.2g) over %ld inputs, %zu instructions; worst at %a %a -> %a\n",
            what, dt_name(f->dt), w->err, bound, w->n, nins, w->x, w->y, w->got);
}

/* f(x) for the specials, then n inputs from gen; bound in ulps.  dt f16/bf16 with n < 0: every bit pattern. */
static void check1(int code, const fmt *f, ref1 ref, gen1 gen, int n, double bound) {
  fprog p;
  CHECK(emit(code, f->dt, false, false, &p, NULL, 0));
  if (!p.p) return;
  worst w = { 0, 0, 0, 0, 0 };
  int total = n < 0 ? 65536 : NSPEC + n;
  for (int i = 0; i < total; i++) {
    double x = n < 0 ? value_of(f, (uint64_t)i) : i < NSPEC ? specials[i] : gen(f, i - NSPEC);
    uint64_t xb = bits_of(f, x);
    x = value_of(f, xb);
    pxe_set(p.p, p.a, xb);
    pxe_run(p.p);
    double got = value_of(f, pxe_get(p.p, p.d));
    note(&w, ulp_err(f, got, ref(x)), x, 0, got);
  }
  CHECK(w.err <= bound);
  report(ir_optab[code].name, f, &w, bound, pxe_count(p.p));
  pxe_free(p.p);
}

/* -- Generators ----------------------------------------------------------------------------- */

static double g_exp(const fmt *f, int i) {
  switch (i % 5) {
  case 0: return unif(-750, 715);
  case 1: return logmag(-60, 3);
  case 2: return unif(709.7, 709.8);                  /* overflow edge */
  case 3: return unif(-746, -707);                    /* subnormal results */
  default: return nearbyint(unif(-1000, 1000)) * 0.6931471805599453 + unif(-1e-9, 1e-9);
  }
}
static double g_exp2(const fmt *f, int i) {
  switch (i % 4) {
  case 0: return unif(-1080, 1030);
  case 1: return logmag(-60, 3);
  case 2: return unif(1023.5, 1024.5);
  default: return unif(-1075.5, -1021);
  }
}
static double g_log(const fmt *f, int i) {
  switch (i % 4) {
  case 0: return fabs(anybits(f));
  case 1: return 1 + sgn(exp2(unif(-60, -1)));         /* next to 1 */
  case 2: return unif(0.5, 2);
  default: return anybits(f);                          /* negatives too */
  }
}
static double g_log1p(const fmt *f, int i) {
  switch (i % 4) {
  case 0: return logmag(-70, 0);
  case 1: return -1 + exp2(unif(-60, -1));
  case 2: return unif(-1, 20);
  default: return fabs(anybits(f));
  }
}
static double g_expm1(const fmt *f, int i) {
  switch (i % 3) {
  case 0: return unif(-60, 710);
  case 1: return logmag(-70, 2);
  default: return unif(-2, 2);
  }
}
static double g_sig(const fmt *f, int i) {            /* tanh, logistic, erf */
  switch (i % 4) {
  case 0: return unif(-8, 8);
  case 1: return logmag(-70, 3);
  case 2: return unif(-800, 800);
  default: return unif(-1, 1);
  }
}
static double g_sincos(const fmt *f, int i) {
  switch (i % 5) {
  case 0: return anybits(f);
  case 1: return unif(-10, 10);
  case 2: return logmag(-30, 60);
  case 3: {                                            /* next to a multiple of pi/2 */
    long double k = nearbyintl((long double)exp2(unif(0, f->dt == MGPU_F64 ? 60 : 30)));
    return f->dt == MGPU_F64 ? (double)(k * 1.5707963267948966192313216916397514L)
                             : (double)(float)(k * 1.5707963267948966192313216916397514L);
  }
  default: return f->dt == MGPU_F64 ? 0x1.6ac5b262ca1ffp+849 * (1 + (double)(i % 7) * 0x1p-52) : anybits(f);
  }
}

/* -- pow ------------------------------------------------------------------------------------- */

static void check_pow(const fmt *f, int n, double bound) {
  fprog p;
  CHECK(emit(IR_pow, f->dt, true, false, &p, NULL, 0));
  if (!p.p) return;
  worst w = { 0, 0, 0, 0, 0 };
  double lim = f->dt == MGPU_F64 ? 709 : 88;
  for (int i = 0; i < NSPEC * NSPEC + n; i++) {
    double x, y;
    if (i < NSPEC * NSPEC) {
      x = specials[i / NSPEC];
      y = specials[i % NSPEC];
    } else {
      switch (i % 5) {
      case 0: x = unif(0, 10); y = unif(-20, 20); break;
      case 1: x = fabs(logmag(-300, 300)); y = unif(-lim, lim) / log(x); break;    /* any magnitude of result */
      case 2: x = -unif(0, 10); y = nearbyint(unif(-30, 30)); break;
      case 3: x = 1 + sgn(exp2(unif(-40, -3))); y = unif(-lim, lim) / log(x); break;   /* near 1, huge y */
      default: x = fabs(logmag(-5, 5)); y = unif(-1.05, 1.05) * (f->dt == MGPU_F64 ? 1024 : 128) / log2(x); break;
      }
    }
    uint64_t xb = bits_of(f, x), yb = bits_of(f, y);
    x = value_of(f, xb);
    y = value_of(f, yb);
    pxe_set(p.p, p.a, xb);
    pxe_set(p.p, p.b, yb);
    pxe_run(p.p);
    double got = value_of(f, pxe_get(p.p, p.d));
    note(&w, ulp_err(f, got, powl(x, y)), x, y, got);
  }
  CHECK(w.err <= bound);
  report("pow", f, &w, bound, pxe_count(p.p));
  pxe_free(p.p);
}

/* -- The tests --------------------------------------------------------------------------------- */

static void seed(void) {
  const char *s = getenv("MGPU_TEST_SEED");
  rng = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
  if (verbose()) printf("  seed %llu\n", (unsigned long long)rng);
}

/* The references are long double; where it is no wider than double (valgrind's
   x87 emulation, for one) they cannot judge 1-ulp results, so the checks stand down. */
static bool references_exact(const char *test) {
  volatile long double one = 1.0L, tiny = 0x1p-60L;
  if (one + tiny != one) return true;
  printf("  %s: skipped, long double is no wider than double here (under valgrind?)\n", test);
  return false;
}

void test_ptx_math64(void) {
  if (!references_exact("ptx_math64")) return;
  seed();
  uint64_t s0 = rng;
  int n = 100000;
  check1(IR_exp, &F64_, expl, g_exp, n, 1);
  check1(IR_exp2, &F64_, exp2l, g_exp2, n, 1);
  check1(IR_expm1, &F64_, expm1l, g_expm1, n, 1);
  check1(IR_log, &F64_, logl, g_log, n, 1);
  check1(IR_log2, &F64_, log2l, g_log, n, 1);
  check1(IR_log1p, &F64_, log1pl, g_log1p, n, 1);
  check1(IR_sin, &F64_, sinl, g_sincos, 2 * n, 1);
  check1(IR_cos, &F64_, cosl, g_sincos, 2 * n, 1);
  check1(IR_tanh, &F64_, tanhl, g_sig, n, 2);
  check1(IR_logistic, &F64_, logistic_l, g_sig, n, 2);
  check1(IR_erf, &F64_, erfl, g_sig, n, 2);
  check_pow(&F64_, 2 * n, 1);
  if (test_failed) fprintf(stderr, "  (MGPU_TEST_SEED=%llu repeats these inputs)\n", (unsigned long long)s0);

  /* approx_math has nothing faster for f64: the same code */
  static char t1[1 << 16], t2[1 << 16];
  fprog a, b;
  CHECK(emit(IR_sin, MGPU_F64, false, false, &a, t1, sizeof t1) && emit(IR_sin, MGPU_F64, false, true, &b, t2, sizeof t2));
  CHECK(!strcmp(t1, t2));
  pxe_free(a.p);
  pxe_free(b.p);
}

void test_ptx_math32(void) {
  if (!references_exact("ptx_math32")) return;
  seed();
  uint64_t s0 = rng;
  int n = 20000;
  check1(IR_sin, &F32_, sinl, g_sincos, 2 * n, 1);
  check1(IR_cos, &F32_, cosl, g_sincos, 2 * n, 1);
  check1(IR_erf, &F32_, erfl, g_sig, n, 1);
  check1(IR_logistic, &F32_, logistic_l, g_sig, n, 1);
  check1(IR_expm1, &F32_, expm1l, g_expm1, n, 1);
  check1(IR_log1p, &F32_, log1pl, g_log1p, n, 1);
  check_pow(&F32_, 2 * n, 1);
  const fmt *narrow[] = { &F16_, &BF16_ };
  for (int k = 0; k < 2; k++) {
    check1(IR_sin, narrow[k], sinl, NULL, -1, 1);
    check1(IR_cos, narrow[k], cosl, NULL, -1, 1);
    check1(IR_erf, narrow[k], erfl, NULL, -1, 1);
    check1(IR_logistic, narrow[k], logistic_l, NULL, -1, 1);
    check1(IR_expm1, narrow[k], expm1l, NULL, -1, 1);
    check1(IR_log1p, narrow[k], log1pl, NULL, -1, 1);
    check_pow(narrow[k], n, 1);
  }
  if (test_failed) fprintf(stderr, "  (MGPU_TEST_SEED=%llu repeats these inputs)\n", (unsigned long long)s0);
}

/* The evaluator refuses what it does not model: a change in emission fails, never runs wrongly. */
void test_ptx_eval(void) {
  char err[200];
  const char *bad[] = { "\tsin.approx.f32 %f1, %f2;\n", "\tbra.uni $L1;\n", "\tld.global.f32 %f1, [%rd1];\n",
                        "$L1:\n", "\tdiv.approx.f32 %f1, %f2, %f3;\n", "\tcvt.rn.f32.f32 %f1, %f2;\n",
                        "\tadd.f64 %fd1, %fd2, {%fd3};\n", "\tmov.b32 {%h1, %h2}, %r1;\n" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pxe_prog *p = pxe_compile(bad[i], err, sizeof err);
    CHECK(p == NULL);
    pxe_free(p);
  }
  /* a few semantics that differ from C */
  pxe_prog *p = pxe_compile("\tmax.f64 %fd1, %fd2, %fd3;\n\tshr.s64 %rd1, %rd2, %r1;\n\tshl.b64 %rd3, %rd2, %r1;\n"
                            "\tcvt.rzi.s32.f64 %r2, %fd2;\n\tsetp.eq.or.f64 %p1, %fd3, %fd3, %p2;\n", err, sizeof err);
  CHECK(p != NULL);
  if (!p) return;
  double nan = NAN, one = 1.0;
  uint64_t nb, ob;
  memcpy(&nb, &nan, 8);
  memcpy(&ob, &one, 8);
  pxe_set(p, PR_MAKE(PR_FD, 2), nb);
  pxe_set(p, PR_MAKE(PR_FD, 3), ob);
  pxe_set(p, PR_MAKE(PR_RD, 2), (uint64_t)-8);
  pxe_set(p, PR_MAKE(PR_R, 1), 70);
  pxe_set(p, PR_MAKE(PR_P, 2), 0);
  pxe_run(p);
  CHECK(pxe_get(p, PR_MAKE(PR_FD, 1)) == ob);           /* max.f64 drops a NaN operand */
  CHECK(pxe_get(p, PR_MAKE(PR_RD, 1)) == UINT64_MAX);   /* arithmetic shift past the width: the sign */
  CHECK(pxe_get(p, PR_MAKE(PR_RD, 3)) == 0);
  CHECK(pxe_get(p, PR_MAKE(PR_R, 2)) == 0);             /* NaN -> 0 */
  CHECK(pxe_get(p, PR_MAKE(PR_P, 1)) == 1);
  pxe_free(p);
}

/* -- Integer division by a constant ---------------------------------------------------------- */

/* pe_divrem_const's shifts and magic multiplies against C's truncating / and %, signed and
** unsigned, on the edges of the range and on random inputs. */
void test_ptx_divrem_const(void) {
  static const int64_t divisors[] = { 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 25, 64, 100, 127, 128, 255, 256, 257, 641, 1000,
                                      4096, 65535, 65536, 65537, 1000003, 1 << 30, (1 << 30) + 1, INT32_MAX,
                                      (int64_t)1 << 31, ((int64_t)1 << 31) + 1, 3000000000LL, 4294967295LL };
  static const uint32_t edges[] = { 0, 1, 2, 3, 7, 8, 9, 0x7fffffffu, 0x80000000u, 0x80000001u, 0xfffffffeu, 0xffffffffu,
                                    1000, 4095, 4096, 4097 };
  uint64_t s = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < sizeof divisors / sizeof divisors[0]; i++) {
    for (int sgn = 0; sgn <= 1; sgn++) {
      int64_t c = divisors[i];
      if (sgn && c > INT32_MAX) continue;
      for (int rem = 0; rem <= 1; rem++) {
        mem_alloc A;
        diag D;
        pe e;
        emitter(&e, &A, &D);
        preg a = pe_reg(&e, PR_R), d = pe_reg(&e, PR_R);
        pe_divrem_const(&e, rem, sgn, d, a, c);
        char err[300];
        pxe_prog *p = pxe_compile(sb_str(&e.body), err, sizeof err);
        if (!p) fprintf(stderr, "divrem %lld: %s\n", (long long)c, err);
        CHECK(p != NULL);
        int bad = 0;
        for (int k = 0; p && k < 4000; k++) {
          s ^= s << 13, s ^= s >> 7, s ^= s << 17;
          uint32_t x = k < (int)(sizeof edges / sizeof edges[0]) ? edges[k] : (uint32_t)s;
          pxe_set(p, a, x);
          pxe_run(p);
          uint32_t got = (uint32_t)pxe_get(p, d), want;
          if (sgn) {
            int32_t xs = (int32_t)x, cs = (int32_t)c;
            want = (uint32_t)(rem ? xs % cs : xs / cs);
          } else {
            want = rem ? x % (uint32_t)c : x / (uint32_t)c;
          }
          if (got != want && bad++ < 3)
            fprintf(stderr, "  %s %s by %lld: %u gives %u, not %u\n", sgn ? "signed" : "unsigned", rem ? "rem" : "div",
                    (long long)c, x, got, want);
        }
        CHECK(bad == 0);
        pxe_free(p);
        sb_free(&e.body);
      }
    }
  }
}
