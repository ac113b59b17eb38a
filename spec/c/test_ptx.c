/*
** test_ptx.c -- PTX text for a small kernel: the frame, typed registers and
** wide accesses.  (Assembly by ptxas is the ptxas_* tests' job.)
*/
#include "../../src/ptx/ptx.h"
#include "test.h"

void test_ptx_emit(void) {
  mem_alloc A;
  diag D;
  mem_alloc_default(&A);
  mgpu_kernel_options o = { "scale", 1, { 4, 0, 0 }, 2, 0, 0, 0, 0, 0, 0, { 0, 0, 0 }, 0, 0 };
  ir_builder *b = irb_new(&A, &o, &D);
  int64_t shape[1] = { 4096 };
  uint32_t x, out, res[4], n;
  irb_param(b, MGPU_PARAM_INPUT, MGPU_BF16, shape, 1, &x);
  irb_param(b, MGPU_PARAM_OUTPUT, MGPU_BF16, shape, 1, &out);
  CHECK(irb_op(b, "load", &x, 1, NULL, 0, 0, NULL, res, 4, &n) == MGPU_OK);
  uint32_t xl = res[0];
  CHECK(irb_op(b, "exp", &xl, 1, NULL, 0, 0, NULL, res, 4, &n) == MGPU_OK);
  uint32_t st[2] = { out, res[0] };
  CHECK(irb_op(b, "store", st, 2, NULL, 0, 0, NULL, res, 4, &n) == MGPU_OK);
  ir_kernel *k = NULL;
  CHECK(irb_finish(b, &k) == MGPU_OK);
  kinfo ki;
  CHECK(pass_run(k, &ki, 232448, &D) == MGPU_OK);
  strbuf sb;
  sb_init(&sb, &A);
  ptx_tmaps tm = { 0 };
  CHECK(ptx_emit_kernel(k, &ki, &sb, &tm, &D) == MGPU_OK);
  CHECK(tm.n == 0);
  const char *p = sb_str(&sb);
  CHECK_CONTAINS(p, ".version 8.0\n.target sm_90a\n.address_size 64");
  CHECK_CONTAINS(p, ".visible .entry scale(");
  CHECK_CONTAINS(p, ".maxntid 256, 1, 1");
  CHECK_CONTAINS(p, "ld.global.v4.b32");        /* 8 bf16 per 16-byte access */
  CHECK_CONTAINS(p, "cvt.f32.bf16");
  CHECK_CONTAINS(p, "ex2.approx.ftz.f32");
  CHECK_CONTAINS(p, "cvt.rn.bf16.f32");
  CHECK_CONTAINS(p, "st.global.v4.b32");
  CHECK(!strstr(p, "bra.uni $L"));            /* whole-array access: no bounds branch */
  /* programmatic dependent launch: dependents may start, and this kernel waits for the kernels
  ** before it ahead of its first global memory access */
  const char *trigger = strstr(p, "griddepcontrol.launch_dependents;"), *wait = strstr(p, "griddepcontrol.wait;");
  CHECK(trigger && wait && trigger < wait);
  CHECK(wait && wait < strstr(p, "ld.global") && wait < strstr(p, "st.global"));
  sb_free(&sb);
  pass_free(k, &ki);
  ir_kernel_free(k);
  irb_free(b);
}
