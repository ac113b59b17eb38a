/*
** interp_race.c -- races between blocks in GMEM.
**
** On a GPU the clusters of a grid run in any order and at once; the
** interpreter runs them one after another, so two clusters touching the same
** GMEM element without synchronization give a result here that the GPU need
** not.  Such pairs are reported: a write and any other access to one
** element from two clusters, unless the second is ordered after the first
** through atomics or semaphores (a vector clock per cluster: a signal or
** atomic releases the cluster's clock into the location, a wait or atomic
** acquires it).  Blocks of one cluster synchronize with cluster barriers
** and are not checked against each other.  Off for launches on several
** devices, grids of more than IRACE_MAXCL clusters and arrays of more than
** IRACE_MAXEL elements (too much shadow memory).
*/
#include <stdio.h>
#include <string.h>

#include "interp_int.h"

enum { IRACE_MAXCL = 16384, IRACE_MAXEL = 1 << 21 };

/* What the check knows of one GMEM element: its latest write and a read
** since (cluster + 1, 0 for none; that cluster's clock then; the op + 1). */
typedef struct irace_el {
  uint32_t wcl, wop, rcl, rop;
  uint16_t wclk, rclk;
} irace_el;

/* A synchronization location (an atomic's or a semaphore's element) and the
** clock released into it. */
typedef struct irace_sync {
  int slot;
  int64_t off;
  uint16_t *clk;
} irace_sync;

struct irace {
  int ncl;
  uint16_t *vc;                  /* the running cluster's vector clock */
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
  int64_t ncl = grid_clusters(k);
  if (I->ndev != 1 || ncl < 2 || ncl > IRACE_MAXCL) return;
  irace *R = mem_calloc(k->alloc, sizeof *R);
  if (!R) diag_throw(I->d, ERR_NOMEM, "");
  I->race = R;
  R->ncl = (int)ncl;
  R->vc = mem_calloc(k->alloc, sizeof(uint16_t) * (size_t)ncl);
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
  for (size_t i = 0; i < R->sync.n; i++) mem_free(al, R->sync.v[i].clk, sizeof(uint16_t) * (size_t)R->ncl);
  vec_free(al, &R->sync);
  mem_free(al, R->vc, sizeof(uint16_t) * (size_t)R->ncl);
  mem_free(al, R->el, sizeof(irace_el *) * (I->k->params.n ? I->k->params.n : 1));
  mem_free(al, R->skip, sizeof(bool) * (I->k->params.n ? I->k->params.n : 1));
  mem_free(al, R, sizeof *R);
  I->race = NULL;
}

void interp_race_cluster(interp *I) {
  irace *R = I->race;
  if (!R) return;
  memset(R->vc, 0, sizeof(uint16_t) * (size_t)R->ncl);   /* it has seen nothing of the others */
  R->vc[I->clusters_done] = 1;
}

/* "output 1", "input 2": the parameter as the script passed it. */
static void param_name(const ir_kernel *k, int slot, char *buf, size_t n) {
  int role = k->params.v[slot].role, idx = 0;
  for (int i = 0; i <= slot; i++) idx += k->params.v[i].role == role;
  snprintf(buf, n, "%s %d", role == MGPU_PARAM_OUTPUT ? "output" : "input", idx);
}

/* "(1, 0)": the program ids of cluster c (row-major over the grid). */
static void block_name(const ir_kernel *k, int64_t c, char *buf, size_t n) {
  int64_t id[8];
  for (int i = k->opts.grid_rank - 1; i >= 0; i--) { id[i] = c % k->opts.grid[i]; c /= k->opts.grid[i]; }
  size_t used = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < k->opts.grid_rank && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)id[i]);
  if (used < n) snprintf(buf + used, n - used, ")");
}

MGPU_NORET static void report(interp *I, const ir_op *op, bool write, int slot, int64_t off, uint32_t ocl, uint32_t oop,
                              bool owrite) {
  const ir_kernel *k = I->k;
  char arr[32], me[96], other[96];
  param_name(k, slot, arr, sizeof arr);
  block_name(k, I->clusters_done, me, sizeof me);
  block_name(k, (int64_t)ocl - 1, other, sizeof other);
  FAULT(I, op, "race between blocks: block %s %s element %lld of %s, which block %s %s at %s, with nothing ordering "
        "the two (the blocks of a grid run in any order, at once); give each block its own part of %s, or order "
        "them with atomics or semaphores",
        me, write ? "writes" : "reads", (long long)off, arr, other, owrite ? "wrote" : "read",
        ir_loc(k, &k->ops.v[oop - 1]), arr);
}

void interp_race_access(interp *I, const ir_op *op, int slot, const unsigned char *q, bool write) {
  irace *R = I->race;
  if (!R || R->skip[slot]) return;
  const iparam *p = &I->params[slot];
  if (!R->el[slot]) {
    int64_t n = ir_numel(ir_vtype(I->k, I->k->params.v[slot].value));
    if (n > IRACE_MAXEL) { R->skip[slot] = true; return; }
    R->el[slot] = mem_calloc(I->k->alloc, sizeof(irace_el) * (size_t)n);
    if (!R->el[slot]) diag_throw(I->d, ERR_NOMEM, "");
  }
  int64_t off = (q - p->data) / dt_bytes(p->dtype);
  irace_el *x = &R->el[slot][off];
  uint32_t me = (uint32_t)I->clusters_done + 1, opn = (uint32_t)(op - I->k->ops.v) + 1;
  if (x->wcl && x->wcl != me && R->vc[x->wcl - 1] < x->wclk) report(I, op, write, slot, off, x->wcl, x->wop, true);
  if (write && x->rcl && x->rcl != me && R->vc[x->rcl - 1] < x->rclk) report(I, op, true, slot, off, x->rcl, x->rop, false);
  if (write) { x->wcl = me; x->wclk = R->vc[me - 1]; x->wop = opn; x->rcl = 0; }
  else { x->rcl = me; x->rclk = R->vc[me - 1]; x->rop = opn; }
}

void interp_race_sync(interp *I, int slot, const unsigned char *q, bool acquire, bool release) {
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
    s->clk = mem_calloc(I->k->alloc, sizeof(uint16_t) * (size_t)R->ncl);
    if (!s->clk) diag_throw(I->d, ERR_NOMEM, "");
  }
  for (int c = 0; c < R->ncl; c++) {
    if (acquire && s->clk[c] > R->vc[c]) R->vc[c] = s->clk[c];
    if (release && R->vc[c] > s->clk[c]) s->clk[c] = R->vc[c];
  }
  uint16_t *mine = &R->vc[I->clusters_done];
  if (release && *mine < UINT16_MAX) (*mine)++;   /* later accesses are not covered by this release */
}
