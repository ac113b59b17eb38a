/*
** fit_poly.c -- the polynomial coefficients of the erf of src/ptx/ptx_math.c
** (f32) and src/ptx/ptx_math64.c (f64):
** Chebyshev interpolation in long double at degree+1 Chebyshev nodes,
** rewritten as monomials in u = (v - c) / h, printed highest degree first
** (the order the tables use) with the maximum relative error of the
** double-precision Horner evaluation on a fine grid, and of the rounded
** coefficients evaluated in long double (the fit alone).  Not built by
** CMake:
**   cc -O2 -o fit_poly tools/fit_poly.c -lm
**   ./fit_poly 0 0 2.25 12 0 1      erf(x)/x in v = x^2 on [0, 1.5^2]      (erf_small)
**   ./fit_poly 1 1.5 4 16           erfc(x) e^(x^2) on [1.5, 4], u = (x - 2.75) / 1.25   (erf_big)
**   ./fit_poly 0 0 2.25 7 0 1, ./fit_poly 1 1.5 4 9       the approx_math forms
**   ./fit_poly 0 0 1 14 0 1         f64: erf(x)/x in v = x^2 on [0, 1]        (erf64_small)
**   ./fit_poly 1 1 2.5 18           f64: erfc(x) e^(x^2) on [1, 2.5]           (erf64_mid)
**   ./fit_poly 1 2.5 6 18           f64: erfc(x) e^(x^2) on [2.5, 6]           (erf64_big)
*/
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef long double ld;
#define MAXDEG 40

static int which;

static ld f(ld v) {
  if (which == 0) {                       /* erf(a) / a, v = a^2 */
    if (v == 0) return 2 / sqrtl(3.141592653589793238462643383279503L);
    ld a = sqrtl(v);
    return erfl(a) / a;
  }
  return erfcl(v) * expl(v * v);          /* erfc(a) e^(a^2), v = a */
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: fit_poly which lo hi degree [c h]\n");
    return 2;
  }
  which = atoi(argv[1]);
  ld lo = strtold(argv[2], 0), hi = strtold(argv[3], 0);
  int n = atoi(argv[4]);
  if (n < 1 || n > MAXDEG) return 2;
  ld mid = (lo + hi) / 2, half = (hi - lo) / 2, c = mid, h = half;
  if (argc > 6) { c = strtold(argv[5], 0); h = strtold(argv[6], 0); }
  const ld pi = 3.141592653589793238462643383279503L;
  int N = n + 1;
  ld ch[MAXDEG + 1] = { 0 };
  for (int j = 0; j < N; j++) {           /* Chebyshev coefficients from the values at the nodes */
    ld t = cosl(pi * (j + 0.5L) / N), fv = f(mid + half * t);
    for (int k = 0; k < N; k++) ch[k] += fv * cosl(pi * k * (j + 0.5L) / N) * 2 / N;
  }
  ch[0] /= 2;
  /* T_k(t) with t = alpha u + beta, expanded in powers of u */
  ld alpha = h / half, beta = (c - mid) / half;
  ld Tp[MAXDEG + 2] = { 0 }, Tc[MAXDEG + 2] = { 0 }, Tn[MAXDEG + 2], mono[MAXDEG + 1] = { 0 };
  Tp[0] = 1;
  Tc[0] = beta; Tc[1] = alpha;
  mono[0] = ch[0] + ch[1] * Tc[0];
  mono[1] = ch[1] * Tc[1];
  for (int k = 2; k <= n; k++) {
    memset(Tn, 0, sizeof Tn);
    for (int i = 0; i < k; i++) { Tn[i] += 2 * beta * Tc[i]; Tn[i + 1] += 2 * alpha * Tc[i]; }
    for (int i = 0; i < k; i++) Tn[i] -= Tp[i];
    memcpy(Tp, Tc, sizeof Tc);
    memcpy(Tc, Tn, sizeof Tn);
    for (int i = 0; i <= k; i++) mono[i] += ch[k] * Tc[i];
  }
  double cd[MAXDEG + 1];
  for (int i = 0; i <= n; i++) cd[i] = (double)mono[i];
  ld worst = 0, fit = 0;   /* Horner in double; the rounded coefficients in long double */
  for (int i = 0; i <= 200000; i++) {
    ld v = lo + (hi - lo) * i / 200000;
    double u = (double)((v - c) / h), p = cd[n];
    ld ul = (v - c) / h, pl = cd[n];
    for (int k = n - 1; k >= 0; k--) { p = fma(p, u, cd[k]); pl = pl * ul + cd[k]; }
    ld rel = fabsl((p - f(v)) / f(v)), rfit = fabsl((pl - f(v)) / f(v));
    if (rel > worst) worst = rel;
    if (rfit > fit) fit = rfit;
  }
  printf("/* degree %d, max relative error %.3Le (2^%.1f); of the fit alone 2^%.1f */\n", n, worst,
         log2((double)worst), log2((double)fit));
  for (int i = n; i >= 0; i--) printf("  %.17g,\n", cd[i]);
  return 0;
}
