/*
** test_async.c -- the tensor maps a TMA copy asks the host to encode (the
** SMEM tiling turned into GMEM dims, box-1 dims moved out, neighbours
** merged), and the wgmma descriptors' constant fields.
*/
#include "../../src/ptx/ptx.h"
#include "test.h"

/* Emit a kernel copying a (rows, cols) bf16 tile of a (R, C) array into an
** SMEM buffer with the given transforms, then multiplying it by itself
** transposed when mma is set.  Returns the PTX (caller frees) and the maps. */
static char *emit(int64_t R, int64_t C, int64_t rows, int64_t cols, const char *xf, int64_t start_col, ptx_tmaps *tm) {
  mem_alloc A;
  diag D;
  mem_alloc_default(&A);
  mgpu_kernel_options o = { "tma", 1, { 1, 0, 0 }, 1, 0, 0, 0, 0, 0, 0, { 0, 0, 0 }, 0, 0 };
  ir_builder *b = irb_new(&A, &o, &D);
  int64_t shape[2] = { R, C };
  uint32_t x, out, res[4], n;
  irb_param(b, MGPU_PARAM_INPUT, MGPU_BF16, shape, 2, &x);
  irb_param(b, MGPU_PARAM_OUTPUT, MGPU_BF16, shape, 2, &out);
  int64_t al[3] = { MGPU_BF16, rows, cols };
  CHECK(irb_op(b, "smem_alloc", NULL, 0, al, 3, 0, xf, res, 4, &n) == MGPU_OK);
  uint32_t s = res[0];
  int64_t ba[3] = { 1, 1, 0 };
  CHECK(irb_op(b, "barrier_alloc", NULL, 0, ba, 3, 0, NULL, res, 4, &n) == MGPU_OK);
  uint32_t bar = res[0];
  int64_t at[6] = { IR_IDX_DS, 0, rows, IR_IDX_DS, start_col, cols };
  CHECK(irb_op(b, "view", &x, 1, at, 6, 0, NULL, res, 4, &n) == MGPU_OK);
  uint32_t ops[3] = { res[0], s, bar };
  int64_t li[2] = { 0, 0 };
  CHECK(irb_op(b, "tma_load", ops, 3, li, 2, 0, NULL, res, 4, &n) == MGPU_OK);
  CHECK(irb_op(b, "barrier_wait", &bar, 1, NULL, 0, 0, NULL, res, 4, &n) == MGPU_OK);
  ir_kernel *k = NULL;
  CHECK(irb_finish(b, &k) == MGPU_OK);
  irb_free(b);
  if (!k) return NULL;
  kinfo ki;
  CHECK(pass_run(k, &ki, 232448, &D) == MGPU_OK);
  strbuf sb;
  sb_init(&sb, &A);
  mgpu_status st = ptx_emit_kernel(k, &ki, &sb, tm, &D);
  if (st) fprintf(stderr, "  %s\n", D.msg);
  CHECK(st == MGPU_OK);
  size_t len;
  char *p = sb_take(&sb, &len);
  pass_free(k, &ki);
  ir_kernel_free(k);
  return p;
}

static bool map_is(const ptx_tmap *t, int rank, const uint64_t *dims, const uint64_t *strides, const uint32_t *box, int sw) {
  bool ok = t->rank == rank && t->swizzle == sw && t->dtype == MGPU_BF16 && t->param == 0;
  for (int i = 0; i < rank; i++) {
    ok &= t->dims[i] == dims[i] && t->box[i] == box[i];
    if (i) ok &= t->strides[i] == strides[i];
  }
  if (!ok) {
    fprintf(stderr, "  tensor map: rank %d swizzle %d; dims/stride/box:", t->rank, t->swizzle);
    for (int i = 0; i < t->rank; i++)
      fprintf(stderr, " %llu/%llu/%u", (unsigned long long)t->dims[i], (unsigned long long)t->strides[i], t->box[i]);
    fprintf(stderr, "\n");
  }
  return ok;
}

void test_async(void) {
  mem_alloc A;
  mem_alloc_default(&A);
  ptx_tmaps tm = { 0 };
  /* (128, 64) tile of a (256, 512) array, tiling (8, 64): one column tile, so the
     row tiles merge back into rows and the columns are one dim of the whole width */
  char *p = emit(256, 512, 128, 64, "tiling(8,64);swizzle(128)", 192, &tm);
  CHECK(tm.n == 1);
  if (tm.n == 1) {
    const uint64_t d[2] = { 512, 256 }, s[2] = { 0, 1024 };
    const uint32_t bx[2] = { 64, 128 };
    CHECK(map_is(&tm.v[0], 2, d, s, bx, 128));
  }
  CHECK_CONTAINS(p, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes");
  CHECK_CONTAINS(p, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r");
  CHECK_CONTAINS(p, "], 16384;");
  CHECK_CONTAINS(p, ".param .align 64 .b8 tma_param_2[128]");
  CHECK_CONTAINS(p, "mov.b32 %r"); /* coordinates */
  mem_free(&A, p, strlen(p) + 1);

  /* (64, 128) tile: two column tiles -> (row tiles, column tiles, 8 rows, 64 columns) */
  tm.n = 0;
  p = emit(64, 256, 64, 128, "tiling(8,64);swizzle(128)", 0, &tm);
  CHECK(tm.n == 1);
  if (tm.n == 1) {
    const uint64_t d[4] = { 64, 8, 4, 8 }, s[4] = { 0, 512, 128, 4096 };
    const uint32_t bx[4] = { 64, 8, 2, 8 };
    CHECK(map_is(&tm.v[0], 4, d, s, bx, 128));
  }
  mem_free(&A, p, strlen(p) + 1);

  /* untransformed: a plain 2-d box */
  tm.n = 0;
  p = emit(100, 64, 32, 64, "", 0, &tm);
  if (tm.n == 1) {
    const uint64_t d[2] = { 64, 100 }, s[2] = { 0, 128 };
    const uint32_t bx[2] = { 64, 32 };
    CHECK(map_is(&tm.v[0], 2, d, s, bx, 0));
  }
  mem_free(&A, p, strlen(p) + 1);
  vec_free(&A, &tm);
}
