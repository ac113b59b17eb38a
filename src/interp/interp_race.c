/*
** interp_race.c -- races between blocks in GMEM.
**
** On a GPU the blocks of a grid run in any order and at once; the
** interpreter runs the clusters one after another, so two blocks touching
** the same GMEM element without synchronization give a result here that the
** GPU need not.  Such pairs are reported: a write and another block's
** write of a different value, a write that changed an element and another
** block's read of it, a read and another block's write changing the element
** (stores of the value an element holds change no result, as when every
** block stores the same flag; a NaN is never that value), unless the second is ordered after the first
** (a vector clock per block: a signal or atomic releases the block's clock
** into its location, a wait or atomic acquires it; within a cluster an
** mbarrier arrival releases into, and a completed wait acquires from, one
** clock the cluster's barriers share).  Off for launches on several
** devices, grids of more than IRACE_MAXBLK blocks and arrays of more than
** IRACE_MAXEL elements (too much shadow memory).
*/
#include <stdio.h>
#include <string.h>

#include "interp_int.h"

enum { IRACE_MAXBLK = 16384, IRACE_MAXEL = 1 << 21 };

/* What the check knows of one GMEM element: its latest write and a read
** since (block + 1, 0 for none; that block's clock then; the op + 1). */
typedef struct irace_el {
  uint32_t wcl, wop, rcl, rop;
  uint16_t wclk, rclk;
  bool wchanged;                 /* the write changed the element (else reads cannot race with it) */
} irace_el;

/* A synchronization location (an atomic's or a semaphore's element) and the
** clock released into it. */
typedef struct irace_sync {
  int slot;
  int64_t off;
  uint16_t *clk;
} irace_sync;

struct irace {
  int nblk, cblocks;             /* blocks in the grid, in a cluster */
  uint16_t *vc;                  /* the vector clock of each block of the running cluster */
  uint16_t *bars;                /* the clock its barriers share */
  irace_el **el;                 /* per parameter slot, allocated at its first access (NULL: unchecked) */
  bool *skip;                    /* per parameter slot: too large to check */
  VEC(irace_sync) sync;
};

static int64_t grid_clusters(const ir_kernel *k) {
  int64_t n = 1;
  for (int i = 0; i < k->opts.grid_rank; i++) n *= k->opts.grid[i];
  return n;
}

void interp_race_init(interp *I) {
  const ir_kernel *k = I->k;
  int64_t nblk = grid_clusters(k) * I->cblocks;
  if (I->ndev != 1 || nblk < 2 || nblk > IRACE_MAXBLK) return;
  irace *R = mem_calloc(k->alloc, sizeof *R);
  if (!R) diag_throw(I->d, ERR_NOMEM, "");
  I->race = R;
  R->nblk = (int)nblk;
  R->cblocks = I->cblocks;
  R->vc = mem_calloc(k->alloc, sizeof(uint16_t) * (size_t)(nblk * (R->cblocks + 1)));
  R->bars = R->vc + nblk * R->cblocks;
  R->el = mem_calloc(k->alloc, sizeof(irace_el *) * (k->params.n ? k->params.n : 1));
  R->skip = mem_calloc(k->alloc, sizeof(bool) * (k->params.n ? k->params.n : 1));
  if (!R->vc || !R->el || !R->skip) diag_throw(I->d, ERR_NOMEM, "");
}

void interp_race_free(interp *I) {
  irace *R = I->race;
  if (!R) return;
  const mem_alloc *al = I->k->alloc;
  for (uint32_t i = 0; i < I->k->params.n; i++)
    if (R->el[i]) mem_free(al, R->el[i], sizeof(irace_el) * (size_t)ir_numel(ir_vtype(I->k, I->k->params.v[i].value)));
  for (size_t i = 0; i < R->sync.n; i++) mem_free(al, R->sync.v[i].clk, sizeof(uint16_t) * (size_t)R->nblk);
  vec_free(al, &R->sync);
  mem_free(al, R->vc, sizeof(uint16_t) * (size_t)(R->nblk * (R->cblocks + 1)));
  mem_free(al, R->el, sizeof(irace_el *) * (I->k->params.n ? I->k->params.n : 1));
  mem_free(al, R->skip, sizeof(bool) * (I->k->params.n ? I->k->params.n : 1));
  mem_free(al, R, sizeof *R);
  I->race = NULL;
}

/* The grid-wide index of block blk of the running cluster. */
static int global_block(const interp *I, int blk) { return (int)I->clusters_done * I->race->cblocks + blk % I->race->cblocks; }
/* The vector clock of block blk of the running cluster. */
static uint16_t *clock_of(const interp *I, int blk) { return I->race->vc + (size_t)(blk % I->race->cblocks) * (size_t)I->race->nblk; }

void interp_race_cluster(interp *I) {
  irace *R = I->race;
  if (!R) return;
  memset(R->vc, 0, sizeof(uint16_t) * (size_t)(R->nblk * (R->cblocks + 1)));   /* nothing seen of the others */
  for (int b = 0; b < R->cblocks; b++) clock_of(I, b)[global_block(I, b)] = 1;
}

/* "output 1", "input 2": the parameter as the script passed it. */
static void param_name(const ir_kernel *k, int slot, char *buf, size_t n) {
  int role = k->params.v[slot].role, idx = 0;
  for (int i = 0; i <= slot; i++) idx += k->params.v[i].role == role;
  snprintf(buf, n, "%s %d", role == MGPU_PARAM_OUTPUT ? "output" : "input", idx);
}

/* "(1, 0)", or "1 of the cluster at (1, 0)": the program ids of grid-wide block g. */
static void block_name(const interp *I, int64_t g, char *buf, size_t n) {
  const ir_kernel *k = I->k;
  int cb = I->race->cblocks;
  int64_t c = g / cb, id[8];
  for (int i = k->opts.grid_rank - 1; i >= 0; i--) { id[i] = c % k->opts.grid[i]; c /= k->opts.grid[i]; }
  size_t used = cb > 1 ? (size_t)snprintf(buf, n, "%lld of the cluster at (", (long long)(g % cb)) : (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < k->opts.grid_rank && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)id[i]);
  if (used < n) snprintf(buf + used, n - used, ")");
}

MGPU_NORET static void report(interp *I, const ir_op *op, int blk, bool write, int slot, int64_t off, uint32_t oblk,
                              uint32_t oop, bool owrite) {
  const ir_kernel *k = I->k;
  char arr[32], me[96], other[96];
  param_name(k, slot, arr, sizeof arr);
  block_name(I, global_block(I, blk), me, sizeof me);
  block_name(I, (int64_t)oblk - 1, other, sizeof other);
  FAULT(I, op, "race between blocks: block %s %s element %lld of %s, which block %s %s at %s, with nothing ordering "
        "the two (the blocks of a grid run in any order, at once); give each block its own part of %s, or order "
        "them with atomics or semaphores",
        me, write ? "writes" : "reads", (long long)off, arr, other, owrite ? "wrote" : "read",
        ir_loc(k, &k->ops.v[oop - 1]), arr);
}

void interp_race_access(interp *I, const ir_op *op, int blk, int slot, const unsigned char *q, const unsigned char *nb) {
  irace *R = I->race;
  if (!R || R->skip[slot]) return;
  bool write = nb != NULL;
  const iparam *p = &I->params[slot];
  if (!R->el[slot]) {
    int64_t n = ir_numel(ir_vtype(I->k, I->k->params.v[slot].value));
    if (n > IRACE_MAXEL) { R->skip[slot] = true; return; }
    R->el[slot] = mem_calloc(I->k->alloc, sizeof(irace_el) * (size_t)n);
    if (!R->el[slot]) diag_throw(I->d, ERR_NOMEM, "");
  }
  int64_t off = (q - p->data) / dt_bytes(p->dtype);
  irace_el *x = &R->el[slot][off];
  const uint16_t *vc = clock_of(I, blk);
  uint32_t me = (uint32_t)global_block(I, blk) + 1, opn = (uint32_t)(op - I->k->ops.v) + 1;
  bool changes = write && (memcmp(q, nb, (size_t)dt_bytes(p->dtype)) != 0 ||
                           (dt_isfloat(p->dtype) && dt_load(p->dtype, nb) != dt_load(p->dtype, nb)));   /* NaN is no value */
  if (write && !changes && x->wcl) return;   /* another store of the value it holds: no result depends on the order */
  bool unordered_w = x->wcl && x->wcl != me && vc[x->wcl - 1] < x->wclk;
  if (unordered_w && (changes || (!write && x->wchanged))) report(I, op, blk, write, slot, off, x->wcl, x->wop, true);
  if (changes && x->rcl && x->rcl != me && vc[x->rcl - 1] < x->rclk) report(I, op, blk, true, slot, off, x->rcl, x->rop, false);
  if (write) { x->wcl = me; x->wclk = vc[me - 1]; x->wop = opn; x->wchanged = changes; x->rcl = 0; }
  else { x->rcl = me; x->rclk = vc[me - 1]; x->rop = opn; }
}

/* Block blk acquires from and/or releases into the clock clk. */
static void sync_clock(interp *I, int blk, uint16_t *clk, bool acquire, bool release) {
  irace *R = I->race;
  uint16_t *vc = clock_of(I, blk);
  for (int b = 0; b < R->nblk; b++) {
    if (acquire && clk[b] > vc[b]) vc[b] = clk[b];
    if (release && vc[b] > clk[b]) clk[b] = vc[b];
  }
  uint16_t *mine = &vc[global_block(I, blk)];
  if (release && *mine < UINT16_MAX) (*mine)++;   /* later accesses are not covered by this release */
}

void interp_race_barrier(interp *I, int blk, bool arrive) {
  if (I->race) sync_clock(I, blk, I->race->bars, !arrive, arrive);
}

void interp_race_sync(interp *I, int blk, int slot, const unsigned char *q, bool acquire, bool release) {
  irace *R = I->race;
  if (!R) return;
  const iparam *p = &I->params[slot];
  int64_t off = (q - p->data) / dt_bytes(p->dtype);
  irace_sync *s = NULL;
  for (size_t i = 0; i < R->sync.n && !s; i++)
    if (R->sync.v[i].slot == slot && R->sync.v[i].off == off) s = &R->sync.v[i];
  if (!s) {
    if (!vec_reserve(I->k->alloc, &R->sync, 1)) diag_throw(I->d, ERR_NOMEM, "");
    s = &R->sync.v[R->sync.n++];
    s->slot = slot;
    s->off = off;
    s->clk = mem_calloc(I->k->alloc, sizeof(uint16_t) * (size_t)R->nblk);
    if (!s->clk) diag_throw(I->d, ERR_NOMEM, "");
  }
  sync_clock(I, blk, s->clk, acquire, release);
}
