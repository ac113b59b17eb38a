/*
** test.h -- a minimal C test harness: CHECK records failures with their
** location; the runner prints "N passed, N failed" and exits non-zero on
** failure.
*/
#ifndef MGPU_TEST_H
#define MGPU_TEST_H

#include <stdio.h>
#include <string.h>

extern int test_failed, test_checks;

#define CHECK(c) do { test_checks++; if (!(c)) { test_failed++; \
  fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); } } while (0)
#define CHECK_STR(a, b) do { const char *a_ = (a), *b_ = (b); test_checks++; \
  if (!a_ || !b_ || strcmp(a_, b_)) { test_failed++; \
  fprintf(stderr, "%s:%d: strings differ:\n  got:  %s\n  want: %s\n", __FILE__, __LINE__, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } } while (0)
#define CHECK_CONTAINS(hay, needle) do { const char *h_ = (hay), *n_ = (needle); test_checks++; \
  if (!h_ || !strstr(h_, n_)) { test_failed++; \
  fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, h_ ? h_ : "(null)", n_); } } while (0)

typedef struct test_case { const char *name; void (*fn)(void); } test_case;

/* Every test, in the order test_main runs them. */
#define TESTS(_) \
  _(dtype_conversions) _(dtype_rounding) _(builder_golden) _(builder_errors) _(verifier) \
  _(passes_layout) _(passes_divisibility) _(interp_semantics) _(api_errors) _(api_buffers) \
  _(host_arrays) _(ptx_emit) _(ptx_eval) _(ptx_divrem_const) _(ptx_math64) _(ptx_math32) _(dlpack) _(threads) _(layouts) _(transforms) _(async) _(cache) _(rdzv) _(fuzz_regressions)

#define TEST_DECL(n) void test_##n(void);
TESTS(TEST_DECL)
#undef TEST_DECL

#endif
