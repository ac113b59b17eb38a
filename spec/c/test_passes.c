/*
** test_passes.c -- layout classes and divisibility facts.
*/
#include "../../src/passes/pass.h"
#include "test.h"

static mem_alloc A;
static diag D;

static uint32_t op(ir_builder *b, const char *name, const uint32_t *opd, uint32_t n, const int64_t *ints, uint32_t ni, double num) {
  uint32_t res[8], nres = 0;
  if (irb_op(b, name, opd, n, ints, ni, num, NULL, res, 8, &nres)) { fprintf(stderr, "  %s\n", D.msg); return 0; }
  return nres ? res[0] : 0;
}

void test_passes_layout(void) {
  mem_alloc_default(&A);
  mgpu_kernel_options o = { "k", 1, { 1, 0, 0 }, 1, 0, 0, 0, 0, 0, 0, { 0, 0, 0 }, 0, 0 };
  ir_builder *b = irb_new(&A, &o, &D);
  int64_t big[1] = { 4096 }, small[1] = { 100 };
  uint32_t x, h, t, out;
  irb_param(b, MGPU_PARAM_INPUT, MGPU_F32, big, 1, &x);
  irb_param(b, MGPU_PARAM_INPUT, MGPU_BF16, big, 1, &h);
  irb_param(b, MGPU_PARAM_INPUT, MGPU_F32, small, 1, &t);
  irb_param(b, MGPU_PARAM_OUTPUT, MGPU_F32, big, 1, &out);
  uint32_t xl = op(b, "load", &x, 1, NULL, 0, 0), hl = op(b, "load", &h, 1, NULL, 0, 0);
  int64_t f32[1] = { MGPU_F32 };
  uint32_t hf = op(b, "astype", &hl, 1, f32, 1, 0);
  uint32_t s[2] = { xl, hf };
  uint32_t sum = op(b, "add", s, 2, NULL, 0, 0);
  uint32_t tl = op(b, "load", &t, 1, NULL, 0, 0);
  ir_kernel *k = NULL;
  CHECK(irb_finish(b, &k) == MGPU_OK);
  kinfo ki;
  CHECK(pass_run(k, &ki, 232448, &D) == MGPU_OK);
  /* one class {x, h, astype, sum}: the bf16 member asks for 8-wide vectors */
  CHECK(ki.lay[xl].kind == LAY_STRIDED && ki.lay[xl].vec == 8 && ki.lay[hl].vec == 8 && ki.lay[hf].vec == 8 &&
        ki.lay[sum].vec == 8);
  /* 100 elements cannot fill 128 threads at any width > 1 */
  CHECK(ki.lay[tl].vec == 1);
  pass_free(k, &ki);
  ir_kernel_free(k);
  irb_free(b);
}

void test_passes_divisibility(void) {
  mem_alloc_default(&A);
  mgpu_kernel_options o = { "k", 1, { 8, 0, 0 }, 1, 0, 0, 0, 0, 0, 0, { 0, 0, 0 }, 0, 0 };
  ir_builder *b = irb_new(&A, &o, &D);
  int64_t axis[1] = { 0 }, i32[1] = { MGPU_I32 };
  uint32_t pid = op(b, "program_id", NULL, 0, axis, 1, 0);
  uint32_t c1024 = op(b, "const", NULL, 0, i32, 1, 1024), c96 = op(b, "const", NULL, 0, i32, 1, 96);
  uint32_t c2 = op(b, "const", NULL, 0, i32, 1, 2);
  uint32_t m[2] = { pid, c1024 };
  uint32_t start = op(b, "mul", m, 2, NULL, 0, 0);
  uint32_t a[2] = { start, c96 };
  uint32_t shifted = op(b, "add", a, 2, NULL, 0, 0);
  uint32_t sh[2] = { pid, c2 };
  uint32_t shl = op(b, "shl", sh, 2, NULL, 0, 0);
  ir_kernel *k = NULL;
  CHECK(irb_finish(b, &k) == MGPU_OK);
  kinfo ki;
  CHECK(pass_run(k, &ki, 232448, &D) == MGPU_OK);
  CHECK(ki.div[pid] == 1);
  CHECK(ki.div[start] == 1024);
  CHECK(ki.div[shifted] == 32);
  CHECK(ki.div[shl] == 4);
  CHECK(pass_gcd(0, 12) == 12 && pass_gcd(18, -12) == 6);
  pass_free(k, &ki);
  ir_kernel_free(k);
  irb_free(b);

  /* loop carries: a multiple of what the init and every yield are (a slot stepping by 64 from 128,
     one stepping by 3 from 0, and one yielded unchanged from 0 stay 64, 3 and "always 0") */
  b = irb_new(&A, &o, &D);
  uint32_t c0 = op(b, "const", NULL, 0, i32, 1, 0), c128 = op(b, "const", NULL, 0, i32, 1, 128);
  uint32_t c64 = op(b, "const", NULL, 0, i32, 1, 64), c3 = op(b, "const", NULL, 0, i32, 1, 3);
  uint32_t c1 = op(b, "const", NULL, 0, i32, 1, 1), c4 = op(b, "const", NULL, 0, i32, 1, 4);
  uint32_t fo[6] = { c0, c4, c1, c128, c0, c0 }, res[8], nres = 0;
  CHECK(irb_op(b, "for", fo, 6, NULL, 0, 0, NULL, res, 8, &nres) == MGPU_OK && nres == 4);
  uint32_t x[2] = { res[1], c64 }, y[2] = { res[2], c3 };
  uint32_t nx = op(b, "add", x, 2, NULL, 0, 0), ny = op(b, "add", y, 2, NULL, 0, 0);
  uint32_t yl[3] = { nx, ny, res[3] }, out[4];
  CHECK(irb_op(b, "yield", yl, 3, NULL, 0, 0, NULL, out, 4, &nres) == MGPU_OK && nres == 3);
  k = NULL;
  CHECK(irb_finish(b, &k) == MGPU_OK);
  CHECK(pass_run(k, &ki, 232448, &D) == MGPU_OK);
  CHECK(ki.div[res[1]] == 64 && ki.div[out[0]] == 64);
  CHECK(ki.div[res[2]] == 3 && ki.div[out[1]] == 3);
  CHECK(ki.div[res[3]] == 0 && ki.div[out[2]] == 0);
  pass_free(k, &ki);
  ir_kernel_free(k);
  irb_free(b);
}
