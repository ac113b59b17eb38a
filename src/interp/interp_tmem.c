/*
** interp_tmem.c -- the interpreter's model of Blackwell tensor memory: per
** block, 128 lanes (rows) of the kernel's 32-bit columns, values narrower
** than 32 bits packed in them; and the checks on its asynchronous use.
**
** Every 32-bit cell remembers the accesses still able to race with a
** later one: a tcgen05_mma in flight that writes it (until its commit
** lands), the latest async_load_tmem that read it (until its warpgroup's
** next wait_load_tmem) and the latest async_store_tmem that wrote it (until
** its warpgroup's next commit_tmem).  Reading a cell nothing has written,
** or one an MMA in flight or another warpgroup's uncommitted store writes,
** and writing one a load may still be reading, are errors naming both ops;
** so are another warpgroup's accesses that no barrier orders after the
** wait_load_tmem or commit_tmem (vector clocks, interp_int.h), whatever the
** order the interpreter happened to run them in.
** TMEM starts as garbage (NaN for floats) in every block.
*/
#include <string.h>

#include "interp_int.h"

void interp_tmem_init(interp *I) {
  size_t cells = (size_t)IR_TMEM_ROWS * (size_t)I->ki->tmem_cols;
  for (int b = 0; b < I->nblocks && cells; b++) {
    memset(I->blocks[b].tmem, 0xff, cells * 4);
    memset(I->blocks[b].tshadow, 0, cells * sizeof(itshadow));
  }
}

/* Row and first byte (from its row's start) of element e (row-major in a view of shape vshape) of TMEM ref r. */
static void tmem_pos(const interp *I, const iref *r, const int64_t *vshape, int64_t e, int64_t *row, int64_t *byte) {
  const ir_type *t = ir_vtype(I->k, (uint32_t)r->root);
  *row = r->off[0] + e / vshape[1];
  *byte = 4 * I->ki->tmem_off[r->root] + (r->off[1] + e % vshape[1]) * dt_bytes(t->dtype);
}

unsigned char *interp_tmem_elem(const interp *I, const iref *r, const int64_t *vshape, int64_t e, int blk, itshadow **sh) {
  int64_t row, byte;
  tmem_pos(I, r, vshape, e, &row, &byte);
  int64_t stride = 4 * (int64_t)I->ki->tmem_cols;
  if (sh) *sh = I->blocks[blk].tshadow + row * I->ki->tmem_cols + byte / 4;
  return I->blocks[blk].tmem + row * stride + byte;
}

static const char *op_loc(const interp *I, uint32_t op1) { return ir_loc(I->k, &I->k->ops.v[op1 - 1]); }

/* Cell sh is read (load: by a TMEM load, else by an MMA's A operand) at op by agent a. */
void interp_tmem_read_check(interp *I, const iagent *a, const ir_op *op, const itshadow *sh, bool load) {
  const char *what = load ? "async_load_tmem" : "tcgen05_mma (its A operand)";
  if (!sh->written)
    FAULT(I, op, "%s reads TMEM that no tcgen05_mma or async_store_tmem has written (it holds garbage)", what);
  if (sh->mma)
    FAULT(I, op, "%s reads TMEM that the tcgen05_mma at %s is still writing: wait on the barrier its "
          "tcgen05_commit_arrive signals first", what, op_loc(I, sh->mma));
  bool self = sh->st_agent == a - I->agents;
  if (!sh->st || (load && self)) return;
  const iagent *w = &I->agents[sh->st_agent];
  if (w->tmem_st_epoch == sh->st_epoch)
    FAULT(I, op, "%s reads TMEM that warpgroup %d of block %d stored at %s with no commit_tmem since (commit_tmem, then "
          "signal the reader)", what, w->wg, w->block, op_loc(I, sh->st));
  if (!self && a->clock[sh->st_agent] <= w->st_clock.v[sh->st_epoch])
    FAULT(I, op, "%s reads TMEM that warpgroup %d of block %d stored at %s, but no barrier orders its commit_tmem before "
          "this read (it must arrive on a barrier this warpgroup waits on)", what, w->wg, w->block, op_loc(I, sh->st));
}

/* Cell sh is written (store: by a TMEM store, else by an MMA) at op. */
void interp_tmem_write_check(interp *I, const iagent *a, const ir_op *op, const itshadow *sh, bool store) {
  const char *what = store ? "async_store_tmem" : "tcgen05_mma";
  if (store && sh->mma)
    FAULT(I, op, "%s writes TMEM that the tcgen05_mma at %s is still writing: wait on the barrier its "
          "tcgen05_commit_arrive signals first", what, op_loc(I, sh->mma));
  bool self = sh->ld_agent == a - I->agents;
  if (sh->ld && !(store && self)) {
    const iagent *r = &I->agents[sh->ld_agent];
    if (r->tmem_ld_epoch == sh->ld_epoch)
      FAULT(I, op, "%s overwrites TMEM that the async_load_tmem at %s (warpgroup %d of block %d) may still be reading: "
            "that warpgroup must call wait_load_tmem before signalling that the columns are free", what, op_loc(I, sh->ld),
            r->wg, r->block);
    if (!self && a->clock[sh->ld_agent] <= r->ld_clock.v[sh->ld_epoch])
      FAULT(I, op, "%s overwrites TMEM that the async_load_tmem at %s (warpgroup %d of block %d) reads, but no barrier "
            "orders that warpgroup's wait_load_tmem before this write (it must arrive on a barrier this warpgroup waits "
            "on)", what, op_loc(I, sh->ld), r->wg, r->block);
  }
  if (!store && sh->st && I->agents[sh->st_agent].tmem_st_epoch == sh->st_epoch)
    FAULT(I, op, "%s overwrites TMEM that the async_store_tmem at %s wrote with no commit_tmem since", what, op_loc(I, sh->st));
}

void interp_tmem_access(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  bool store = op->code == IR_tmem_store;
  uint32_t refv = ir_opds(k, op)[0];
  const iref *r = a->slots[refv].ref;
  const ir_type *t = ir_vtype(k, refv);
  ival *v = ival_of(a, store ? ir_opds(k, op)[1] : op->res);
  bool fl = dt_isfloat(t->dtype);
  uint32_t me = (uint32_t)(a - I->agents), id = (uint32_t)(op - k->ops.v) + 1;
  int64_t n = ir_numel(t);
  for (int64_t e = 0; e < n; e++) {
    itshadow *sh;
    unsigned char *q = interp_tmem_elem(I, r, t->shape, e, a->block, &sh);
    if (store) {
      interp_tmem_write_check(I, a, op, sh, true);
      if (fl) dt_store(t->dtype, q, v[e].f);
      else dt_store_int(t->dtype, q, v[e].i);
      sh->st = id;
      sh->written = true;
      sh->st_agent = (uint16_t)me;
      sh->st_epoch = a->tmem_st_epoch;
    } else {
      interp_tmem_read_check(I, a, op, sh, true);
      if (fl) v[e].f = dt_load(t->dtype, q);
      else v[e].i = dt_load_int(t->dtype, q);
      sh->ld = id;
      sh->ld_agent = (uint16_t)me;
      sh->ld_epoch = a->tmem_ld_epoch;
    }
  }
}

void interp_tmem_sync(interp *I, iagent *a, bool load) {
  if (!I->clocks) return;   /* a kernel without TMEM */
  iclocks *c = load ? &a->ld_clock : &a->st_clock;
  if (!vec_reserve(I->k->alloc, c, 1)) diag_throw(I->d, ERR_NOMEM, "");
  c->v[c->n++] = a->clock[a - I->agents];
}
