/*
** test_ir.c -- the builder's typing and error messages, the canonical
** printer, and the verifier on hand-broken IR.
*/
#include <math.h>

#include "../../src/ir/ir.h"
#include "test.h"

static mem_alloc A;
static diag D;

static ir_builder *new_builder(int grid) {
  mem_alloc_default(&A);
  mgpu_kernel_options o = { "k", 1, { grid, 0, 0 }, 1, 0, 0, 0, 0, 0, 0, { 0, 0, 0 }, 0, 0 };
  return irb_new(&A, &o, &D);
}

static uint32_t op1(ir_builder *b, const char *name, const uint32_t *opd, uint32_t n, const int64_t *ints, uint32_t ni,
                    double num) {
  uint32_t res[8], nres = 0;
  mgpu_status s = irb_op(b, name, opd, n, ints, ni, num, NULL, res, 8, &nres);
  if (s) { fprintf(stderr, "  unexpected error: %s\n", D.msg); return 0; }
  return nres ? res[0] : 0;
}

static mgpu_status try_op(ir_builder *b, const char *name, const uint32_t *opd, uint32_t n, const int64_t *ints,
                          uint32_t ni) {
  uint32_t res[8], nres = 0;
  return irb_op(b, name, opd, n, ints, ni, 0, NULL, res, 8, &nres);
}

void test_builder_golden(void) {
  ir_builder *b = new_builder(4);
  int64_t shape[1] = { 1000 };
  uint32_t x, y, o;
  CHECK(irb_param(b, MGPU_PARAM_INPUT, MGPU_F32, shape, 1, &x) == MGPU_OK);
  CHECK(irb_param(b, MGPU_PARAM_INPUT, MGPU_F32, shape, 1, &y) == MGPU_OK);
  CHECK(irb_param(b, MGPU_PARAM_OUTPUT, MGPU_F32, shape, 1, &o) == MGPU_OK);
  irb_set_loc(b, "add.lua:3");
  int64_t axis0[1] = { 0 }, i32[1] = { MGPU_I32 };
  uint32_t pid = op1(b, "program_id", NULL, 0, axis0, 1, 0);
  uint32_t c = op1(b, "const", NULL, 0, i32, 1, 256);
  uint32_t m[2] = { pid, c };
  uint32_t start = op1(b, "mul", m, 2, NULL, 0, 0);
  int64_t ds[3] = { IR_IDX_DS, IR_DYNAMIC, 256 };
  uint32_t vx[2] = { x, start }, vy[2] = { y, start }, vo[2] = { o, start };
  uint32_t xv = op1(b, "view", vx, 2, ds, 3, 0), yv = op1(b, "view", vy, 2, ds, 3, 0), ov = op1(b, "view", vo, 2, ds, 3, 0);
  uint32_t xl = op1(b, "load", &xv, 1, NULL, 0, 0), yl = op1(b, "load", &yv, 1, NULL, 0, 0);
  uint32_t s[2] = { xl, yl };
  uint32_t sum = op1(b, "add", s, 2, NULL, 0, 0);
  uint32_t st[2] = { ov, sum };
  CHECK(try_op(b, "store", st, 2, NULL, 0) == MGPU_OK);
  ir_kernel *k = NULL;
  CHECK(irb_finish(b, &k) == MGPU_OK);
  strbuf sb;
  sb_init(&sb, &A);
  ir_print(k, &sb, false);
  CHECK_STR(sb_str(&sb),
    "kernel k(%1: &gmem f32[1000] in, %2: &gmem f32[1000] in, %3: &gmem f32[1000] out) grid=(4) threads=1 approx_math=0 {\n"
    "  %4 = program_id 0 : i32\n"
    "  %5 = const 256 : i32\n"
    "  %6 = mul %4, %5 : i32\n"
    "  %7 = view %1[ds(%6, 256)] : &gmem f32[256]\n"
    "  %8 = view %2[ds(%6, 256)] : &gmem f32[256]\n"
    "  %9 = view %3[ds(%6, 256)] : &gmem f32[256]\n"
    "  %10 = load %7 : f32[256]\n"
    "  %11 = load %8 : f32[256]\n"
    "  %12 = add %10, %11 : f32[256]\n"
    "  store %9, %12\n"
    "}\n");
  sb_free(&sb);
  sb_init(&sb, &A);
  ir_print(k, &sb, true);
  CHECK_CONTAINS(sb_str(&sb), "store %9, %12  @ add.lua:3");
  sb_free(&sb);
  CHECK(ir_verify(k, &D));
  ir_kernel_free(k);
  irb_free(b);
}

void test_builder_errors(void) {
  ir_builder *b = new_builder(1);
  int64_t s1[1] = { 256 }, s2[1] = { 128 }, s3[2] = { 4, 4 };
  uint32_t x, y, z, u;
  irb_param(b, MGPU_PARAM_INPUT, MGPU_F32, s1, 1, &x);
  irb_param(b, MGPU_PARAM_INPUT, MGPU_F32, s2, 1, &y);
  irb_param(b, MGPU_PARAM_INPUT, MGPU_BF16, s1, 1, &z);
  irb_param(b, MGPU_PARAM_INPUT, MGPU_F32, s3, 2, &u);
  irb_set_loc(b, "t.lua:7");
  uint32_t xl = op1(b, "load", &x, 1, NULL, 0, 0), yl = op1(b, "load", &y, 1, NULL, 0, 0);
  uint32_t zl = op1(b, "load", &z, 1, NULL, 0, 0);
  uint32_t p[2] = { xl, yl };
  CHECK(try_op(b, "add", p, 2, NULL, 0) == MGPU_ERR_COMPILE);
  CHECK_STR(D.msg, "t.lua:7: add: shapes f32[256] and f32[128] do not match");
  uint32_t q[2] = { xl, zl };
  CHECK(try_op(b, "mul", q, 2, NULL, 0) == MGPU_ERR_COMPILE);
  CHECK_STR(D.msg, "t.lua:7: mul: dtypes f32 and bf16 do not match (use astype to convert)");
  int64_t idx[9] = { IR_IDX_INT, 0, 1, IR_IDX_INT, 0, 1, IR_IDX_INT, 0, 1 };
  CHECK(try_op(b, "view", &u, 1, idx, 9) == MGPU_ERR_COMPILE);
  CHECK_STR(D.msg, "t.lua:7: at: too many indices: ref of rank 2 indexed with 3");
  int64_t bad[3] = { IR_IDX_INT, 4, 1 };
  CHECK(try_op(b, "view", &u, 1, bad, 3) == MGPU_ERR_COMPILE);
  CHECK_CONTAINS(D.msg, "index 4 is out of range for dimension 0 of size 4");
  CHECK(try_op(b, "exp", &zl, 1, NULL, 0) == MGPU_OK);
  int64_t i32[1] = { MGPU_I32 };
  uint32_t ci = op1(b, "const", NULL, 0, i32, 1, 3);
  CHECK(try_op(b, "exp", &ci, 1, NULL, 0) == MGPU_ERR_COMPILE);
  CHECK_STR(D.msg, "t.lua:7: exp: not defined for dtype i32");
  uint32_t res[8], nres;
  CHECK(irb_op(b, "const", NULL, 0, i32, 1, 1.5, NULL, res, 8, &nres) == MGPU_ERR_COMPILE);
  CHECK_CONTAINS(D.msg, "constant 1.5 is not an integer");
  CHECK(try_op(b, "frobnicate", NULL, 0, NULL, 0) == MGPU_ERR_ARG);
  CHECK_STR(D.msg, "t.lua:7: unknown op 'frobnicate'");
  CHECK(try_op(b, "load", &xl, 1, NULL, 0) == MGPU_ERR_COMPILE);
  CHECK_STR(D.msg, "t.lua:7: load: operand 1 must be a ref, got an array");
  /* a value defined in a loop body cannot escape it */
  uint32_t lo = op1(b, "const", NULL, 0, i32, 1, 0), hi = op1(b, "const", NULL, 0, i32, 1, 4);
  uint32_t fo[3] = { lo, hi, ci };
  CHECK(irb_op(b, "for", fo, 3, NULL, 0, 0, NULL, res, 8, &nres) == MGPU_OK && nres == 1);
  irb_set_loc(b, "t.lua:9");
  uint32_t inner = op1(b, "exp", &xl, 1, NULL, 0, 0);
  CHECK(irb_op(b, "yield", NULL, 0, NULL, 0, 0, NULL, res, 8, &nres) == MGPU_OK);
  irb_set_loc(b, "t.lua:11");
  CHECK(try_op(b, "neg", &inner, 1, NULL, 0) == MGPU_ERR_COMPILE);
  char want[160];
  snprintf(want, sizeof want, "t.lua:11: neg: value %%%u was defined inside a loop or branch that has ended (defined at t.lua:9)", inner);
  CHECK_STR(D.msg, want);
  /* an if left open */
  uint32_t cmp[2] = { lo, hi };
  uint32_t c = op1(b, "lt", cmp, 2, NULL, 0, 0);
  irb_set_loc(b, "t.lua:12");
  CHECK(try_op(b, "if", &c, 1, NULL, 0) == MGPU_OK);
  ir_kernel *k = NULL;
  CHECK(irb_finish(b, &k) == MGPU_ERR_COMPILE);
  CHECK_STR(D.msg, "t.lua:12: if: loop or branch opened here was never closed");
  irb_free(b);
}

void test_verifier(void) {
  ir_builder *b = new_builder(1);
  int64_t s1[1] = { 128 };
  uint32_t x, o;
  irb_param(b, MGPU_PARAM_INPUT, MGPU_F32, s1, 1, &x);
  irb_param(b, MGPU_PARAM_OUTPUT, MGPU_F32, s1, 1, &o);
  uint32_t xl = op1(b, "load", &x, 1, NULL, 0, 0);
  uint32_t e = op1(b, "exp", &xl, 1, NULL, 0, 0);
  uint32_t st[2] = { o, e };
  try_op(b, "store", st, 2, NULL, 0);
  ir_kernel *k = NULL;
  CHECK(irb_finish(b, &k) == MGPU_OK);
  CHECK(ir_verify(k, &D));
  /* use before definition */
  uint32_t *opd = k->opds.v + k->ops.v[1].opd;
  uint32_t saved = opd[0];
  opd[0] = e;
  CHECK(!ir_verify(k, &D));
  CHECK_CONTAINS(D.msg, "operand used outside the scope that defines it");
  opd[0] = saved;
  /* a region size that runs past the end */
  k->ops.v[0].body[0] = 5;
  CHECK(!ir_verify(k, &D));
  k->ops.v[0].body[0] = 0;
  CHECK(ir_verify(k, &D));
  ir_kernel_free(k);
  irb_free(b);
}
