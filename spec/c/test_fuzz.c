/*
** test_fuzz.c -- inputs the fuzzers (fuzz/) found that crashed or hung the
** engine, as plain tests: each must now end in a status with a message.
*/
#include <math.h>

#include "mgpu.h"
#include "../../src/interp/interp.h"
#include "test.h"

static mgpu_ctx *ctx_new(void) {
  mgpu_ctx_options o = { MGPU_MODE_INTERPRET, 0, NULL, NULL };
  mgpu_ctx *c = NULL;
  CHECK(mgpu_ctx_create(&o, &c) == MGPU_OK);
  return c;
}

static mgpu_builder *builder(mgpu_ctx *c, const mgpu_kernel_options *o) {
  mgpu_builder *b = NULL;
  CHECK(mgpu_builder_create(c, o, &b) == MGPU_OK && b);
  return b;
}

/* A kernel whose ops have neither operands nor integer attributes
** (pointer arithmetic on the empty operand array). */
static void no_operands(mgpu_ctx *c) {
  mgpu_kernel_options o = { "k", 0, { 0 }, 1, 0, 1, 0, 0, 0, 0, { 0 }, 0, 0 };
  mgpu_builder *b = builder(c, &o);
  int32_t res[4], n;
  CHECK(mgpu_builder_op(b, "thread_id", NULL, res, 4, &n) == MGPU_OK && n == 1);
  mgpu_kernel *k = NULL;
  CHECK(mgpu_builder_finish(b, &k) == MGPU_OK);
  const char *ptx = NULL;
  CHECK(mgpu_kernel_text(k, MGPU_TEXT_PTX, &ptx) == MGPU_OK);
  mgpu_launch_args la = { NULL, 0, 0 };
  CHECK(mgpu_kernel_launch(k, &la) == MGPU_OK);
  mgpu_kernel_release(k);
  mgpu_builder_release(b);
}

/* Grids of rank 4 to 8 fold their leading axes into z: a product of those
** past 2^63 is refused, not overflowed. */
static void folded_grid_overflow(mgpu_ctx *c) {
  mgpu_kernel_options o = { "k", 8, { 65536, 65536, 65536, 65536, 65536, 65536, 1, 1 }, 1, 0, 1, 0, 0, 0, 0, { 0 }, 0, 0 };
  mgpu_builder *b = NULL;
  CHECK(mgpu_builder_create(c, &o, &b) == MGPU_ERR_ARG && !b);
  CHECK_CONTAINS(mgpu_errmsg(c), "fold into CUDA's z dimension");
}

/* Integer constants wrap to their dtype from 64 bits, so a constant must
** have 64 bits (1e300 as an i32 was cast to int64 by the passes). */
static void const_range(mgpu_ctx *c) {
  mgpu_kernel_options o = { "k", 0, { 0 }, 1, 0, 1, 0, 0, 0, 0, { 0 }, 0, 0 };
  mgpu_builder *b = builder(c, &o);
  int32_t v, n;
  int64_t i32[1] = { MGPU_I32 }, u64[1] = { MGPU_U64 }, i64[1] = { MGPU_I64 };
  mgpu_op_args big = { NULL, 0, i32, 1, 1e300, NULL };
  CHECK(mgpu_builder_op(b, "const", &big, &v, 1, &n) == MGPU_ERR_COMPILE);
  CHECK_CONTAINS(mgpu_errmsg(c), "constant 1.0000000000000001e+300 is outside the 64-bit range of i32");
  mgpu_op_args top = { NULL, 0, u64, 1, 18446744073709549568.0, NULL };   /* 2^64 - 2048 */
  CHECK(mgpu_builder_op(b, "const", &top, &v, 1, &n) == MGPU_OK);
  mgpu_op_args low = { NULL, 0, i64, 1, -9223372036854775808.0, NULL };
  CHECK(mgpu_builder_op(b, "const", &low, &v, 1, &n) == MGPU_OK);
  mgpu_op_args wrap = { NULL, 0, i32, 1, 4294967299.0, NULL };   /* 2^32 + 3: 3 as an i32 */
  CHECK(mgpu_builder_op(b, "const", &wrap, &v, 1, &n) == MGPU_OK);
  mgpu_kernel *k = NULL;
  CHECK(mgpu_builder_finish(b, &k) == MGPU_OK);
  const char *ptx = NULL;
  CHECK(mgpu_kernel_text(k, MGPU_TEXT_PTX, &ptx) == MGPU_OK);
  mgpu_launch_args la = { NULL, 0, 0 };
  CHECK(mgpu_kernel_launch(k, &la) == MGPU_OK);
  mgpu_kernel_release(k);
  mgpu_builder_release(b);
}

/* Barriers are not memory that load and store move (the PTX lowering took
** one for a GMEM parameter). */
static void barrier_load(mgpu_ctx *c) {
  mgpu_kernel_options o = { "k", 0, { 0 }, 1, 0, 1, 0, 0, 0, 0, { 0 }, 0, 0 };
  mgpu_builder *b = builder(c, &o);
  int32_t bar, v, n;
  int64_t ba[3] = { 1, 1, 0 };
  mgpu_op_args al = { NULL, 0, ba, 3, 0, NULL };
  CHECK(mgpu_builder_op(b, "barrier_alloc", &al, &bar, 1, &n) == MGPU_OK);
  mgpu_op_args ld = { &bar, 1, NULL, 0, 0, NULL };
  CHECK(mgpu_builder_op(b, "load", &ld, &v, 1, &n) == MGPU_ERR_COMPILE);
  CHECK_CONTAINS(mgpu_errmsg(c), "load: the ref is a barrier, which holds no data");
  mgpu_builder_release(b);
}

/* Shapes whose element count passes 2^53 (ir_numel overflowed past 2^63). */
static void huge_shapes(mgpu_ctx *c) {
  mgpu_kernel_options o = { "k", 0, { 0 }, 1, 0, 1, 0, 0, 0, 0, { 0 }, 0, 0 };
  mgpu_builder *b = builder(c, &o);
  int32_t v, n;
  int64_t io[4] = { MGPU_F32, 1, 64, INT64_C(161287369273114880) };
  mgpu_op_args ia = { NULL, 0, io, 4, 0, NULL };
  CHECK(mgpu_builder_op(b, "iota", &ia, &v, 1, &n) == MGPU_ERR_COMPILE);
  CHECK_CONTAINS(mgpu_errmsg(c), "iota: f32[64,161287369273114880] has more than 2^53 elements");
  mgpu_op_args il = { NULL, 0, io, 4, 0, "wgmma" };   /* with a layout: counted before the layout is fitted */
  CHECK(mgpu_builder_op(b, "iota", &il, &v, 1, &n) == MGPU_ERR_COMPILE);
  CHECK_CONTAINS(mgpu_errmsg(c), "has more than 2^53 elements");
  int64_t shape[3] = { INT64_C(1) << 31, INT64_C(1) << 31, 2 };
  CHECK(mgpu_builder_param(b, MGPU_PARAM_INPUT, MGPU_F32, shape, 3, &v) == MGPU_ERR_COMPILE);
  CHECK_CONTAINS(mgpu_errmsg(c), "more than 2^53 elements");
  mgpu_builder_release(b);
}

/* Launching k under a work limit of 100000 ends it with the limit's error. */
static void expect_work_limit(mgpu_ctx *c, mgpu_kernel *k, const mgpu_launch_args *la) {
  interp_set_work_limit(100000);
  CHECK(mgpu_kernel_launch(k, la) == MGPU_ERR_RUNTIME);
  CHECK_CONTAINS(mgpu_errmsg(c), "work limit (100000) is used up");
  interp_set_work_limit(0);
}

/* The interpreter's work limit ends a kernel that would run for hours. */
static void work_limit(mgpu_ctx *c) {
  mgpu_kernel_options o = { "k", 1, { 1 }, 1, 0, 1, 0, 0, 0, 0, { 0 }, 0, 0 };
  mgpu_builder *b = builder(c, &o);
  int32_t res[4], n, lo, hi, one;
  int64_t i32[1] = { MGPU_I32 };
  mgpu_op_args c0 = { NULL, 0, i32, 1, 0, NULL }, cmax = { NULL, 0, i32, 1, 2147483647.0, NULL }, c1 = { NULL, 0, i32, 1, 1, NULL };
  CHECK(mgpu_builder_op(b, "const", &c0, &lo, 1, &n) == MGPU_OK);
  CHECK(mgpu_builder_op(b, "const", &cmax, &hi, 1, &n) == MGPU_OK);
  CHECK(mgpu_builder_op(b, "const", &c1, &one, 1, &n) == MGPU_OK);
  mgpu_op_args fa = { (int32_t[]){ lo, hi, one }, 3, NULL, 0, 0, NULL };
  CHECK(mgpu_builder_op(b, "for", &fa, res, 4, &n) == MGPU_OK);   /* an empty body, 2^31 times */
  CHECK(mgpu_builder_op(b, "yield", NULL, res, 4, &n) == MGPU_OK);
  mgpu_kernel *k = NULL;
  CHECK(mgpu_builder_finish(b, &k) == MGPU_OK);
  mgpu_launch_args la = { NULL, 0, 0 };
  expect_work_limit(c, k, &la);
  mgpu_kernel_release(k);
  mgpu_builder_release(b);
}

/* Stores count the elements they write: a kernel that only stores a
** scalar into a large output (no op results to count) is bounded too. */
static void work_limit_stores(mgpu_ctx *c) {
  mgpu_kernel_options o = { "k", 1, { 64 }, 1, 0, 1, 0, 0, 0, 0, { 0 }, 0, 0 };
  mgpu_builder *b = builder(c, &o);
  int64_t shape[1] = { INT64_C(1) << 20 }, f32[1] = { MGPU_F32 };
  int32_t out, v, res[4], n;
  CHECK(mgpu_builder_param(b, MGPU_PARAM_OUTPUT, MGPU_F32, shape, 1, &out) == MGPU_OK);
  mgpu_op_args cv = { NULL, 0, f32, 1, 2.5, NULL };
  CHECK(mgpu_builder_op(b, "const", &cv, &v, 1, &n) == MGPU_OK);
  mgpu_op_args sa = { (int32_t[]){ out, v }, 2, NULL, 0, 0, NULL };
  CHECK(mgpu_builder_op(b, "store", &sa, res, 4, &n) == MGPU_OK);
  mgpu_kernel *k = NULL;
  CHECK(mgpu_builder_finish(b, &k) == MGPU_OK);
  mgpu_buffer *buf = NULL;
  CHECK(mgpu_buffer_alloc(c, 4 << 20, &buf) == MGPU_OK);
  mgpu_arg arg = { .buffer = buf };
  mgpu_launch_args la = { &arg, 1, 0 };
  expect_work_limit(c, k, &la);
  mgpu_buffer_release(buf);
  mgpu_kernel_release(k);
  mgpu_builder_release(b);
}

/* A wgmma counts its multiply-adds (two units each), not its accumulator's
** elements: one 64x256x64 product (2 M units) ends under the limit of
** 100000, which its 16384 accumulator elements stayed under (fuzz_lua's
** corpus, timeout-wgmma-work: a mutated matmul ran 30 s). */
static void work_limit_wgmma(mgpu_ctx *c) {
  mgpu_kernel_options o = { "k", 0, { 0 }, 1, 0, 1, 0, 0, 0, 0, { 0 }, 0, 0 };
  mgpu_builder *b = builder(c, &o);
  int64_t shape[2] = { 64, 256 };
  int32_t out, a, bb, acc, v, res[4], n;
  CHECK(mgpu_builder_param(b, MGPU_PARAM_OUTPUT, MGPU_F32, shape, 2, &out) == MGPU_OK);
  const char *xf = "tiling(8,64);swizzle(128)";
  mgpu_op_args sa = { NULL, 0, (int64_t[]){ MGPU_BF16, 64, 64 }, 3, 0, xf };
  mgpu_op_args sb = { NULL, 0, (int64_t[]){ MGPU_BF16, 64, 256 }, 3, 0, xf };
  CHECK(mgpu_builder_op(b, "smem_alloc", &sa, &a, 1, &n) == MGPU_OK);
  CHECK(mgpu_builder_op(b, "smem_alloc", &sb, &bb, 1, &n) == MGPU_OK);
  CHECK(mgpu_builder_op(b, "scoped", NULL, res, 4, &n) == MGPU_OK);
  mgpu_op_args aa = { NULL, 0, (int64_t[]){ MGPU_F32, 64, 256 }, 3, 0, NULL };
  CHECK(mgpu_builder_op(b, "acc_alloc", &aa, &acc, 1, &n) == MGPU_OK);
  mgpu_op_args wa = { (int32_t[]){ acc, a, bb }, 3, NULL, 0, 0, NULL };
  CHECK(mgpu_builder_op(b, "wgmma", &wa, res, 4, &n) == MGPU_OK);
  mgpu_op_args wt = { NULL, 0, (int64_t[]){ 0 }, 1, 0, NULL };
  CHECK(mgpu_builder_op(b, "wgmma_wait", &wt, res, 4, &n) == MGPU_OK);
  mgpu_op_args ld = { &acc, 1, NULL, 0, 0, NULL };
  CHECK(mgpu_builder_op(b, "load", &ld, &v, 1, &n) == MGPU_OK);
  mgpu_op_args st = { (int32_t[]){ out, v }, 2, NULL, 0, 0, NULL };
  CHECK(mgpu_builder_op(b, "store", &st, res, 4, &n) == MGPU_OK);
  CHECK(mgpu_builder_op(b, "yield", NULL, res, 4, &n) == MGPU_OK);
  mgpu_kernel *k = NULL;
  CHECK(mgpu_builder_finish(b, &k) == MGPU_OK);
  mgpu_buffer *buf = NULL;
  CHECK(mgpu_buffer_alloc(c, 64 * 256 * 4, &buf) == MGPU_OK);
  mgpu_arg arg = { .buffer = buf };
  mgpu_launch_args la = { &arg, 1, 0 };
  CHECK(mgpu_kernel_launch(k, &la) == MGPU_OK);   /* no limit: it runs */
  expect_work_limit(c, k, &la);
  mgpu_buffer_release(buf);
  mgpu_kernel_release(k);
  mgpu_builder_release(b);
}

void test_fuzz_regressions(void) {
  mgpu_ctx *c = ctx_new();
  no_operands(c);
  folded_grid_overflow(c);
  const_range(c);
  barrier_load(c);
  huge_shapes(c);
  work_limit(c);
  work_limit_stores(c);
  work_limit_wgmma(c);
  mgpu_ctx_release(c);
}
