/*
** test_interp.c -- interpreter semantics that Lua specs cannot reach
** directly: loops whose yields permute carried values, branches with
** results, and views clipped at the parameter's end.
*/
#include <math.h>
#include <stdlib.h>

#include "../../src/interp/interp.h"
#include "test.h"

static mem_alloc A;
static diag D;

static uint32_t op(ir_builder *b, const char *name, const uint32_t *opd, uint32_t n, const int64_t *ints, uint32_t ni,
                   double num, uint32_t *res, uint32_t *nres) {
  uint32_t r[16], nr = 0;
  if (!res) { res = r; nres = &nr; }
  if (irb_op(b, name, opd, n, ints, ni, num, NULL, res, 16, nres)) { fprintf(stderr, "  %s\n", D.msg); return 0; }
  return *nres ? res[0] : 0;
}

static uint32_t konst(ir_builder *b, int dt, double v) {
  int64_t d[1] = { dt };
  return op(b, "const", NULL, 0, d, 1, v, NULL, NULL);
}

/* out[0] = a after 5 steps of (a, b) -> (b, a + b) from (1, 1): Fibonacci
** needs the yield to permute carried values correctly. */
void test_interp_semantics(void) {
  mem_alloc_default(&A);
  mgpu_kernel_options o = { "k", 1, { 3, 0, 0 }, 1, 0, 0, 0, 0, 0, 0, { 0, 0, 0 }, 0, 0 };
  ir_builder *b = irb_new(&A, &o, &D);
  int64_t s3[1] = { 3 }, s10[1] = { 10 };
  uint32_t out, src, dst;
  irb_param(b, MGPU_PARAM_OUTPUT, MGPU_I32, s3, 1, &out);
  irb_param(b, MGPU_PARAM_INPUT, MGPU_F32, s10, 1, &src);
  irb_param(b, MGPU_PARAM_OUTPUT, MGPU_F32, s10, 1, &dst);
  uint32_t zero = konst(b, MGPU_I32, 0), five = konst(b, MGPU_I32, 5), one = konst(b, MGPU_I32, 1);
  uint32_t fo[5] = { zero, five, one, one, one }, args[16], nargs;
  op(b, "for", fo, 5, NULL, 0, 0, args, &nargs);
  CHECK(nargs == 3);
  uint32_t ab[2] = { args[1], args[2] };
  uint32_t sum = op(b, "add", ab, 2, NULL, 0, 0, NULL, NULL);
  uint32_t y[2] = { args[2], sum }, res[16], nres;
  op(b, "yield", y, 2, NULL, 0, 0, res, &nres);
  CHECK(nres == 2);
  /* if program_id == 1 then res[0] else -res[0] */
  int64_t axis[1] = { 0 };
  uint32_t pid = op(b, "program_id", NULL, 0, axis, 1, 0, NULL, NULL);
  uint32_t eq[2] = { pid, one };
  uint32_t c = op(b, "eq", eq, 2, NULL, 0, 0, NULL, NULL);
  op(b, "if", &c, 1, NULL, 0, 0, NULL, NULL);
  op(b, "else", &res[0], 1, NULL, 0, 0, NULL, NULL);
  uint32_t neg = op(b, "neg", &res[0], 1, NULL, 0, 0, NULL, NULL);
  uint32_t r2[16], n2;
  op(b, "yield", &neg, 1, NULL, 0, 0, r2, &n2);
  CHECK(n2 == 1);
  int64_t at[3] = { IR_IDX_INT, IR_DYNAMIC, 1 };
  uint32_t vo[2] = { out, pid };
  uint32_t cell = op(b, "view", vo, 2, at, 3, 0, NULL, NULL);
  uint32_t st[2] = { cell, r2[0] };
  op(b, "store", st, 2, NULL, 0, 0, NULL, NULL);
  /* dst[pid*4 : pid*4+4] = src[...] * 2: the last block runs past the end */
  uint32_t four = konst(b, MGPU_I32, 4);
  uint32_t m[2] = { pid, four };
  uint32_t start = op(b, "mul", m, 2, NULL, 0, 0, NULL, NULL);
  int64_t ds[3] = { IR_IDX_DS, IR_DYNAMIC, 4 };
  uint32_t vs[2] = { src, start }, vd[2] = { dst, start };
  uint32_t sv = op(b, "view", vs, 2, ds, 3, 0, NULL, NULL), dv = op(b, "view", vd, 2, ds, 3, 0, NULL, NULL);
  uint32_t ld = op(b, "load", &sv, 1, NULL, 0, 0, NULL, NULL);
  uint32_t two = konst(b, MGPU_F32, 2);
  uint32_t mm[2] = { ld, two };
  uint32_t dbl = op(b, "mul", mm, 2, NULL, 0, 0, NULL, NULL);
  uint32_t st2[2] = { dv, dbl };
  op(b, "store", st2, 2, NULL, 0, 0, NULL, NULL);
  ir_kernel *k = NULL;
  CHECK(irb_finish(b, &k) == MGPU_OK);
  if (!k) { irb_free(b); return; }

  int32_t o3[3] = { 77, 77, 77 };
  float fs[12], fd[12];
  for (int i = 0; i < 12; i++) { fs[i] = (float)i + 0.5f; fd[i] = NAN; }
  interp_arg bufs[3] = { { o3, sizeof o3, 0 }, { fs, 40, 0 }, { fd, 40, 0 } };
  kinfo ki;
  CHECK(pass_run(k, &ki, 232448, &D) == MGPU_OK);
  CHECK(interp_run(k, &ki, bufs, 3, 1, &D) == MGPU_OK);
  pass_free(k, &ki);
  CHECK(o3[0] == -8 && o3[1] == 8 && o3[2] == -8);   /* fib: 1 1 2 3 5 8 */
  for (int i = 0; i < 10; i++) CHECK(fd[i] == 2 * fs[i]);
  CHECK(isnan(fd[10]) && isnan(fd[11]));              /* nothing written past the end */
  ir_kernel_free(k);
  irb_free(b);
}
