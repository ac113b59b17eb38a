/*
** interp_async.c -- the interpreter's model of the asynchronous machinery:
** mbarrier phases, TMA copies in both directions (multicast included),
** wgmma groups, and Blackwell's tcgen05 MMAs with their commits.
**
** Asynchronous work completes as late as the program allows, so that a
** program reading too early sees stale data instead of getting lucky: a
** GMEM->SMEM copy lands when some warpgroup waits on its barrier, an
** SMEM->GMEM copy reads its SMEM when its group is awaited, a wgmma reads
** its operands when it is awaited or its accumulator is read, and a
** tcgen05_mma runs when a warpgroup waits on the barrier of a commit that
** follows it.
** Barriers count arrivals and bytes per phase; a warpgroup that waits on a
** phase that has already been followed by another completion is an error
** (the hardware's parity test would see the wrong phase), and so is an
** SMEM->GMEM copy nobody awaited.  Races that the late completion would
** hide are errors too (see interp_smem_access): async-proxy reads of
** uncommitted register stores, reads of SMEM a copy the reader has not
** awaited writes, an arrival beyond a phase's count, and GMEM reads of a
** store in flight.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "interp_int.h"

/* -- Cluster geometry -------------------------------------------------------------- */

/* Blocks of the cluster that differ from block b only along the axes in
** mask.  all: along any combination of them (multicast), else along one at
** a time (cluster barriers).  Returns the count; out in rank order. */
static int group_of(const interp *I, int b, int64_t mask, bool all, int *out) {
  const ir_kernel *k = I->k;
  int n = 0;
  int first = b - b % I->cblocks;   /* the cluster of b's device */
  for (int c = first; c < first + I->cblocks; c++) {
    int differ = 0;
    bool ok = true;
    for (int i = 0; i < k->opts.cluster_rank; i++) {
      if (I->blocks[c].cidx[i] == I->blocks[b].cidx[i]) continue;
      if (!(mask >> i & 1)) ok = false;
      differ++;
    }
    if (ok && (all || differ <= 1)) out[n++] = c;
  }
  return n;
}

/* The other block of b's cluster pair (cluster axis 0, of size 2). */
static int pair_of(const interp *I, int b) {
  int group[8];
  int n = group_of(I, b, 1, false, group);
  for (int i = 0; i < n; i++) if (group[i] != b) return group[i];
  mgpu_unreachable();
}

/* -- Barriers --------------------------------------------------------------------------- */

/* The mbarrier a barrier ref names (its root's first plus the view's offset). */
/* The block's mbarrier that ref r (at op) names; an index outside its allocation is a fault
** (on the GPU the arrival or wait would land on some other barrier, or outside them). */
static int bar_index(const interp *I, const ir_op *op, const iref *r) {
  const ir_kernel *k = I->k;
  int64_t n = ir_ints(k, &k->ops.v[k->vals.v[r->root].def])[0];
  if (r->off[0] < 0 || r->off[0] >= n)
    FAULT(I, op, "barrier index %lld is outside its allocation of %lld barrier%s (0 to %lld): a traced index "
          "such as (k - 1) %% n is negative when k is 0", (long long)r->off[0], (long long)n, n == 1 ? "" : "s",
          (long long)n - 1);
  return I->bar_of[r->root] + (int)r->off[0];
}

void interp_barriers_init(interp *I) {
  const ir_kernel *k = I->k;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    if (op->code != IR_barrier_alloc) continue;
    const int64_t *at = ir_ints(k, op);
    int group[8];
    for (int b = 0; b < I->nblocks; b++) {
      int peers = at[2] ? group_of(I, b, at[2], false, group) : 1;
      for (int64_t j = 0; j < at[0]; j++) {
        ibar *x = &I->blocks[b].bars[I->bar_of[op->res] + j];
        x->count = x->missing = (int32_t)(at[1] * peers);
        x->tx = 0;
        x->completed = 0;
        x->last = NULL;
        if (I->clocks) {
          memset(x->clock, 0, sizeof(uint32_t) * (size_t)I->nagents);
          memset(x->done_clock, 0, sizeof(uint32_t) * (size_t)I->nagents);
        }
      }
    }
  }
}

/* An arrival of agent a: its clock moves on. */
static void tick(interp *I, iagent *a) {
  if (I->clocks) a->clock[a - I->agents]++;
}

static void settle(interp *I, ibar *x) {
  if (x->missing <= 0 && x->tx == 0) {
    x->completed++;
    x->missing += x->count;
    if (I->clocks) {
      memcpy(x->done_clock, x->clock, sizeof(uint32_t) * (size_t)I->nagents);
      memset(x->clock, 0, sizeof(uint32_t) * (size_t)I->nagents);
    }
  }
}

/* One arrival at barrier x (of block blk) by op, expecting `bytes` more
** (a TMA copy's expect_tx) first.  A phase that has all its
** arrivals but still waits for bytes cannot take another: on the GPU its
** pending count goes negative and the phases no longer mean anything. */
static void arrive(interp *I, iagent *a, ibar *x, const ir_op *op, int blk, int64_t bytes) {
  if (x->missing <= 0)
    FAULT(I, op, "%s: a barrier of block %d that expects %d arrival%s per phase already has %s (the last from %s) while "
          "its phase still waits for %lld bytes: this arrival is one too many (raise num_arrivals, or wait before "
          "the next copy)", interp_user_name(op), blk, x->count,
          x->count == 1 ? "" : "s", x->count == 1 ? "it" : "them", x->last ? ir_loc(I->k, x->last) : "?", (long long)x->tx);
  x->tx += bytes;
  x->missing--;
  x->last = op;
  if (a && I->clocks)   /* the arrival carries the agent's clock (ticked: its events before it) */
    for (int i = 0; i < I->nagents; i++) if (a->clock[i] > x->clock[i]) x->clock[i] = a->clock[i];
  settle(I, x);
}

void interp_barrier_arrive(interp *I, iagent *a, const ir_op *op) {
  const iref *r = a->slots[ir_opds(I->k, op)[0]].ref;
  int idx = bar_index(I, op, r);
  const int64_t mask = ir_ints(I->k, &I->k->ops.v[I->k->vals.v[r->root].def])[2];
  int group[8], n = 1;
  group[0] = a->block;
  if (mask) n = group_of(I, a->block, mask, false, group);
  tick(I, a);
  for (int i = 0; i < n; i++) arrive(I, a, &I->blocks[group[i]].bars[idx], op, group[i], 0);
  interp_race_barrier(I, a->block, true);
}

/* -- Copies ---------------------------------------------------------------------------- */

/* Element e of a view of shape t lies in the copy's part (along dim pd). */
static bool in_part(const ir_type *t, int pd, int64_t lo, int64_t hi, int64_t e) {
  if (pd < 0) return true;
  int64_t inner = 1;
  for (int i = t->rank - 1; i > pd; i--) inner *= t->shape[i];
  int64_t x = (e / inner) % t->shape[pd];
  return x >= lo && x < hi;
}

static void run_load(interp *I, const iasync *c) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, c->op);
  const ir_type *t = ir_vtype(k, o[1]);
  int bytes = dt_bytes(t->dtype);
  int pd = c->part_dim;
  int64_t n = ir_numel(t), moved = 0;
  for (int64_t e = 0; e < n; e++) {
    if (!in_part(t, pd, c->part_lo, c->part_hi, e)) continue;
    const unsigned char *src = interp_elem(I, c->op, &c->gmem, t->shape, e, c->block);
    unsigned char *dst = interp_elem(I, c->op, &c->smem, t->shape, e, c->block);
    if (src) interp_race_access(I, c->op, c->block, interp_pslot(I, &c->gmem), src, NULL);
    if (src) memcpy(dst, src, (size_t)bytes);
    else memset(dst, 0, (size_t)bytes);   /* out of bounds: zeros */
    moved += bytes;
  }
  ibar *x = &I->blocks[c->bar_block].bars[c->bar];
  x->tx -= moved;
  settle(I, x);
}

/* Combine one element of an SMEM->GMEM copy into dst. */
static void reduce_into(int dt, int red, unsigned char *dst, const unsigned char *src) {
  if (red == IR_RED_NONE) { memcpy(dst, src, (size_t)dt_bytes(dt)); return; }
  if (dt_isfloat(dt)) {
    double x = dt_load(dt, dst), y = dt_load(dt, src);
    double r = red == IR_RED_ADD ? x + y : red == IR_RED_MIN ? fmin(x, y) : fmax(x, y);
    dt_store(dt, dst, r);
    return;
  }
  int64_t x = dt_load_int(dt, dst), y = dt_load_int(dt, src), r;
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  bool sg = dt_issigned(dt);
  switch (red) {
  case IR_RED_ADD: r = (int64_t)(ux + uy); break;
  case IR_RED_MIN: r = sg ? (x < y ? x : y) : (ux < uy ? x : y); break;
  case IR_RED_MAX: r = sg ? (x > y ? x : y) : (ux > uy ? x : y); break;
  case IR_RED_INC: r = ux >= uy ? 0 : (int64_t)(ux + 1); break;
  case IR_RED_DEC: r = (ux == 0 || ux > uy) ? y : (int64_t)(ux - 1); break;
  case IR_RED_AND: r = x & y; break;
  case IR_RED_OR: r = x | y; break;
  default: r = x ^ y; break;
  }
  dt_store_int(dt, dst, r);
}

static void run_store(interp *I, const iasync *c) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, c->op);
  const ir_type *t = ir_vtype(k, o[0]);
  int red = (int)ir_ints(k, c->op)[1];
  int64_t n = ir_numel(t);
  for (int64_t e = 0; e < n; e++) {
    const unsigned char *src = interp_elem(I, c->op, &c->smem, t->shape, e, c->block);
    unsigned char *dst = interp_elem(I, c->op, &c->gmem, t->shape, e, c->block);
    if (!dst) continue;   /* elements outside the array are not written */
    if (red == IR_RED_NONE) interp_race_access(I, c->op, c->block, interp_pslot(I, &c->gmem), dst, src);
    else interp_race_sync(I, c->block, interp_pslot(I, &c->gmem), dst, true, true);   /* (a reduction is atomic per element) */
    reduce_into(t->dtype, red, dst, src);
  }
}

static void push_async(interp *I, const iasync *c) {
  if (!vec_reserve(I->k->alloc, &I->async, 1)) diag_throw(I->d, ERR_NOMEM, "");
  I->async.v[I->async.n++] = *c;
}

static void drop_async(interp *I, size_t i) {
  iasync *c = &I->async.v[i];
  if (c->areg) mem_free(I->k->alloc, c->areg, sizeof(ival) * (size_t)ir_numel(ir_vtype(I->k, ir_opds(I->k, c->op)[1])));
  memmove(c, c + 1, sizeof *c * (I->async.n - i - 1));
  I->async.n--;
}

/* A record of op, issued by agent a, in flight (as yet touching nothing). */
static iasync new_async(const interp *I, const iagent *a, const ir_op *op, int kind) {
  iasync c;
  memset(&c, 0, sizeof c);
  c.kind = (uint8_t)kind;
  c.agent = (int)(a - I->agents);
  c.op = op;
  c.block = c.bar_block = a->block;
  c.part_dim = -1;
  return c;
}

static void run_wgmma(interp *I, const iasync *c);
static void mma_mark(interp *I, const iasync *c, int delta);
static void run_cancel(interp *I, const iasync *c);
static void land_commits(interp *I, int blk, int bar);

/* Which operations in flight a completion applies to (-1: any); block is
** the block of the barrier they complete (that of the record otherwise). */
typedef struct akey { int kind, agent, block, bar; int64_t group; } akey;

static bool matches(const iasync *c, const akey *k) {
  return c->kind == k->kind && (k->agent < 0 || c->agent == k->agent) && (k->block < 0 || c->bar_block == k->block) &&
         (k->bar < 0 || c->bar == k->bar) && (k->group < 0 || c->group == k->group);
}

static int64_t count_matching(const interp *I, const akey *k) {
  int64_t n = 0;
  for (size_t i = 0; i < I->async.n; i++) n += matches(&I->async.v[i], k);
  return n;
}

/* Complete, oldest first, at most `limit` operations matching k. */
static void complete(interp *I, const akey *k, int64_t limit) {
  for (size_t i = 0; i < I->async.n && limit > 0;) {
    const iasync *c = &I->async.v[i];
    if (!matches(c, k)) { i++; continue; }
    if (c->kind == IA_LOAD) run_load(I, c);
    else if (c->kind == IA_STORE) run_store(I, c);
    else if (c->kind == IA_CANCEL) run_cancel(I, c);
    else run_wgmma(I, c);
    drop_async(I, i);
    limit--;
  }
}

static bool predicate_off(iagent *a, const uint32_t *o, bool has_pred, uint32_t at) {
  return has_pred && !ival_of(a, o[at])->i;
}

void interp_tma_load(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, op);
  const int64_t *at = ir_ints(k, op);
  if (predicate_off(a, o, at[1] != 0, 3)) return;
  const ir_type *t = ir_vtype(k, o[1]);
  int64_t bytes = ir_numel(t) * dt_bytes(t->dtype);
  const iref *bar = a->slots[o[2]].ref;
  int idx = bar_index(I, op, bar);
  iasync c = new_async(I, a, op, IA_LOAD);   /* part_dim -1: the whole tile */
  c.gmem = *a->slots[o[0]].ref;
  c.smem = *a->slots[o[1]].ref;
  c.bar = idx;
  int pdim = op->niat > 3 ? (int)at[3] - 1 : -1, rank0 = I->blocks[a->block].cidx[0];
  if (pdim >= 0) c.gmem.off[c.gmem.dim[pdim]] += rank0 * t->shape[pdim];   /* the pair's second block: the second half */
  if (op->niat > 2 && at[2] == 2) {   /* oob = "promise_in_bounds": the program promised; check it */
    const iparam *p = interp_param(I, &c.gmem);
    for (int i = 0; i < c.gmem.rank; i++) {
      int d = c.gmem.dim[i];
      if (c.gmem.off[d] + t->shape[i] > p->shape[d])
        FAULT(I, op, "copy_gmem_to_smem: oob = \"promise_in_bounds\" but the copy reads [%lld, %lld) along dim %d of the "
              "source, whose size is %lld (use oob = \"zeros\" to zero-fill)", (long long)c.gmem.off[d],
              (long long)(c.gmem.off[d] + t->shape[i]), i, (long long)p->shape[d]);
    }
  }
  if (interp_gmem_stores_pending(I, interp_pslot(I, &c.gmem))) {
    int64_t lo[IR_MAXRANK], hi[IR_MAXRANK];
    for (int d = 0; d < IR_MAXRANK; d++) { lo[d] = c.gmem.off[d]; hi[d] = lo[d] + 1; }
    for (int i = 0; i < c.gmem.rank; i++) hi[c.gmem.dim[i]] = lo[c.gmem.dim[i]] + t->shape[i];
    interp_gmem_read_check(I, a, op, interp_pslot(I, &c.gmem), interp_param(I, &c.gmem)->rank, lo, hi);
  }
  int group[8], n = 1, q = 0;
  group[0] = a->block;
  if (pdim >= 0) {   /* partitioned over the cluster pair: this block's half, counted by the pair's first block */
    c.bar_block = rank0 ? pair_of(I, a->block) : a->block;
    if (!rank0) arrive(I, a, &I->blocks[a->block].bars[idx], op, a->block, 2 * bytes);
    int64_t phase = I->blocks[c.bar_block].bars[idx].completed + 1;
    for (int64_t e = 0; e < ir_numel(t); e++)
      interp_smem_load_mark(I, op, a->block, interp_elem(I, op, &c.smem, t->shape, e, a->block), dt_bytes(t->dtype),
                            c.bar_block, idx, phase);
    push_async(I, &c);
    return;
  }
  if (at[0]) {
    n = group_of(I, a->block, at[0], true, group);
    for (int i = 0; i < n; i++) if (group[i] == a->block) q = i;
    int pd = -1;
    for (int d = 0; d < t->rank && pd < 0; d++) if (t->shape[d] % n == 0) pd = d;
    if (pd < 0) FAULT(I, op, "copy_gmem_to_smem: no dimension of the tile divides among the %d blocks multicasting it", n);
    c.part_dim = pd;
    c.part_lo = t->shape[pd] / n * q;
    c.part_hi = t->shape[pd] / n * (q + 1);
  }
  ibar *own = &I->blocks[a->block].bars[idx];
  arrive(I, a, own, op, a->block, bytes);   /* expect_tx with the whole tile, then the arrival */
  int64_t numel = ir_numel(t);
  int eb = dt_bytes(t->dtype);
  for (int i = 0; i < n; i++) {
    c.block = c.bar_block = group[i];
    /* the bytes are in flight until a reader has waited for the completion they land with */
    int64_t phase = I->blocks[c.block].bars[idx].completed + 1;
    for (int64_t e = 0; e < numel; e++) {
      if (!in_part(t, c.part_dim, c.part_lo, c.part_hi, e)) continue;
      interp_smem_load_mark(I, op, c.block, interp_elem(I, op, &c.smem, t->shape, e, c.block), eb, c.block, idx, phase);
    }
    push_async(I, &c);
  }
}

/* async_store_smem: the array goes into the ref in the cluster's block of that rank at once, with
** the op's arrival (expecting the bytes) on that block's barrier; the bytes count as in flight there
** until a reader has waited for the completion that arrival belongs to.  A reduction combines each
** element with what that SMEM holds at the op. */
void interp_async_store_smem(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, op);
  int blk = interp_cluster_block(I, op, a->block, ival_of(a, o[3])->i, "async_store_smem");
  const iref *r = a->slots[o[1]].ref;
  const ir_type *t = ir_vtype(k, o[1]);
  int idx = bar_index(I, op, a->slots[o[2]].ref);
  ibar *x = &I->blocks[blk].bars[idx];
  int64_t phase = x->completed + 1, n = ir_numel(t);
  int eb = dt_bytes(t->dtype), red = op->niat ? (int)ir_ints(k, op)[0] : IR_RED_NONE;
  const ival *v = ival_of(a, o[0]);
  for (int64_t e = 0; e < n; e++) {
    unsigned char *q = interp_elem(I, op, r, t->shape, e, blk), nb[8];
    if (dt_isfloat(t->dtype)) dt_store(t->dtype, nb, v[e].f);
    else dt_store_int(t->dtype, nb, dt_wrap_int(t->dtype, v[e].i));
    if (red != IR_RED_NONE) interp_smem_access(I, a, op, blk, q, eb, ISH_READ);   /* (the reduction reads what is there) */
    reduce_into(t->dtype, red, q, nb);
    interp_smem_load_mark(I, op, blk, q, eb, blk, idx, phase);
  }
  tick(I, a);
  arrive(I, a, x, op, blk, 0);
}

/* Every element of SMEM ref r (of type t) in block blk is read through the async proxy by agent a at op. */
static void async_reads(interp *I, const iagent *a, const ir_op *op, const iref *r, const ir_type *t, int blk) {
  int64_t n = ir_numel(t);
  int eb = dt_bytes(t->dtype);
  for (int64_t e = 0; e < n; e++)
    interp_smem_access(I, a, op, blk, interp_elem(I, op, r, t->shape, e, blk), eb, ISH_ASYNC_READ);
}

void interp_tma_store(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, op);
  const int64_t *at = ir_ints(k, op);
  if (!predicate_off(a, o, at[2] != 0, 2)) {
    iasync c = new_async(I, a, op, IA_STORE);
    async_reads(I, a, op, a->slots[o[0]].ref, ir_vtype(k, o[0]), a->block);
    c.smem = *a->slots[o[0]].ref;
    c.gmem = *a->slots[o[1]].ref;
    c.group = a->group;
    push_async(I, &c);
  }
  if (at[0]) a->group++;
}

/* The box of root indices an in-flight SMEM->GMEM copy writes: [lo, hi) per root dim. */
static void store_box(const interp *I, const iasync *c, int64_t *lo, int64_t *hi) {
  const ir_type *t = ir_vtype(I->k, ir_opds(I->k, c->op)[1]);
  for (int d = 0; d < IR_MAXRANK; d++) { lo[d] = c->gmem.off[d]; hi[d] = lo[d] + 1; }
  for (int i = 0; i < c->gmem.rank; i++) hi[c->gmem.dim[i]] = lo[c->gmem.dim[i]] + t->shape[i];
}

bool interp_gmem_stores_pending(const interp *I, int slot) {
  for (size_t i = 0; i < I->async.n; i++)
    if (I->async.v[i].kind == IA_STORE && interp_pslot(I, &I->async.v[i].gmem) == slot) return true;
  return false;
}

/* Root indices idx[lo..hi) (hi NULL: the one element at lo) of parameter root
** are read at op by agent a: none may be written by a copy in flight. */
void interp_gmem_read_check(interp *I, const iagent *a, const ir_op *op, int slot, int rank, const int64_t *lo,
                            const int64_t *hi) {
  for (size_t i = 0; i < I->async.n; i++) {
    const iasync *c = &I->async.v[i];
    if (c->kind != IA_STORE || interp_pslot(I, &c->gmem) != slot) continue;
    int64_t slo[IR_MAXRANK], shi[IR_MAXRANK];
    store_box(I, c, slo, shi);
    bool overlap = true;
    for (int d = 0; d < rank && overlap; d++)
      overlap = hi ? lo[d] < shi[d] && slo[d] < hi[d] : lo[d] >= slo[d] && lo[d] < shi[d];
    if (!overlap) continue;
    const iagent *w = &I->agents[c->agent];
    FAULT(I, op, "%s reads GMEM that the copy_smem_to_gmem at %s (warpgroup %d of block %d) may still be writing: "
          "warpgroup %d of block %d reads it before the wait_smem_to_gmem that covers the copy",
          op->code == IR_tma_load ? "copy_gmem_to_smem" : "the GMEM load", ir_loc(I->k, c->op), w->wg, w->block,
          a->wg, a->block);
  }
}

void interp_wait_group(interp *I, iagent *a, int64_t n) {
  /* an agent's copies sit in issue order, so their group numbers ascend */
  akey k = { IA_STORE, (int)(a - I->agents), -1, -1, -1 };
  for (;;) {
    int64_t oldest = -1, groups = 0, last = -1;
    for (size_t i = 0; i < I->async.n; i++) {
      const iasync *c = &I->async.v[i];
      if (!matches(c, &k) || c->group >= a->group) continue;   /* the open group is not committed */
      if (oldest < 0) oldest = c->group;
      if (c->group != last) { groups++; last = c->group; }
    }
    if (groups <= n) return;
    akey old = k;
    old.group = oldest;
    complete(I, &old, INT64_MAX);
  }
}

/* -- Barrier waits, deadlocks ------------------------------------------------------------ */

bool interp_barrier_wait(interp *I, iagent *a, const ir_op *op) {
  const iref *r = a->slots[ir_opds(I->k, op)[0]].ref;
  int idx = bar_index(I, op, r);
  ibar *x = &I->blocks[a->block].bars[idx];
  int64_t w = a->waits[idx];
  if (x->completed <= w) {   /* copies and tensor-core commits in flight into this barrier land now */
    akey k = { IA_LOAD, -1, a->block, idx, -1 }, kc = { IA_CANCEL, -1, a->block, idx, -1 };
    complete(I, &k, INT64_MAX);
    complete(I, &kc, INT64_MAX);
    land_commits(I, a->block, idx);
  }
  if (x->completed > w + 1)
    FAULT(I, op, "barrier_wait: this barrier completed twice (phases %lld and %lld) without a wait by warpgroup %d in "
          "between, so its phase parity is ambiguous; the producer needs back-pressure (a second barrier the consumer "
          "arrives on)", (long long)w, (long long)w + 1, a->wg);
  if (x->completed <= w) return false;
  a->waits[idx]++;
  interp_race_barrier(I, a->block, false);
  if (I->clocks)
    for (int i = 0; i < I->nagents; i++) if (x->done_clock[i] > a->clock[i]) a->clock[i] = x->done_clock[i];
  return true;
}

MGPU_NORET void interp_deadlock(interp *I) {
  const ir_kernel *k = I->k;
  char msg[2048];
  size_t len = (size_t)snprintf(msg, sizeof msg, "deadlock: every warpgroup still running waits on a %s that cannot complete:",
                                I->ndev > 1 ? "barrier or semaphore" : "barrier");
  for (int w = 0; w < I->nagents && len < sizeof msg; w++) {
    const iagent *a = &I->agents[w];
    if (a->done) continue;
    const ir_op *op = &k->ops.v[a->pc];
    const iref *r = a->slots[ir_opds(k, op)[0]].ref;
    char who[64] = "";
    if (I->ndev > 1) snprintf(who, sizeof who, "device %d, ", a->dev);
    if (op->code == IR_sem_wait) {
      const unsigned char *q = interp_elem(I, op, r, ir_vtype(k, ir_opds(k, op)[0])->shape, 0, a->block);
      len += (size_t)snprintf(msg + len, sizeof msg - len, "\n  %s: %sblock %d of the cluster, warpgroup %d waits for "
                              "semaphore %lld of device %d to reach %lld (it holds %lld)", ir_loc(k, op), who,
                              a->block % I->cblocks, a->wg, (long long)r->off[0], r->dev,
                              (long long)ival_of((iagent *)a, ir_opds(k, op)[1])->i, (long long)dt_load_int(MGPU_I32, q));
      continue;
    }
    int idx = bar_index(I, op, r);
    const ibar *x = &I->blocks[a->block].bars[idx];
    len += (size_t)snprintf(msg + len, sizeof msg - len, "\n  %s: %sblock %d of the cluster, warpgroup %d waits for completion %lld "
                            "(%d of %d arrivals missing, %lld bytes outstanding)", ir_loc(k, op), who, a->block % I->cblocks,
                            a->wg, (long long)a->waits[idx] + 1, x->missing, x->count, (long long)x->tx);
  }
  bool sem = false;
  for (int w = 0; w < I->nagents; w++) sem |= !I->agents[w].done && k->ops.v[I->agents[w].pc].code == IR_sem_wait;
  if (sem && I->next_cluster < I->nclusters && len < sizeof msg)   /* a later cluster might have signalled it */
    snprintf(msg + len, sizeof msg - len, "\n  (the interpreter runs one cluster at a time, here %llu of %llu: a semaphore "
             "that only a later cluster signals never completes in it, though it may on a GPU where every block is "
             "resident)", (unsigned long long)I->next_cluster, (unsigned long long)I->nclusters);
  const iagent *first = NULL;
  for (int w = 0; w < I->nagents && !first; w++) if (!I->agents[w].done) first = &I->agents[w];
  diag_throw(I->d, ERR_INTERP, first ? ir_loc(k, &k->ops.v[first->pc]) : "", msg);
}

/* -- wgmma ----------------------------------------------------------------------------------- */

void interp_wgmma(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, op);
  iasync c = new_async(I, a, op, IA_WGMMA);
  const iref *ar = a->slots[o[0]].ref;   /* the accumulator, or a slice of it */
  c.acc_ld = ir_vtype(k, (uint32_t)ar->root)->shape[1];
  c.acc = ival_of(a, (uint32_t)ar->root) + ar->off[0] * c.acc_ld + ar->off[1];
  const ir_type *at = ir_vtype(k, o[1]);
  if (at->kind == MGPU_VALUE_ARRAY) {   /* registers are read now */
    size_t n = sizeof(ival) * (size_t)ir_numel(at);
    c.areg = mem_realloc(k->alloc, NULL, 0, n);
    if (!c.areg) diag_throw(I->d, ERR_NOMEM, "");
    memcpy(c.areg, ival_of(a, o[1]), n);
  } else {
    c.a = *a->slots[o[1]].ref;
    async_reads(I, a, op, &c.a, at, a->block);
  }
  c.b = *a->slots[o[2]].ref;
  async_reads(I, a, op, &c.b, ir_vtype(k, o[2]), a->block);
  mma_mark(I, &c, 1);
  push_async(I, &c);
}

/* Count the wgmma c in (delta 1) or out (-1) of the readers of its SMEM operands' bytes. */
static void mma_mark(interp *I, const iasync *c, int delta) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, c->op);
  for (int which = c->areg ? 1 : 0; which < 2; which++) {
    const iref *r = which ? &c->b : &c->a;
    const ir_type *t = ir_vtype(k, o[1 + which]);
    int64_t n = ir_numel(t);
    int eb = dt_bytes(t->dtype);
    for (int64_t e = 0; e < n; e++) {
      const unsigned char *q = interp_elem(I, c->op, r, t->shape, e, c->block);
      ishadow *sh = I->blocks[c->block].shadow + (q - I->blocks[c->block].smem);
      for (int i = 0; i < eb; i++, sh++) {
        sh->mma = (uint16_t)(sh->mma + delta);
        if (delta > 0) sh->mop = (uint32_t)(c->op - k->ops.v) + 1;
      }
    }
  }
}

/* An operand element as the tensor cores see it (f32 operands are tf32:
** the low 13 mantissa bits are ignored). */
static double mma_in(int dt, const unsigned char *p) {
  if (dt != MGPU_F32) return dt_load(dt, p);
  uint32_t u;
  memcpy(&u, p, 4);
  u &= 0xffffe000u;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void run_wgmma(interp *I, const iasync *c) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, c->op);
  const ir_type *acct = ir_vtype(k, o[0]), *at = ir_vtype(k, o[1]), *bt = ir_vtype(k, o[2]);
  int64_t M = acct->shape[0], N = acct->shape[1], K = at->shape[1];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double sum = 0;
      for (int64_t kk = 0; kk < K; kk++) {
        double x;
        if (c->areg) {
          x = dt_isfloat(at->dtype) ? c->areg[i * K + kk].f : (double)c->areg[i * K + kk].i;
        } else {
          x = mma_in(at->dtype, interp_elem(I, c->op, &c->a, at->shape, i * K + kk, c->block));
        }
        double y = mma_in(bt->dtype, interp_elem(I, c->op, &c->b, bt->shape, kk * N + j, c->block));
        sum += x * y;
      }
      ival *d = &c->acc[i * c->acc_ld + j];
      if (acct->dtype == MGPU_I32) d->i = (int32_t)(uint32_t)(uint64_t)(d->i + (int64_t)sum);   /* s32 wraps */
      else d->f = dt_round(acct->dtype, d->f + sum);
    }
  mma_mark(I, c, -1);
}

void interp_wgmma_wait(interp *I, iagent *a, int64_t n) {
  akey k = { IA_WGMMA, (int)(a - I->agents), -1, -1, -1 };
  complete(I, &k, count_matching(I, &k) - n);
}

/* -- tcgen05 ------------------------------------------------------------------------------ */

/* The blocks tcgen05 work c reaches: its own, and its pair's other. */
static int tc_blocks(const iasync *c, int *blk) {
  blk[0] = c->block;
  blk[1] = c->peer;
  return c->peer >= 0 ? 2 : 1;
}

void interp_tcgen05_mma(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, op);
  const int64_t *at = ir_ints(k, op);
  if (at[1] && I->blocks[a->block].cidx[0] != 0) return;   /* a pair's MMA is issued by its first block */
  iasync c = new_async(I, a, op, IA_TCMMA);
  c.d = *a->slots[o[0]].ref;
  c.a = *a->slots[o[1]].ref;
  c.b = *a->slots[o[2]].ref;
  c.accumulate = at[0] == 2 ? ival_of(a, o[3])->i != 0 : at[0] == 1;
  c.peer = at[1] ? pair_of(I, a->block) : -1;
  c.seq = ++I->mma_seq;
  const ir_type *dt = ir_vtype(k, o[0]), *t_a = ir_vtype(k, o[1]);
  int blk[2], nb = tc_blocks(&c, blk);
  uint32_t id = (uint32_t)(op - k->ops.v) + 1;
  for (int q = 0; q < nb; q++) {
    async_reads(I, a, op, &c.b, ir_vtype(k, o[2]), blk[q]);
    if (t_a->space == MGPU_SPACE_SMEM) async_reads(I, a, op, &c.a, t_a, blk[q]);
    else
      for (int64_t e = 0; e < ir_numel(t_a); e++) {
        itshadow *sh;
        interp_tmem_elem(I, &c.a, t_a->shape, e, blk[q], &sh);
        interp_tmem_read_check(I, a, op, sh, false);
      }
    for (int64_t e = 0; e < ir_numel(dt); e++) {
      itshadow *sh;
      interp_tmem_elem(I, &c.d, dt->shape, e, blk[q], &sh);
      interp_tmem_write_check(I, a, op, sh, false);
      sh->mma = id;
      sh->mma_seq = c.seq;
      sh->written = true;
    }
  }
  push_async(I, &c);
}

/* An MMA lands: acc = a @ b (+ acc) in every block it reaches, B being the
** blocks' B side by side for a pair; its TMEM cells are no longer pending.
** The operands are gathered first (one address computation per element). */
static void run_tcmma(interp *I, const iasync *c) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, c->op);
  const ir_type *dt = ir_vtype(k, o[0]), *t_a = ir_vtype(k, o[1]), *t_b = ir_vtype(k, o[2]);
  int64_t M = dt->shape[0], N = dt->shape[1], K = t_a->shape[1], Nb = t_b->shape[1];
  int blk[2], nb = tc_blocks(c, blk);
  size_t bytes = sizeof(double) * (size_t)(M * K + K * N);
  double *A = mem_realloc(k->alloc, NULL, 0, bytes), *B;
  if (!A) diag_throw(I->d, ERR_NOMEM, "");
  B = A + M * K;
  for (int q = 0; q < nb; q++)   /* B is the same for every block of a pair */
    for (int64_t kk = 0; kk < K; kk++)
      for (int64_t j = 0; j < Nb; j++)
        B[kk * N + q * Nb + j] = mma_in(t_b->dtype, interp_elem(I, c->op, &c->b, t_b->shape, kk * Nb + j, blk[q]));
  for (int q = 0; q < nb; q++) {
    for (int64_t e = 0; e < M * K; e++)
      A[e] = mma_in(t_a->dtype, t_a->space == MGPU_SPACE_TMEM ? interp_tmem_elem(I, &c->a, t_a->shape, e, blk[q], NULL)
                                                               : interp_elem(I, c->op, &c->a, t_a->shape, e, blk[q]));
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double sum = 0;
        for (int64_t kk = 0; kk < K; kk++) sum += A[i * K + kk] * B[kk * N + j];
        itshadow *sh;
        unsigned char *d = interp_tmem_elem(I, &c->d, dt->shape, i * N + j, blk[q], &sh);
        if (sh->mma_seq == c->seq) sh->mma = 0;
        if (dt->dtype == MGPU_I32) {   /* s32 wraps */
          int64_t old = c->accumulate ? dt_load_int(MGPU_I32, d) : 0;
          dt_store_int(MGPU_I32, d, (int32_t)(uint32_t)(uint64_t)(old + (int64_t)sum));
        } else {
          dt_store(dt->dtype, d, dt_round(dt->dtype, (c->accumulate ? dt_load(dt->dtype, d) : 0) + sum));
        }
      }
  }
  mem_free(k->alloc, A, bytes);
}

void interp_tcgen05_commit(interp *I, iagent *a, const ir_op *op) {
  bool pair = ir_ints(I->k, op)[0] != 0;
  if (pair && I->blocks[a->block].cidx[0] != 0) return;   /* the pair's first block commits for both */
  iasync c = new_async(I, a, op, IA_TCCOMMIT);
  c.bar = bar_index(I, op, a->slots[ir_opds(I->k, op)[0]].ref);
  c.peer = pair ? pair_of(I, a->block) : -1;
  push_async(I, &c);
}

/* The commits in flight that arrive on barrier bar of block blk land, in
** issue order, each after the MMAs its warpgroup issued before it. */
static void land_commits(interp *I, int blk, int bar) {
  for (;;) {
    size_t i = 0;
    while (i < I->async.n && !(I->async.v[i].kind == IA_TCCOMMIT && I->async.v[i].bar == bar &&
                               (I->async.v[i].block == blk || I->async.v[i].peer == blk)))
      i++;
    if (i == I->async.n) return;
    int agent = I->async.v[i].agent;
    for (size_t j = 0; j < i;) {
      if (I->async.v[j].kind != IA_TCMMA || I->async.v[j].agent != agent) { j++; continue; }
      run_tcmma(I, &I->async.v[j]);
      drop_async(I, j);
      i--;
    }
    iasync c = I->async.v[i];
    drop_async(I, i);
    int b[2], n = tc_blocks(&c, b);
    for (int q = 0; q < n; q++) arrive(I, NULL, &I->blocks[b[q]].bars[c.bar], c.op, b[q], 0);
  }
}

/* -- Cluster launch control ----------------------------------------------------------------- */

void interp_cluster_cancel(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, op);
  const iref *res = a->slots[o[0]].ref;
  int idx = bar_index(I, op, a->slots[o[1]].ref);
  tick(I, a);
  arrive(I, a, &I->blocks[a->block].bars[idx], op, a->block, a->wg == 0 ? 16 : 0);
  if (a->wg != 0 || a->block % I->cblocks != 0) return;   /* the cluster's first block asks for all */
  iasync c = new_async(I, a, op, IA_CANCEL);
  c.smem = *res;
  c.bar = idx;
  if (I->next_cluster < I->nclusters) {   /* the first CTA id of the next cluster, as the launch numbers it */
    uint64_t lin = I->next_cluster++;
    int64_t id[3] = { 0, 0, 0 };
    for (int i = k->opts.grid_rank - 1; i >= 0; i--) {
      ir_grid_axis m = ir_grid_map(&k->opts, i);
      id[m.hw] += (int64_t)(lin % (uint64_t)k->opts.grid[i]) * m.div;
      lin /= (uint64_t)k->opts.grid[i];
    }
    c.answer[0] = 1;
    for (int h = 0; h < 3; h++) c.answer[1 + h] = (uint32_t)(id[h] * (h < k->opts.cluster_rank ? k->opts.cluster[h] : 1));
  }
  const ir_type *t = ir_vtype(k, o[0]);
  for (int b = a->block; b < a->block + I->cblocks; b++) {
    c.block = c.bar_block = b;
    int64_t phase = I->blocks[b].bars[idx].completed + 1;
    for (int64_t e = 0; e < ir_numel(t); e++)
      interp_smem_load_mark(I, op, b, interp_elem(I, op, res, t->shape, e, b), dt_bytes(t->dtype), b, idx, phase);
    push_async(I, &c);
  }
}

static void run_cancel(interp *I, const iasync *c) {
  const ir_type *t = ir_vtype(I->k, ir_opds(I->k, c->op)[0]);
  int eb = dt_bytes(t->dtype);
  for (int64_t e = 0; e < ir_numel(t); e++)
    memcpy(interp_elem(I, c->op, &c->smem, t->shape, e, c->block), (const unsigned char *)c->answer + e * eb, (size_t)eb);
  ibar *x = &I->blocks[c->bar_block].bars[c->bar];
  x->tx -= 16;
  settle(I, x);
}

void interp_cancel_query(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  uint32_t rv = ir_opds(k, op)[0];
  const iref *res = a->slots[rv].ref;
  const ir_type *t = ir_vtype(k, rv);
  uint32_t answer[4];
  int eb = dt_bytes(t->dtype);
  for (int64_t e = 0; e < ir_numel(t); e++) {
    const unsigned char *q = interp_elem(I, op, res, t->shape, e, a->block);
    interp_smem_access(I, a, op, a->block, q, eb, ISH_READ);
    memcpy((unsigned char *)answer + e * eb, q, (size_t)eb);
  }
  int rank = k->opts.grid_rank;
  for (int i = 0; i < rank; i++) {   /* as the PTX decodes it: CTA ids to cluster ids to grid indices */
    ir_grid_axis m = ir_grid_map(&k->opts, i);
    int64_t v = answer[1 + m.hw] / (uint32_t)(m.hw < k->opts.cluster_rank ? k->opts.cluster[m.hw] : 1) / m.div;
    ival_of(a, op->res + (uint32_t)i)->i = m.mod ? v % m.mod : v;
  }
  ival_of(a, op->res + (uint32_t)rank)->i = answer[0] != 0;
}

void interp_agent_end(interp *I, iagent *a) {
  int me = (int)(a - I->agents);
  for (size_t i = 0; i < I->async.n;) {
    const iasync *c = &I->async.v[i];
    if (c->agent != me || c->kind == IA_LOAD || c->kind == IA_TCMMA || c->kind == IA_TCCOMMIT || c->kind == IA_CANCEL) {
      i++;   /* they land when waited for */
      continue;
    }
    if (c->kind == IA_STORE)
      FAULT(I, c->op, "copy_smem_to_gmem was never awaited: call mgpu.wait_smem_to_gmem before the warpgroup ends "
            "(its SMEM must stay alive until the copy has read it)");
    if (c->kind == IA_WGMMA) mma_mark(I, c, -1);
    drop_async(I, i);   /* a wgmma nobody reads */
  }
}

void interp_async_clear(interp *I) {
  while (I->async.n) drop_async(I, I->async.n - 1);
}
