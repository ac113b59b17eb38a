/*
** pass_smem.c -- the SMEM plan of a kernel: every allocation on a
** 1024-byte boundary, the total checked against the device limit before any
** PTX exists.  Today the plan holds the cross-warp reduction scratch;
** scratch_shapes and run_scoped allocations join it with the SMEM refs.
*/
#include <stdio.h>

#include "pass.h"

#define SMEM_ALIGN 1024

/* Bytes of scratch a reduction needs per warpgroup when it combines
** partial results across warps (0 when warp shuffles suffice). */
static int64_t red_scratch(const ir_kernel *k, const kinfo *ki, const ir_op *op) {
  uint32_t src = ir_opds(k, op)[0];
  const ir_type *t = ir_vtype(k, src);
  const lay_layout *l = &ki->lay[src];
  lay_fit f;
  if (!lay_fit_shape(l, t->shape, t->rank, &f, NULL, 0)) return 0;
  bool across = l->kind == LAY_STRIDED;
  if (l->kind == LAY_TILED)
    for (int i = 0; i < f.nlev; i++) {
      if (f.lev[i].role != LR_WARP) continue;
      for (uint32_t a = 0; a < op->niat; a++) across |= f.ldim[i] == ir_ints(k, op)[a];
    }
  if (!across) return 0;
  int64_t per_thread = 1;
  const ir_type *rt = ir_vtype(k, op->res);
  if (rt->kind == MGPU_VALUE_ARRAY) {
    lay_fit g;
    if (lay_fit_shape(&ki->lay[op->res], rt->shape, rt->rank, &g, NULL, 0)) per_thread = g.nregs * g.vlen;
  }
  int acc = (t->dtype == MGPU_F64 || t->dtype == MGPU_I64 || t->dtype == MGPU_U64) ? 8 : 4;
  return 128 * per_thread * acc;
}

mgpu_status pass_smem(const ir_kernel *k, kinfo *ki, int64_t limit, diag *d) {
  int64_t red = 0;
  int32_t red_op = -1;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    if (ir_optab[op->code].cls != IRC_REDUCE) continue;
    int64_t need = red_scratch(k, ki, op);
    if (need > red) { red = need; red_op = (int32_t)i; }
  }
  int64_t wgs = k->opts.num_threads > 0 ? k->opts.num_threads : 1;
  if (red && k->opts.reduction_scratch_bytes > 0 && red > k->opts.reduction_scratch_bytes) {
    char msg[300];
    snprintf(msg, sizeof msg, "this reduction needs %lld bytes of SMEM scratch per warpgroup but reduction_scratch_bytes is %d",
             (long long)red, k->opts.reduction_scratch_bytes);
    return diag_set(d, ERR_VERIFY, ir_loc(k, &k->ops.v[red_op]), msg);
  }
  ki->red_offset = 0;
  ki->red_bytes = red;
  int64_t total = red ? ((red * wgs + SMEM_ALIGN - 1) / SMEM_ALIGN) * SMEM_ALIGN : 0;
  ki->smem_bytes = total;
  if (total > limit) {
    char msg[600];
    snprintf(msg, sizeof msg, "kernel '%s' needs %lld bytes of SMEM but a block may have %lld:\n"
             "  reduction scratch (%lld warpgroup(s) x %lld bytes, for %s): %lld bytes",
             k->name, (long long)total, (long long)limit, (long long)wgs, (long long)red,
             red_op >= 0 ? ir_loc(k, &k->ops.v[red_op]) : "?", (long long)total);
    return diag_set(d, ERR_VERIFY, "", msg);
  }
  return MGPU_OK;
}
