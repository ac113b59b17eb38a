/*
** ptx_cancel.c -- Blackwell's cluster launch control: a running cluster
** asks to cancel the launch of one not yet started and takes its work.
**
** try_cluster_cancel: every warpgroup arrives on the barrier (warpgroup 0
** announcing the 16-byte answer), and warpgroup 0's leader in the
** cluster's first block issues clusterlaunchcontrol.try_cancel, whose
** answer is multicast to the same SMEM word of every block of the cluster
** and completes each one's barrier.  The answer is read with a generic
** load; proxy fences order that read before the next answer written into
** the same SMEM (the fence after the read, the one before the request).
** query_cluster_cancel decodes it: whether a cluster was canceled and its
** first block's CTA id, which becomes the cluster's place along each grid
** axis as program_id computes it (ir_grid_map).
*/
#include <stdio.h>

#include "ptx.h"

/* u32 register: the SMEM address of result ref v's 16 bytes, which must be contiguous. */
static preg result_addr(pe *e, uint32_t v, const char *what) {
  const pref *r = &e->refs[v];
  const ir_type *t = ir_vtype(e->k, v);
  xf_map m;
  pe_smem_map(e, r->root, &m);
  int64_t idx[XF_MAXRANK], origin = 0;
  for (int64_t j = 0; j < ir_numel(t); j++) {
    for (int d = 0; d < m.rank; d++) idx[d] = r->soff[d];
    for (int i = t->rank - 1, rest = (int)j; i >= 0; i--) { idx[r->dim[i]] += rest % t->shape[i]; rest /= (int)t->shape[i]; }
    int64_t off = xf_offset(&m, idx);
    if (j == 0) origin = off;
    if (off != origin + j * dt_bytes(t->dtype) || origin % 16)
      pe_failf(e, "%s: the result's 16 bytes must be contiguous and 16-byte aligned in SMEM (mgpu.TryClusterCancelResult)", what);
  }
  preg a = pe_smem_origin(e, r, &m, 16, what);
  if (origin) pe_ins(e, "add.u32", 3, R(a), R(a), I(origin));
  return a;
}

void ptx_cluster_cancel(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  const uint32_t *o = ir_opds(k, op);
  preg res = result_addr(e, o[0], "try_cluster_cancel");
  pe_wg_barrier(e);   /* the warpgroup is done with what the result held */
  e->smem_reads = false;
  preg bar = pe_barrier_addr(e, o[1]), lead = pe_leader(e), wg0 = pe_reg(e, PR_P), p = pe_reg(e, PR_P), q = pe_reg(e, PR_P);
  pe_ins(e, "setp.eq.u32", 3, R(wg0), R(e->wg), I(0));
  pe_ins(e, "and.pred", 3, R(p), R(lead), R(wg0));
  pe_ins(e, "and.pred", 3, R(q), R(lead), NOT(wg0));
  pe_pins(e, p, false, "mbarrier.arrive.expect_tx.shared::cta.b64", 3, S("_"), ADDR(bar, 0), I(16));
  pe_pins(e, q, false, "mbarrier.arrive.release.cta.shared::cta.b64", 2, S("_"), ADDR(bar, 0));
  bool cluster = ir_cluster_blocks(&k->opts) > 1;
  if (cluster) {   /* the cluster's first block asks for all */
    preg first = pe_reg(e, PR_P);
    pe_ins(e, "setp.eq.u32", 3, R(first), R(e->crank), I(0));
    pe_ins(e, "and.pred", 3, R(p), R(p), R(first));
  }
  pe_ins(e, "fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster", 0);
  pe_pins(e, p, false, cluster ? "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.multicast::cluster::all.b128"
                                : "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128",
          2, ADDR(res, 0), ADDR(bar, 0));
}

void ptx_cancel_query(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  preg res = result_addr(e, ir_opds(k, op)[0], "query_cluster_cancel"), id[3];
  for (int h = 0; h < 3; h++) id[h] = pe_reg(e, PR_R);
  int rank = k->opts.grid_rank;
  preg ok = e->vreg[op->res + rank];
  for (int h = 0; h < 3; h++) pe_ins(e, "mov.u32", 2, R(id[h]), I(0));
  sb_printf(&e->body, "\t{\n\t.reg .b128 answer;\n\tld.shared.b128 answer, %s;\n"
            "\tclusterlaunchcontrol.query_cancel.is_canceled.pred.b128 %s, answer;\n"
            "\t@%s clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {%s, %s, %s, _}, answer;\n\t}\n",
            ADDR(res, 0).s, R(ok).s, R(ok).s, R(id[0]).s, R(id[1]).s, R(id[2]).s);
  pe_ins(e, "fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster", 0);
  for (int h = 0; h < k->opts.cluster_rank; h++)   /* CTA ids to cluster ids */
    if (k->opts.cluster[h] > 1) pe_divrem(e, id[h], k->opts.cluster[h], &id[h], NULL);
  for (int a = 0; a < rank; a++) {
    ir_grid_axis g = ir_grid_map(&k->opts, a);
    preg v = id[g.hw];
    if (g.div > 1) pe_divrem(e, v, g.div, &v, NULL);
    if (g.mod) pe_divrem(e, v, g.mod, NULL, &v);
    pe_ins(e, "mov.u32", 2, R(e->vreg[op->res + a]), R(v));
  }
}
