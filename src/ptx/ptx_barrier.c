/*
** ptx_barrier.c -- clusters, mbarriers and the synchronising ops.
**
** Every mbarrier is initialised once, at kernel entry, by the block's first
** thread; the block (or the whole cluster, whose peers may arrive on it or
** receive multicast copies) then synchronises.  Each warpgroup keeps the
** parity it expects of each barrier in one register per barrier array
** (bit i for barrier i); a wait spins on mbarrier.try_wait.parity and
** flips the bit.  Arrivals come from one leader thread per warpgroup after
** a warpgroup barrier, so they announce the whole warpgroup's work.
**
** Arrivals on a cluster barrier's peers in other blocks release at CTA
** scope, as CUTLASS's and Mosaic GPU's cluster barriers do: they order the
** arriving warpgroup's finished work (awaited wgmma and register reads of
** a slot) before the copies the waiting block issues next, which is what a
** pipeline's consumed barrier says.  A cluster-scope release
** (mbarrier.arrive.release.cluster) waits for the whole cluster's memory
** traffic, which stalls every K step of a multicast matmul.  A kernel that
** reads or writes another block's SMEM (cluster_ref) needs that order, so
** there cluster barriers release and acquire at cluster scope.
*/
#include <stdio.h>
#include <string.h>

#include "ptx.h"

/* Blocks a cluster barrier over the axes in mask hears from: itself and
** every block differing from it along exactly one of them. */
static int peers(const ir_kernel *k, int64_t mask) {
  int n = 1;
  for (int a = 0; a < k->opts.cluster_rank; a++)
    if (mask >> a & 1) n += k->opts.cluster[a] - 1;
  return n;
}

static int64_t barrier_mask(const ir_kernel *k, uint32_t root) {
  return ir_ints(k, &k->ops.v[k->vals.v[root].def])[2];
}

preg pe_leader(pe *e) {
  preg p = pe_reg(e, PR_P);
  pe_ins(e, "setp.eq.u32", 3, R(p), R(e->lane), I(0));
  return p;
}

static void cluster_sync(pe *e) {
  pe_ins(e, "barrier.cluster.arrive.release.aligned", 0);
  pe_ins(e, "barrier.cluster.wait.acquire.aligned", 0);
}

void pe_block_sync(pe *e) {
  if (ir_cluster_blocks(&e->k->opts) > 1) cluster_sync(e);
  else pe_ins(e, "bar.sync", 1, I(0));
}

void ptx_barrier_prologue(pe *e) {
  const ir_kernel *k = e->k;
  static const char *const cid[3] = { "%cluster_ctaid.x", "%cluster_ctaid.y", "%cluster_ctaid.z" };
  if (k->opts.cluster_rank) {
    for (int i = 0; i < k->opts.cluster_rank; i++) {
      e->cid[i] = pe_reg(e, PR_R);
      pe_ins(e, "mov.u32", 2, R(e->cid[i]), S(cid[i]));
    }
    e->crank = pe_reg(e, PR_R);
    pe_ins(e, "mov.u32", 2, R(e->crank), S("%cluster_ctarank"));
  }
  bool any = false;
  for (uint32_t i = 0; i < k->ops.n; i++) any |= k->ops.v[i].code == IR_barrier_alloc;
  if (!any) {
    if (e->ki->tmem_cols) pe_block_sync(e);   /* the TMEM address is written */
    return;
  }
  preg first = pe_reg(e, PR_P), tid = pe_reg(e, PR_R);
  pe_ins(e, "mov.u32", 2, R(tid), S("%tid.x"));
  pe_ins(e, "setp.eq.u32", 3, R(first), R(tid), I(0));
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    if (op->code != IR_barrier_alloc) continue;
    const int64_t *at = ir_ints(k, op);
    int64_t count = at[1] * peers(k, at[2]);
    for (int64_t j = 0; j < at[0]; j++)
      pe_pins(e, first, false, "mbarrier.init.shared::cta.b64", 2, ADDR(e->smem, e->ki->smem_off[op->res] + 8 * j), I(count));
    e->phase[op->res] = pe_reg(e, PR_R);
    pe_ins(e, "mov.b32", 2, R(e->phase[op->res]), I(0));
  }
  pe_ins(e, "fence.mbarrier_init.release.cluster", 0);
  pe_block_sync(e);
}

void ptx_barrier_epilogue(pe *e) {
  if (ir_cluster_blocks(&e->k->opts) > 1) cluster_sync(e);   /* peers may still write into this block's SMEM */
}

/* u32 register: which barrier of its array a barrier ref names. */
static preg barrier_index(pe *e, const pref *r) {
  preg i = pe_reg(e, PR_R);
  if (r->doff[0]) {
    pe_ins(e, "cvt.u32.u64", 2, R(i), R(r->doff[0]));
    pe_ins(e, "add.u32", 3, R(i), R(i), I(r->soff[0]));
  } else {
    pe_ins(e, "mov.u32", 2, R(i), I(r->soff[0]));
  }
  return i;
}

/* The barrier's address from its index. */
static preg barrier_at(pe *e, const pref *r, preg idx) {
  preg a = pe_reg(e, PR_R);
  pe_ins(e, "add.u32", 3, R(a), R(e->smem), I(e->ki->smem_off[r->root]));
  pe_ins(e, "mad.lo.u32", 4, R(a), R(idx), I(8), R(a));
  return a;
}

preg pe_barrier_addr(pe *e, uint32_t v) {
  const pref *r = &e->refs[v];
  return barrier_at(e, r, barrier_index(e, r));
}

static void arrive(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  uint32_t v = ir_opds(k, op)[0];
  int64_t mask = barrier_mask(k, e->refs[v].root);
  if (ir_barrier_orders_tc(k, e->refs[v].root)) pe_ins(e, "tcgen05.fence::before_thread_sync", 0);
  /* (a cluster-scope release by the leader covers the warpgroup's DSMEM writes only after a barrier) */
  if (!k->opts.unsafe_no_auto_barriers || (e->dsmem && mask)) { pe_wg_barrier(e); e->smem_reads = false; }
  preg addr = pe_barrier_addr(e, v), lead = pe_leader(e);
  if (!mask) {
    pe_pins(e, lead, false, "mbarrier.arrive.release.cta.shared::cta.b64", 2, S("_"), ADDR(addr, 0));
    return;
  }
  /* self, then every block that differs along one collective axis */
  pe_pins(e, lead, false, e->dsmem ? "mbarrier.arrive.release.cluster.shared::cta.b64" : "mbarrier.arrive.release.cta.shared::cta.b64",
          2, S("_"), ADDR(addr, 0));
  const char *opc = e->dsmem ? "mbarrier.arrive.release.cluster.shared::cluster.b64" : "mbarrier.arrive.shared::cluster.b64";
  int64_t stride = 1;
  for (int a = 0; a < k->opts.cluster_rank; a++) {
    if (mask >> a & 1)
      for (int j = 0; j < k->opts.cluster[a]; j++) {
        preg d = pe_reg(e, PR_R), rank = pe_reg(e, PR_R), p = pe_reg(e, PR_P), rb = pe_reg(e, PR_R);
        pe_ins(e, "sub.s32", 3, R(d), I(j), R(e->cid[a]));
        pe_ins(e, "mad.lo.s32", 4, R(rank), R(d), I(stride), R(e->crank));
        pe_ins(e, "setp.ne.u32", 3, R(p), R(e->cid[a]), I(j));
        pe_ins(e, "and.pred", 3, R(p), R(p), R(lead));
        pe_pins(e, p, false, "mapa.shared::cluster.u32", 3, R(rb), R(addr), R(rank));
        pe_pins(e, p, false, opc, 2, S("_"), ADDR(rb, 0));
      }
    stride *= k->opts.cluster[a];
  }
}

static void wait(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  uint32_t v = ir_opds(k, op)[0];
  const pref *r = &e->refs[v];
  preg ph = e->phase[r->root];
  preg idx = barrier_index(e, r), addr = barrier_at(e, r, idx);
  preg parity = pe_reg(e, PR_R), bit = pe_reg(e, PR_R), done = pe_reg(e, PR_P);
  pe_ins(e, "shr.u32", 3, R(parity), R(ph), R(idx));
  pe_ins(e, "and.b32", 3, R(parity), R(parity), I(1));
  uint32_t again = pe_label(e);
  pe_label_here(e, again);
  /* acquires what peers released at cluster scope: their arrivals, and async_store_smem's completions */
  bool cluster = e->dsmem && (barrier_mask(k, r->root) || ir_barrier_gets_stores(k, r->root));
  pe_ins(e, cluster ? "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64" : "mbarrier.try_wait.parity.shared::cta.b64",
         3, R(done), ADDR(addr, 0), R(parity));
  pe_pins(e, done, true, "bra.uni", 1, LBL(again));
  pe_ins(e, "shl.b32", 3, R(bit), I(1), R(idx));
  pe_ins(e, "xor.b32", 3, R(ph), R(ph), R(bit));
  if (ir_barrier_orders_tc(k, r->root)) pe_ins(e, "tcgen05.fence::after_thread_sync", 0);
}

void ptx_barrier_op(pe *e, const ir_op *op) {
  if (op->code == IR_barrier_arrive) arrive(e, op);
  else wait(e, op);
}

void ptx_sync_op(pe *e, const ir_op *op) {
  const int64_t *at = ir_ints(e->k, op);
  char opc[64];
  switch (op->code) {
  case IR_commit_smem:   /* (in DSMEM kernels also this thread's writes into other blocks' SMEM) */
    pe_ins(e, e->dsmem ? "fence.proxy.async.shared::cluster" : "fence.proxy.async.shared::cta", 0);
    pe_wg_barrier(e);
    e->smem_reads = false;
    break;
  case IR_commit_group:
    pe_pins(e, pe_leader(e), false, "cp.async.bulk.commit_group", 0);
    break;
  case IR_wait_group:
    pe_ins(e, at[1] ? "cp.async.bulk.wait_group.read" : "cp.async.bulk.wait_group", 1, I(at[0]));
    /* a full wait: the stores' (and reduce-adds') GMEM writes, made by the async proxy, are ordered
    ** before this thread's later generic accesses; another block reads them reliably only through the
    ** async proxy (TMA), not with generic loads after a release (docs/reference.md) */
    if (!at[1]) pe_ins(e, "fence.proxy.async.global", 0);
    pe_wg_barrier(e);
    e->smem_reads = false;
    break;
  case IR_wgmma_wait:
    pe_ins(e, "wgmma.wait_group.sync.aligned", 1, I(at[0]));
    break;
  case IR_tmem_wait_load: case IR_tmem_commit:   /* this thread's, then every warp's of the warpgroup */
    pe_ins(e, op->code == IR_tmem_commit ? "tcgen05.wait::st.sync.aligned" : "tcgen05.wait::ld.sync.aligned", 0);
    pe_wg_barrier(e);
    e->smem_reads = false;
    break;
  case IR_set_max_registers:
    snprintf(opc, sizeof opc, "setmaxnreg.%s.sync.aligned.u32", at[1] ? "inc" : "dec");
    pe_ins(e, opc, 1, I(at[0]));
    /* After setmaxnreg ptxas no longer treats the SMEM base as warp-uniform,
    ** and keeps the addresses and wgmma descriptors computed from it in
    ** vector registers (R2UR before every HGMMA) */
    if (e->smem) pe_warp_uniform(e, e->smem);
    e->maxreg = true;
    break;
  default:
    mgpu_unreachable();
  }
}
