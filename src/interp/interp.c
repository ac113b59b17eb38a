/*
** interp.c -- running a kernel on the CPU: grid, cluster and agent
** scheduling, structured control flow, refs and memory.  Elementwise math
** is in interp_ops.c; barriers, TMA copies and wgmma in interp_async.c.
*/
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "interp_int.h"

static int64_t vnumel(const ir_kernel *k, uint32_t v) {
  const ir_type *t = ir_vtype(k, v);
  return t->kind == MGPU_VALUE_ARRAY ? ir_numel(t) : 1;
}

static ival *val(iagent *a, uint32_t v) { return ival_of(a, v); }

static int stride_of(const ir_kernel *k, uint32_t v) { return ir_vtype(k, v)->kind == MGPU_VALUE_ARRAY; }

/* -- Memory ----------------------------------------------------------------------- */

/* Logical root index of element `e` (row-major within the view) of ref r. */
static void root_index(const iref *r, int prank, const int64_t *vshape, int64_t e, int64_t *idx) {
  memcpy(idx, r->off, sizeof(int64_t) * (size_t)prank);
  for (int i = r->rank - 1; i >= 0; i--) {
    idx[r->dim[i]] += e % vshape[i];
    e /= vshape[i];
  }
}

unsigned char *interp_elem(const interp *I, const ir_op *op, const iref *r, const int64_t *vshape, int64_t e, int blk) {
  int64_t idx[IR_MAXRANK];
  if (r->space == MGPU_SPACE_SMEM) {
    blk = interp_smem_block(I, r, blk);
    const xf_map *m = &I->maps[I->map_of[r->root]];
    root_index(r, m->rank, vshape, e, idx);
    bool inside = true;
    for (int d = 0; d < m->rank; d++) {
      if (idx[d] >= 0 && idx[d] < m->shape[d]) continue;
      if (!I->k->opts.disable_bounds_checks)
        FAULT(I, op, "SMEM index %lld is outside dimension %d of size %lld", (long long)idx[d], d, (long long)m->shape[d]);
      inside = false;
    }
    if (!inside) {   /* disable_bounds_checks: where the address lands, if that is inside the allocation */
      int64_t lin = xf_linear(m, idx);
      if (lin < 0 || lin > m->size - m->bytes) {
        char at[XF_MAXRANK * 22] = "";
        for (int d = 0, n = 0; d < m->rank; d++) n += snprintf(at + n, sizeof at - (size_t)n, d ? ", %lld" : "%lld", (long long)idx[d]);
        FAULT(I, op, "SMEM index [%s] lands outside its allocation of %lld bytes (disable_bounds_checks lets an index "
              "pass its dimension, never the allocation)", at, (long long)m->size);
      }
      return I->blocks[blk].smem + I->ki->smem_off[r->root] + xf_swizzle(m->swizzle, lin);
    }
    return I->blocks[blk].smem + I->ki->smem_off[r->root] + xf_offset(m, idx);
  }
  const iparam *p = interp_param(I, r);
  root_index(r, p->rank, vshape, e, idx);
  int64_t off = 0;
  for (int d = 0; d < p->rank; d++) {
    if (idx[d] < 0 || idx[d] >= p->shape[d]) return NULL;
    off += idx[d] * p->stride[d];
  }
  return p->data + off * dt_bytes(p->dtype);
}

/* -- Race checks -------------------------------------------------------------------- */

const char *interp_user_name(const ir_op *op) {
  switch (op->code) {
  case IR_tma_load: return "copy_gmem_to_smem";
  case IR_tma_store: return "copy_smem_to_gmem";
  case IR_load: return "the SMEM load";
  case IR_store: return "the SMEM store";
  case IR_tcgen05_mma: return "tcgen05_mma";
  case IR_cluster_cancel: return "try_cluster_cancel";
  case IR_cancel_query: return "query_cluster_cancel";
  default: return ir_optab[op->code].name;
  }
}

void interp_smem_access(interp *I, const iagent *a, const ir_op *op, int blk, const unsigned char *q, int bytes, int how) {
  const ir_kernel *k = I->k;
  ishadow *sh = I->blocks[blk].shadow + (q - I->blocks[blk].smem);
  uint32_t me = (uint32_t)(a - I->agents);
  for (int i = 0; i < bytes; i++, sh++) {
    if (how == ISH_WRITE) {
      if (sh->mma) interp_mma_overwrite(I, op, sh);
      sh->gop = (uint32_t)(op - k->ops.v) + 1;
      sh->gepoch = a->epoch;
      sh->gagent = (uint16_t)me;
      sh->gclk = a->clock ? a->clock[me] : 0;
      continue;
    }
    if (sh->gop && I->agents[sh->gagent].block != a->block && (!a->clock || a->clock[sh->gagent] <= sh->gclk)) {
      const iagent *wa = &I->agents[sh->gagent];
      FAULT(I, op, "%s in block %d of the cluster reads SMEM of block %d that block %d wrote at %s, with no cluster "
            "barrier between: the writer arrives on an mgpu.ClusterBarrier after the write and the reader waits on it "
            "before the read", interp_user_name(op), a->block % I->cblocks, blk % I->cblocks, wa->block % I->cblocks,
            ir_loc(k, &k->ops.v[sh->gop - 1]));
    }
    if (sh->lop && blk == a->block && (sh->lblk != a->block || a->waits[sh->lbar] < (int64_t)sh->lphase)) {
      const ir_op *w = &k->ops.v[sh->lop - 1];
      FAULT(I, op, "%s reads SMEM that the %s at %s is still writing: warpgroup %d of block %d has not waited for the "
            "barrier completion that %s signals (barrier_wait before reading)",
            interp_user_name(op), interp_user_name(w), ir_loc(k, w), a->wg, a->block,
            w->code == IR_tma_load ? "copy" : w->code == IR_async_store_smem ? "store" : "answer");
    }
    if (how == ISH_ASYNC_READ && sh->gop) {
      const iagent *wa = &I->agents[sh->gagent];
      if (wa->epoch == sh->gepoch) {
        const ir_op *w = &k->ops.v[sh->gop - 1];
        FAULT(I, op, "%s reads SMEM through the async proxy that warpgroup %d of block %d wrote from registers at %s with no "
              "commit_smem since: call mgpu.commit_smem() between the register stores and the %s",
              interp_user_name(op), wa->wg, wa->block, ir_loc(k, w), interp_user_name(op));
      }
    }
  }
}

MGPU_NORET void interp_mma_overwrite(interp *I, const ir_op *op, const ishadow *sh) {
  const ir_kernel *k = I->k;
  FAULT(I, op, "%s writes SMEM that the wgmma at %s is still reading: wait for that wgmma (mgpu.wgmma_wait) before "
        "reusing its operands' buffer (in a pipeline, release the slot later with delay_release)",
        interp_user_name(op), ir_loc(k, &k->ops.v[sh->mop - 1]));
}

void interp_smem_load_mark(interp *I, const ir_op *op, int blk, const unsigned char *q, int bytes, int bar_blk, int bar,
                           int64_t phase) {
  ishadow *sh = I->blocks[blk].shadow + (q - I->blocks[blk].smem);
  for (int i = 0; i < bytes; i++, sh++) {
    if (sh->mma) interp_mma_overwrite(I, op, sh);
    sh->gop = 0;   /* the copy's data replaces the register writes */
    sh->lop = (uint32_t)(op - I->k->ops.v) + 1;
    sh->lblk = (uint16_t)bar_blk;
    sh->lbar = (uint16_t)bar;
    sh->lphase = (uint32_t)phase;
  }
}

static void do_load(interp *I, iagent *a, const ir_op *op) {
  uint32_t rv = ir_opds(I->k, op)[0];
  const iref *r = a->slots[rv].ref;
  const ir_type *t = ir_vtype(I->k, rv);
  ival *out = val(a, op->res);
  int64_t n = ir_numel(t);
  if (r->space == MGPU_SPACE_REGS) {   /* an accumulator: every wgmma finishes first */
    interp_wgmma_wait(I, a, 0);
    int64_t ld = ir_vtype(I->k, (uint32_t)r->root)->shape[1];
    const ival *acc = val(a, (uint32_t)r->root) + r->off[0] * ld + r->off[1];   /* a slice: whole rows of N */
    for (int64_t e = 0; e < n; e++) out[e] = acc[(e / t->shape[1]) * ld + e % t->shape[1]];
    return;
  }
  bool fl = dt_isfloat(t->dtype);
  bool pending = r->space == MGPU_SPACE_GMEM && interp_gmem_stores_pending(I, interp_pslot(I, r));
  for (int64_t e = 0; e < n; e++) {
    const unsigned char *q = interp_elem(I, op, r, t->shape, e, a->block);
    if (!q) { if (fl) out[e].f = 0; else out[e].i = 0; continue; }
    if (pending) {
      int64_t idx[IR_MAXRANK];
      root_index(r, interp_param(I, r)->rank, t->shape, e, idx);
      interp_gmem_read_check(I, a, op, interp_pslot(I, r), interp_param(I, r)->rank, idx, NULL);
    }
    if (r->space == MGPU_SPACE_SMEM) interp_smem_access(I, a, op, interp_smem_block(I, r, a->block), q, dt_bytes(t->dtype), ISH_READ);
    else interp_race_access(I, op, a->block, interp_pslot(I, r), q, NULL);
    if (fl) out[e].f = dt_load(t->dtype, q);
    else out[e].i = dt_load_int(t->dtype, q);
  }
}

/* One read-modify-write per warpgroup; every thread sees the old value.
** The interpreter runs one warpgroup at a time, so it is atomic. */
static void do_atomic(interp *I, iagent *a, const ir_op *op) {
  const uint32_t *o = ir_opds(I->k, op);
  const int64_t *at = ir_ints(I->k, op);
  const iref *r = a->slots[o[0]].ref;
  const ir_type *t = ir_vtype(I->k, o[0]);
  ival *out = val(a, op->res);
  unsigned char *q = interp_elem(I, op, r, t->shape, 0, a->block);
  if (!q) { out->i = 0; return; }   /* outside the array: nothing happens and 0 is read, as on the GPU */
  if (r->space == MGPU_SPACE_GMEM) interp_race_sync(I, a->block, interp_pslot(I, r), q, true, true);
  int dt = t->dtype;
  const ival *v = val(a, o[1]);
  if (dt == MGPU_F32) {
    double old = dt_load(dt, q);
    out->f = old;
    dt_store(dt, q, at[0] == IR_ATOM_ADD ? old + v->f : v->f);
    return;
  }
  int64_t old = dt_load_int(dt, q), x = v->i, nv = old;
  bool uns = dt == MGPU_U32 || dt == MGPU_U64;
  switch (at[0]) {
  case IR_ATOM_ADD: nv = old + x; break;
  case IR_ATOM_EXCH: nv = x; break;
  case IR_ATOM_CAS: if (old == x) nv = val(a, o[2])->i; break;
  case IR_ATOM_MAX: nv = uns ? ((uint64_t)x > (uint64_t)old ? x : old) : (x > old ? x : old); break;
  case IR_ATOM_MIN: nv = uns ? ((uint64_t)x < (uint64_t)old ? x : old) : (x < old ? x : old); break;
  case IR_ATOM_AND: nv = old & x; break;
  case IR_ATOM_OR: nv = old | x; break;
  default: nv = old ^ x; break;
  }
  out->i = old;
  dt_store_int(dt, q, dt_wrap_int(dt, nv));
}

/* debug_print: the agent's line(s), from the printf form of the format
** (ir_print_format) with each conversion applied to its own value, as the
** GPU's vprintf does.  Arrays print one line per element in row-major order. */
static void print_line(strbuf *sb, const char *fmt, const ival *const *vals, int nvals) {
  int j = 0;
  for (const char *p = fmt; *p; p++) {
    if (*p != '%') { sb_putc(sb, *p); continue; }
    if (p[1] == '%') { sb_putc(sb, '%'); p++; continue; }
    bool wide = p[1] == 'l';   /* %lld, %llu */
    p += wide ? 3 : 1;
    mgpu_assert(j < nvals);
    const ival *v = vals[j++];
    switch (*p) {
    case 'f': sb_printf(sb, "%f", v->f); break;
    case 'd': if (wide) sb_printf(sb, "%lld", (long long)v->i); else sb_printf(sb, "%d", (int)v->i); break;
    default: if (wide) sb_printf(sb, "%llu", (unsigned long long)v->i); else sb_printf(sb, "%u", (unsigned)v->i); break;
    }
  }
}

static void do_print(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, op);
  strbuf fmt;
  sb_init(&fmt, k->alloc);
  ir_print_format(k, op, &fmt);
  if (fmt.oom) { sb_free(&fmt); diag_throw(I->d, ERR_NOMEM, ""); }
  const ival *vals[IR_MAXRES + IR_MAXRANK];
  const ir_type *t = op->nopd ? ir_vtype(k, o[0]) : NULL;
  if (t && t->kind == MGPU_VALUE_ARRAY) {
    ival idx[IR_MAXRANK];
    int64_t n = ir_numel(t);
    for (int d = 0; d < t->rank; d++) vals[d] = &idx[d];
    for (int64_t e = 0; e < n; e++) {
      int64_t rest = e;
      for (int d = t->rank - 1; d >= 0; d--) { idx[d].i = rest % t->shape[d]; rest /= t->shape[d]; }
      vals[t->rank] = &val(a, o[0])[e];
      print_line(&a->out, sb_str(&fmt), vals, t->rank + 1);
    }
  } else {
    for (uint32_t i = 0; i < op->nopd; i++) vals[i] = val(a, o[i]);
    print_line(&a->out, sb_str(&fmt), vals, (int)op->nopd);
  }
  sb_free(&fmt);
  if (a->out.oom) diag_throw(I->d, ERR_NOMEM, "");
}

static void do_store(interp *I, iagent *a, const ir_op *op) {
  const uint32_t *o = ir_opds(I->k, op);
  const iref *r = a->slots[o[0]].ref;
  const ir_type *t = ir_vtype(I->k, o[0]);
  const ival *src = val(a, o[1]);
  int s = stride_of(I->k, o[1]);
  int64_t n = ir_numel(t);
  if (r->space == MGPU_SPACE_REGS) {
    interp_wgmma_wait(I, a, 0);
    int64_t ld = ir_vtype(I->k, (uint32_t)r->root)->shape[1];
    ival *acc = val(a, (uint32_t)r->root) + r->off[0] * ld + r->off[1];
    for (int64_t e = 0; e < n; e++) acc[(e / t->shape[1]) * ld + e % t->shape[1]] = src[e * s];
    return;
  }
  bool fl = dt_isfloat(t->dtype);
  int eb = dt_bytes(t->dtype);
  for (int64_t e = 0; e < n; e++) {
    unsigned char *q = interp_elem(I, op, r, t->shape, e, a->block), nb[8];
    if (!q) continue;
    if (fl) dt_store(t->dtype, nb, src[e * s].f);
    else dt_store_int(t->dtype, nb, src[e * s].i);
    if (r->space == MGPU_SPACE_SMEM) interp_smem_access(I, a, op, interp_smem_block(I, r, a->block), q, eb, ISH_WRITE);
    else interp_race_access(I, op, a->block, interp_pslot(I, r), q, nb);
    memcpy(q, nb, (size_t)eb);
  }
}

/* smem_alloc, barrier_alloc, acc_alloc: a ref to the whole allocation
** (accumulators start at zero). */
static void do_alloc(interp *I, iagent *a, const ir_op *op) {
  iref *r = a->slots[op->res].ref;
  const ir_type *t = ir_vtype(I->k, op->res);
  memset(r, 0, sizeof *r);
  r->root = (int32_t)op->res;
  r->space = t->space;
  r->rank = t->rank;
  for (int d = 0; d < t->rank; d++) r->dim[d] = (int8_t)d;
  if (t->space == MGPU_SPACE_REGS) {
    interp_wgmma_wait(I, a, 0);
    memset(val(a, op->res), 0, sizeof(ival) * (size_t)ir_numel(t));
  }
}

static void do_transpose(interp *I, iagent *a, const ir_op *op) {
  const iref *src = a->slots[ir_opds(I->k, op)[0]].ref;
  iref *dst = a->slots[op->res].ref;
  const int64_t *perm = ir_ints(I->k, op);
  *dst = *src;
  for (int j = 0; j < src->rank; j++) dst->dim[j] = src->dim[perm[j]];
}

static void do_view(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, op);
  const iref *src = a->slots[o[0]].ref;
  const int64_t *at = ir_ints(k, op);
  iref *dst = a->slots[op->res].ref;
  uint32_t nidx = op->niat / 3, dyn = 1;
  memcpy(dst->off, src->off, sizeof dst->off);
  dst->root = src->root;
  dst->space = src->space;
  dst->dev = src->dev;
  dst->cta = src->cta;
  dst->rank = 0;
  for (uint32_t i = 0; i < src->rank; i++) {
    if (i >= nidx) { dst->dim[dst->rank++] = src->dim[i]; continue; }
    int64_t kind = at[3 * i], start = at[3 * i + 1];
    if (start == IR_DYNAMIC) start = val(a, o[dyn++])->i;
    if (kind != IR_IDX_ALL) dst->off[src->dim[i]] += start;
    if (kind != IR_IDX_INT) dst->dim[dst->rank++] = src->dim[i];
  }
}

/* reshape_ref: rows of the allocation reshaped (ir_ref.c), from the source's first element. */
static void do_reshape_ref(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const iref *src = a->slots[ir_opds(k, op)[0]].ref;
  iref *dst = a->slots[op->res].ref;
  const ir_type *t = ir_vtype(k, op->res);
  int64_t shape[IR_MAXRANK], stride = 1, start = 0, unit = ir_numel(t) / t->shape[0];
  int rank;
  ir_root_shape(k, (uint32_t)src->root, shape, &rank);
  for (int d = rank - 1; d >= 0; d--) { start += src->off[d] * stride; stride *= shape[d]; }
  memset(dst, 0, sizeof *dst);
  dst->root = (int32_t)op->res;
  dst->space = src->space;
  dst->rank = t->rank;
  for (int d = 0; d < t->rank; d++) dst->dim[d] = (int8_t)d;
  dst->off[0] = start / unit;   /* whole rows: ir_reshape_check */
}

/* -- Array reshaping and reductions -------------------------------------------------- */

/* Row-major strides of a shape. */
static void strides_of(const ir_type *t, int64_t *st) {
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) { st[i] = s; s *= t->shape[i]; }
}

static void do_bcastdim(const ir_kernel *k, const ir_op *op, const ival *src, ival *out) {
  const ir_type *rt = ir_vtype(k, op->res), *st = ir_vtype(k, ir_opds(k, op)[0]);
  const int64_t *at = ir_ints(k, op);
  const int64_t *dims = at + 1 + rt->rank;
  int64_t sstr[IR_MAXRANK];
  strides_of(st, sstr);
  int64_t n = ir_numel(rt);
  for (int64_t e = 0; e < n; e++) {
    int64_t rem = e, idx[IR_MAXRANK];
    for (int i = rt->rank - 1; i >= 0; i--) { idx[i] = rem % rt->shape[i]; rem /= rt->shape[i]; }
    int64_t off = 0;
    for (int i = 0; i < st->rank; i++) off += idx[dims[i]] * sstr[i];
    out[e] = src[st->kind == MGPU_VALUE_ARRAY ? off : 0];
  }
}

static void do_iota(const ir_kernel *k, const ir_op *op, ival *out) {
  const ir_type *rt = ir_vtype(k, op->res);
  int dim = (int)ir_ints(k, op)[1];
  int64_t inner = 1;
  for (int i = dim + 1; i < rt->rank; i++) inner *= rt->shape[i];
  int64_t n = ir_numel(rt);
  for (int64_t e = 0; e < n; e++) out[e] = interp_const(rt->dtype, (double)((e / inner) % rt->shape[dim]));
}

static void do_reduce(interp *I, const ir_op *op, const ival *src, ival *out) {
  const ir_kernel *k = I->k;
  const ir_type *t = ir_vtype(k, ir_opds(k, op)[0]);
  const int64_t *axes = ir_ints(k, op);
  bool gone[IR_MAXRANK] = { false };
  for (uint32_t i = 0; i < op->niat; i++) gone[axes[i]] = true;
  int64_t rshape[IR_MAXRANK], rstr[IR_MAXRANK];
  int rr = 0;
  for (int i = 0; i < t->rank; i++) if (!gone[i]) rshape[rr++] = t->shape[i];
  int64_t s = 1;
  for (int i = rr - 1; i >= 0; i--) { rstr[i] = s; s *= rshape[i]; }
  int64_t nout = s, n = ir_numel(t);
  bool fl = dt_isfloat(t->dtype), sum = op->code == IR_reduce_sum, mx = op->code == IR_reduce_max;
  size_t bytes = (size_t)nout * (sizeof(double) + sizeof(int64_t) + sizeof(bool));
  char *mem = mem_calloc(k->alloc, bytes);
  if (!mem) diag_throw(I->d, ERR_NOMEM, "");
  double *acc = (double *)mem;
  int64_t *iacc = (int64_t *)(acc + nout);
  bool *first = (bool *)(iacc + nout);
  for (int64_t e = 0; e < n; e++) {
    int64_t rem = e, o = 0;
    for (int i = t->rank - 1, j = rr - 1; i >= 0; i--) {
      int64_t ix = rem % t->shape[i];
      rem /= t->shape[i];
      if (!gone[i]) o += ix * rstr[j--];
    }
    if (fl) {
      double x = src[e].f;
      if (sum) acc[o] += x;
      else if (!first[o]) acc[o] = x;
      else if (isnan(acc[o]) || isnan(x)) acc[o] = NAN;
      else acc[o] = mx ? fmax(acc[o], x) : fmin(acc[o], x);
    } else {
      int64_t x = src[e].i;
      if (sum) iacc[o] = (int64_t)((uint64_t)iacc[o] + (uint64_t)x);
      else if (!first[o]) iacc[o] = x;
      else {
        bool sg = dt_issigned(t->dtype);
        bool gt = sg ? x > iacc[o] : (uint64_t)x > (uint64_t)iacc[o];
        if (mx == gt) iacc[o] = x;
      }
    }
    first[o] = true;
  }
  for (int64_t o = 0; o < nout; o++) {
    if (fl) out[o].f = dt_round(t->dtype, acc[o]);
    else out[o].i = dt_wrap_int(t->dtype, iacc[o]);
  }
  mem_free(k->alloc, mem, bytes);
}

/* -- Values ---------------------------------------------------------------------- */

static void copy_vals(interp *I, iagent *a, const uint32_t *from, uint32_t first_to, uint32_t n) {
  /* stage through scratch so that yields may permute carried values */
  int64_t off = 0;
  for (uint32_t i = 0; i < n; i++) {
    int64_t m = vnumel(I->k, from[i]);
    memcpy(I->scratch + off, val(a, from[i]), sizeof(ival) * m);
    off += m;
  }
  off = 0;
  for (uint32_t i = 0; i < n; i++) {
    int64_t m = vnumel(I->k, first_to + i);
    memcpy(val(a, first_to + i), I->scratch + off, sizeof(ival) * m);
    off += m;
  }
}

/* profile: the warpgroup's event (tag = name id | end << 31, SM 0, the
** step counter as its clock) in its trace's row of the buffer -- in each
** of its 4 warps' rows, with the same clock, when warps = 4; a full row
** only counts (the host reports the dropped events). */
static void do_profile(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const int64_t *at = ir_ints(k, op);
  const iparam *p = interp_param(I, a->slots[ir_opds(k, op)[0]].ref);
  int nwg = k->opts.num_threads > 0 ? k->opts.num_threads : 1;
  int warps = op->niat > 2 ? (int)at[2] : 1;
  for (int w = 0; w < warps; w++) {
    int64_t trace = ((I->clusters_done * I->cblocks + a->block % I->cblocks) * nwg + a->wg) * warps + w;
    if (trace >= p->shape[0]) FAULT(I, op, "profile: trace %lld is outside the buffer", (long long)trace);
    uint32_t *row = (uint32_t *)(void *)p->data + trace * p->shape[1];
    uint32_t n = row[0], space = (uint32_t)(p->shape[1] / 4 - 1);
    row[0] = n + 1;
    if (n >= space) continue;
    uint32_t *ev = row + 4 + 4 * (size_t)n;
    ev[0] = (uint32_t)at[0] | (uint32_t)at[1] << 31;
    ev[1] = 0;
    ev[2] = (uint32_t)I->steps;
    ev[3] = (uint32_t)((uint64_t)I->steps >> 32);
  }
}

/* remote: the same view of the parameter, on another device of the launch. */
static void do_remote(interp *I, iagent *a, const ir_op *op) {
  const uint32_t *o = ir_opds(I->k, op);
  int64_t dev = val(a, o[1])->i;
  if (dev < 0 || dev >= I->ndev)
    FAULT(I, op, "on_device: device %lld is out of range: the launch has %d device%s (0..%d)", (long long)dev, I->ndev,
          I->ndev == 1 ? "" : "s", I->ndev - 1);
  *a->slots[op->res].ref = *a->slots[o[0]].ref;
  a->slots[op->res].ref->dev = (int8_t)dev;
}

int interp_cluster_block(interp *I, const ir_op *op, int blk, int64_t rank, const char *what) {
  if (rank < 0 || rank >= I->cblocks)
    FAULT(I, op, "%s: block %lld is outside the cluster of %d blocks (ranks 0..%d)", what, (long long)rank, I->cblocks,
          I->cblocks - 1);
  return blk - blk % I->cblocks + (int)rank;
}

/* cluster_ref: the same SMEM view, in the block of that rank in the cluster. */
static void do_cluster_ref(interp *I, iagent *a, const ir_op *op) {
  const uint32_t *o = ir_opds(I->k, op);
  int blk = interp_cluster_block(I, op, a->block, val(a, o[1])->i, "cluster_ref");
  *a->slots[op->res].ref = *a->slots[o[0]].ref;
  a->slots[op->res].ref->cta = (int8_t)(blk % I->cblocks + 1);
}

/* multimem_store: the value into the ref's view on every device of the
** launch; multimem_load: the reduction over the devices of the view. */
static void do_multimem(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  const uint32_t *o = ir_opds(k, op);
  const ir_type *t = ir_vtype(k, o[0]);
  iref r = *a->slots[o[0]].ref;
  int64_t n = ir_numel(t);
  int dt = t->dtype;
  bool fl = dt_isfloat(dt);
  if (op->code == IR_multimem_store) {
    const ival *v = val(a, o[1]);
    int sv = stride_of(k, o[1]);
    for (int d = 0; d < I->ndev; d++) {
      r.dev = (int8_t)d;
      for (int64_t e = 0; e < n; e++) {
        unsigned char *q = interp_elem(I, op, &r, t->shape, e, a->block);
        if (!q) continue;   /* clipped, as stores are */
        if (fl) dt_store(dt, q, v[e * sv].f);
        else dt_store_int(dt, q, dt_wrap_int(dt, v[e * sv].i));
      }
    }
    return;
  }
  int how = (int)ir_ints(k, op)[0];
  ival *out = val(a, op->res);
  for (int64_t e = 0; e < n; e++) {
    double f = 0;
    int64_t x = 0;
    for (int d = 0; d < I->ndev; d++) {
      r.dev = (int8_t)d;
      const unsigned char *q = interp_elem(I, op, &r, t->shape, e, a->block);
      if (fl) { f += q ? dt_load(dt, q) : 0; continue; }
      int64_t y = q ? dt_load_int(dt, q) : 0;
      bool uns = dt == MGPU_U32;
      if (d == 0 || how == 0) x = how == 0 ? x + y : y;
      else if (how == 1) x = uns ? ((uint64_t)y < (uint64_t)x ? y : x) : (y < x ? y : x);
      else x = uns ? ((uint64_t)y > (uint64_t)x ? y : x) : (y > x ? y : x);
    }
    if (fl) out[e].f = dt_round(dt, f);
    else out[e].i = dt_wrap_int(dt, x);
  }
}

/* sem_wait: false while the semaphore holds less than the value (the agent
** waits); otherwise the value is taken off and the agent goes on. */
static bool sem_wait(interp *I, iagent *a, const ir_op *op) {
  const uint32_t *o = ir_opds(I->k, op);
  const iref *r = a->slots[o[0]].ref;
  unsigned char *q = interp_elem(I, op, r, ir_vtype(I->k, o[0])->shape, 0, a->block);
  if (!q) FAULT(I, op, "semaphore_wait: the semaphore is outside its array");
  int64_t have = dt_load_int(MGPU_I32, q), want = val(a, o[1])->i;
  if (want < 0) FAULT(I, op, "semaphore_wait: the value must not be negative, got %lld", (long long)want);
  if (have < want) return false;
  dt_store_int(MGPU_I32, q, have - want);
  interp_race_sync(I, a->block, interp_pslot(I, r), q, true, false);
  return true;
}

/* -- The work limit ----------------------------------------------------------------- */

static _Atomic int64_t work_limit;

void interp_set_work_limit(int64_t limit) { atomic_store(&work_limit, limit > 0 ? limit : 0); }

/* Count `units` of work; past the limit the run stops with a fault at op
** (NULL: between blocks). */
static void charge(interp *I, const ir_op *op, int64_t units) {
  I->work += units;
  if (!I->work_limit || I->work <= I->work_limit) return;
  if (op) FAULT(I, op, "the interpreter's work limit (%lld) is used up", (long long)I->work_limit);
  diag_throw(I->d, ERR_INTERP, "", "the interpreter's work limit is used up");
}

/* The work of an op without results (a store, a copy, an MMA, a print):
** the elements of its largest operand; an MMA's, two per multiply-add (the
** accumulator's elements times the depth of its A operand), each of which
** reads two operand elements through their layouts. */
static int64_t operand_work(const ir_kernel *k, const ir_op *op) {
  int64_t most = 1;
  const uint32_t *o = ir_opds(k, op);
  if ((op->code == IR_wgmma || op->code == IR_tcgen05_mma) && op->nopd >= 2) {
    const ir_type *acc = ir_vtype(k, o[0]), *at = ir_vtype(k, o[1]);
    return 2 * ir_numel(acc) * (at->rank >= 2 ? at->shape[at->rank - 1] : 1);
  }
  for (uint32_t i = 0; i < op->nopd; i++) {
    const ir_type *t = ir_vtype(k, o[i]);
    if (t->kind == MGPU_VALUE_SCALAR) continue;
    int64_t m = ir_numel(t);
    if (m > most) most = m;
  }
  return most;
}

static void eval(interp *I, iagent *a, const ir_op *op) {
  const ir_kernel *k = I->k;
  I->steps++;
  const uint32_t *o = ir_opds(k, op);
  const int64_t *at = ir_ints(k, op);
  ival *out = op->nres ? val(a, op->res) : NULL;
  int64_t n = op->nres ? vnumel(k, op->res) : 0;
  charge(I, op, n ? n : operand_work(k, op));
  switch (ir_optab[op->code].cls) {
  case IRC_CONST: out[0] = interp_const((int)at[0], op->num); break;
  case IRC_GRIDIDX:
    out[0].i = op->code == IR_program_id ? I->block[at[0]] : k->opts.grid[at[0]];
    break;
  case IRC_THREADIDX: out[0].i = a->wg; break;
  case IRC_CLUSTERIDX: out[0].i = I->blocks[a->block].cidx[at[0]]; break;
  case IRC_UNARY:
    interp_unary(op->code, ir_vtype(k, o[0])->dtype, k->opts.approx_math != 0, val(a, o[0]), out, n);
    break;
  case IRC_BINARY:
    interp_binary(op->code, ir_vtype(k, o[0])->dtype, val(a, o[0]), stride_of(k, o[0]),
                  val(a, o[1]), stride_of(k, o[1]), out, n);
    break;
  case IRC_COMPARE:
    interp_compare(op->code, ir_vtype(k, o[0])->dtype, val(a, o[0]), stride_of(k, o[0]),
                   val(a, o[1]), stride_of(k, o[1]), out, n);
    break;
  case IRC_SELECT: {
    const ival *c = val(a, o[0]), *x = val(a, o[1]), *y = val(a, o[2]);
    int sc = stride_of(k, o[0]), sx = stride_of(k, o[1]), sy = stride_of(k, o[2]);
    for (int64_t i = 0; i < n; i++) out[i] = c[i * sc].i ? x[i * sx] : y[i * sy];
    break;
  }
  case IRC_CONVERT: {
    int from = ir_vtype(k, o[0])->dtype;
    interp_convert(op->code, from, (int)at[0], val(a, o[0]), out, n);
    break;
  }
  case IRC_BROADCAST:
    for (int64_t i = 0; i < n; i++) out[i] = val(a, o[0])[0];
    break;
  case IRC_BCASTDIM: do_bcastdim(k, op, val(a, o[0]), out); break;
  case IRC_RESHAPE: case IRC_LAYOUTCAST: memcpy(out, val(a, o[0]), sizeof(ival) * (size_t)n); break;
  case IRC_IOTA: do_iota(k, op, out); break;
  case IRC_REDUCE: do_reduce(I, op, val(a, o[0]), out); break;
  case IRC_VIEW: do_view(I, a, op); break;
  case IRC_LOAD: do_load(I, a, op); break;
  case IRC_STORE: do_store(I, a, op); break;
  case IRC_VIEWPERM: do_transpose(I, a, op); break;
  case IRC_VIEWRESHAPE: do_reshape_ref(I, a, op); break;
  case IRC_ALLOC: case IRC_BARALLOC: case IRC_ACCALLOC: case IRC_TMEMALLOC: do_alloc(I, a, op); break;
  case IRC_TMEMLOAD: case IRC_TMEMSTORE: interp_tmem_access(I, a, op); break;
  case IRC_BARRIER: interp_barrier_arrive(I, a, op); break;   /* (waits are scheduled in run_agent) */
  case IRC_TMALOAD: interp_tma_load(I, a, op); break;
  case IRC_ASYNCSMEM: interp_async_store_smem(I, a, op); break;
  case IRC_TMASTORE: interp_tma_store(I, a, op); break;
  case IRC_WGMMA: interp_wgmma(I, a, op); break;
  case IRC_TCMMA: interp_tcgen05_mma(I, a, op); break;
  case IRC_TCCOMMIT: interp_tcgen05_commit(I, a, op); break;
  case IRC_CANCEL: interp_cluster_cancel(I, a, op); break;
  case IRC_CANCELQ: interp_cancel_query(I, a, op); break;
  case IRC_ATOMIC: do_atomic(I, a, op); break;
  case IRC_PRINT: do_print(I, a, op); break;
  case IRC_PROF: do_profile(I, a, op); break;
  case IRC_REMOTE: do_remote(I, a, op); break;
  case IRC_CLUSTERREF: do_cluster_ref(I, a, op); break;
  case IRC_MMSTORE: case IRC_MMLOAD: do_multimem(I, a, op); break;
  case IRC_SYNC:
    if (op->code == IR_commit_group) a->group++;
    else if (op->code == IR_commit_smem) a->epoch++;
    else if (op->code == IR_wait_group) interp_wait_group(I, a, at[0]);
    else if (op->code == IR_wgmma_wait) interp_wgmma_wait(I, a, at[0]);
    else if (op->code == IR_tmem_wait_load) { interp_tmem_sync(I, a, true); a->tmem_ld_epoch++; }
    else if (op->code == IR_tmem_commit) { interp_tmem_sync(I, a, false); a->tmem_st_epoch++; }
    break;   /* set_max_registers: nothing to model */
  default: mgpu_unreachable();
  }
}

void interp_fault(const interp *I, const ir_op *op, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  diag_throw(I->d, ERR_INTERP, ir_loc(I->k, op), msg);
}

/* -- Interrupts ---------------------------------------------------------------------- */

static volatile sig_atomic_t interrupt_requested;

void interp_interrupt(bool on) { interrupt_requested = on; }

static _Thread_local int64_t timeout_ms;

void interp_set_timeout(int64_t ms) { timeout_ms = ms > 0 ? ms : 0; }

/* Stop the launch at `op` if an interrupt was requested (consuming it) or
** the timeout has passed (the clock is read every 4096 ops); the fault
** unwinds through interp_run, which frees everything. */
static inline void check_interrupt(interp *I, const ir_op *op) {
  if (I->timeout_ms && ++I->tick == 4096) {
    I->tick = 0;
    if (time_ms() > I->deadline_ms)
      interp_fault(I, op, "the kernel was still running after the %lld ms timeout (MGPU_TIMEOUT_MS or "
                   "mgpu.configure{ timeout_ms })", (long long)I->timeout_ms);
  }
  if (!interrupt_requested) return;
  interrupt_requested = 0;
  interp_fault(I, op, "interrupted");
}

/* -- Control flow -------------------------------------------------------------------- */

static void push(interp *I, iagent *a, iframe f) {
  if (!vec_reserve(I->k->alloc, &a->stack, 1)) diag_throw(I->d, ERR_NOMEM, "");
  a->stack.v[a->stack.n++] = f;
}

/* Run agent `a` until it finishes or waits on something other agents must
** do; true if it made progress. */
static bool run_agent(interp *I, iagent *a) {
  const ir_kernel *k = I->k;
  uint32_t start = a->pc;
  bool moved = false;
  while (a->pc < k->ops.n) {
    uint32_t pc = a->pc;
    const ir_op *op = &k->ops.v[pc];
    check_interrupt(I, op);
    const uint32_t *o = ir_opds(k, op);
    charge(I, op, 1);
    switch (op->code) {
    case IR_barrier_wait:
      if (!interp_barrier_wait(I, a, op)) return moved || a->pc != start;
      a->pc = pc + 1;
      break;
    case IR_sem_wait:
      if (!sem_wait(I, a, op)) return moved || a->pc != start;
      a->pc = pc + 1;
      break;
    case IR_for: {
      int64_t lo = val(a, o[0])->i, hi = val(a, o[1])->i, step = val(a, o[2])->i;
      if (step <= 0) FAULT(I, op, "loop step must be positive, got %lld", (long long)step);
      if (lo >= hi) {
        copy_vals(I, a, o + 3, op->res, op->nres);
        a->pc = pc + ir_extent(k, pc);
        break;
      }
      push(I, a, (iframe){ pc, 0, lo, hi, step });
      val(a, op->arg)->i = lo;
      copy_vals(I, a, o + 3, op->arg + 1, op->narg - 1);
      a->pc = pc + 1;
      break;
    }
    case IR_while:
      copy_vals(I, a, o, op->arg, op->narg);
      push(I, a, (iframe){ pc, 0, 0, 0, 0 });
      a->pc = pc + 1;
      break;
    case IR_scoped:
    case IR_single_warp:   /* the interpreter runs a warpgroup as one agent: its first warp is all of it */
      push(I, a, (iframe){ pc, 0, 0, 0, 0 });
      a->pc = pc + 1;
      break;
    case IR_if:
      if (val(a, o[0])->i) {
        push(I, a, (iframe){ pc, 0, 0, 0, 0 });
        a->pc = pc + 1;
      } else if (op->body[1]) {
        push(I, a, (iframe){ pc, 1, 0, 0, 0 });
        a->pc = pc + 1 + op->body[0];
      } else {
        a->pc = pc + ir_extent(k, pc);
      }
      break;
    case IR_yield: {
      iframe *f = &a->stack.v[a->stack.n - 1];
      const ir_op *rop = &k->ops.v[f->op];
      if (rop->code == IR_while) {
        if (f->region == 1) {   /* the body's next carried values; test the condition again */
          copy_vals(I, a, o, rop->arg, op->nopd);
          f->region = 0;
          a->pc = f->op + 1;
          break;
        }
        if (val(a, o[0])->i) {
          f->region = 1;
          a->pc = f->op + 1 + rop->body[0];
          break;
        }
        uint32_t ids[IR_MAXRES];   /* done: the results are the carried values */
        for (uint32_t j = 0; j < rop->narg; j++) ids[j] = rop->arg + j;
        copy_vals(I, a, ids, rop->res, rop->nres);
        a->pc = f->op + ir_extent(k, f->op);
        a->stack.n--;
        break;
      }
      if (rop->code == IR_for) {
        f->iv += f->step;
        if (f->iv < f->hi) {
          copy_vals(I, a, o, rop->arg + 1, op->nopd);
          val(a, rop->arg)->i = f->iv;
          a->pc = f->op + 1;
          break;
        }
      }
      copy_vals(I, a, o, rop->res, rop->nres);
      a->pc = f->op + ir_extent(k, f->op);
      a->stack.n--;
      break;
    }
    default:
      eval(I, a, op);
      a->pc = pc + 1;
      break;
    }
    moved = true;
  }
  interp_agent_end(I, a);
  a->done = true;
  return true;
}

/* -- Setup ----------------------------------------------------------------------------- */

/* Accumulators own register data like arrays do. */
static int64_t data_of(const ir_kernel *k, uint32_t v) {
  const ir_type *t = ir_vtype(k, v);
  if (t->kind == MGPU_VALUE_REF) return t->space == MGPU_SPACE_REGS ? ir_numel(t) : 0;
  return vnumel(k, v);
}

/* Entries of I->clocks. */
static size_t clocks_size(const interp *I) {
  return (size_t)I->nagents * ((size_t)I->nagents + 2 * (size_t)I->nblocks * (size_t)(I->nbars + 1));
}

static void alloc_agents(interp *I) {
  const ir_kernel *k = I->k;
  const mem_alloc *al = k->alloc;
  int nthreads = k->opts.num_threads > 0 ? k->opts.num_threads : 1;
  I->nagents = nthreads * I->nblocks;
  I->agents = mem_calloc(al, sizeof(iagent) * (size_t)I->nagents);
  if (!I->agents) diag_throw(I->d, ERR_NOMEM, "");
  /* vector clocks (for the TMEM checks and reads of SMEM other blocks wrote: kernels with TMEM or
  ** cluster_ref only): one per agent, two per barrier of every block */
  if (I->ki->tmem_cols || ir_uses_dsmem(k)) {
    I->clocks = mem_calloc(al, sizeof(uint32_t) * clocks_size(I));
    if (!I->clocks) diag_throw(I->d, ERR_NOMEM, "");
    uint32_t *clk = I->clocks + (size_t)I->nagents * (size_t)I->nagents;
    for (int b = 0; b < I->nblocks; b++)
      for (int j = 0; j <= I->nbars; j++, clk += 2 * I->nagents) {
        I->blocks[b].bars[j].clock = clk;
        I->blocks[b].bars[j].done_clock = clk + I->nagents;
      }
  }
  int64_t total = 0, refs = 0;
  for (uint32_t v = 1; v < k->vals.n; v++) {
    int64_t m = data_of(k, v);
    total += m;
    if (ir_vtype(k, v)->kind == MGPU_VALUE_REF) refs++;
    else if (m > I->scratch_n) I->scratch_n = m;
  }
  I->scratch_n = (I->scratch_n ? I->scratch_n : 1) * IR_MAXRES;
  I->data_total = total;
  I->ref_total = refs;
  I->scratch = mem_calloc(al, sizeof(ival) * (size_t)I->scratch_n);
  if (!I->scratch) diag_throw(I->d, ERR_NOMEM, "");
  for (int w = 0; w < I->nagents; w++) {
    iagent *a = &I->agents[w];
    a->wg = w % nthreads;
    a->block = w / nthreads;
    a->dev = a->block / I->cblocks;
    a->slots = mem_calloc(al, sizeof(islot) * k->vals.n);
    ival *data = a->data_block = total ? mem_calloc(al, sizeof(ival) * (size_t)total) : NULL;
    iref *rs = a->ref_block = refs ? mem_calloc(al, sizeof(iref) * (size_t)refs) : NULL;
    a->waits = mem_calloc(al, sizeof(int64_t) * (size_t)(I->nbars + 1));
    a->clock = I->clocks ? I->clocks + (size_t)w * (size_t)I->nagents : NULL;
    sb_init(&a->out, al);
    if (!a->slots || (total && !data) || (refs && !rs) || !a->waits) diag_throw(I->d, ERR_NOMEM, "");
    for (uint32_t v = 1; v < k->vals.n; v++) {
      if (ir_vtype(k, v)->kind == MGPU_VALUE_REF) a->slots[v].ref = rs++;
      int64_t m = data_of(k, v);
      if (m) { a->slots[v].data = data; data += m; }
    }
    for (uint32_t i = 0; i < k->params.n; i++) {
      if (k->params.v[i].role == MGPU_PARAM_SCALAR) continue;
      iref *r = a->slots[k->params.v[i].value].ref;
      const ir_type *t = ir_vtype(k, k->params.v[i].value);
      r->root = (int32_t)i;
      r->dev = (int8_t)a->dev;
      r->space = MGPU_SPACE_GMEM;
      r->rank = t->rank;
      for (int d = 0; d < t->rank; d++) r->dim[d] = (int8_t)d;
    }
  }
}

/* The blocks of a cluster (their SMEM and mbarriers) and the transform map
** of every allocation. */
static void alloc_blocks(interp *I) {
  const ir_kernel *k = I->k;
  const mem_alloc *al = k->alloc;
  I->cblocks = ir_cluster_blocks(&k->opts);
  I->nblocks = I->cblocks * I->ndev;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    I->nmaps += op->code == IR_smem_alloc || op->code == IR_reshape_ref;
    if (op->code == IR_barrier_alloc) I->nbars += (int)ir_ints(k, op)[0];
  }
  I->map_of = mem_calloc(al, sizeof(uint32_t) * k->vals.n);
  I->bar_of = mem_calloc(al, sizeof(int32_t) * k->vals.n);
  I->maps = I->nmaps ? mem_calloc(al, sizeof(xf_map) * I->nmaps) : NULL;
  I->blocks = mem_calloc(al, sizeof(iblock) * (size_t)I->nblocks);
  if (!I->map_of || !I->bar_of || (I->nmaps && !I->maps) || !I->blocks) diag_throw(I->d, ERR_NOMEM, "");
  for (int b = 0; b < I->nblocks; b++) {
    iblock *bl = &I->blocks[b];
    bl->smem = I->ki->smem_bytes ? mem_calloc(al, (size_t)I->ki->smem_bytes) : NULL;
    bl->shadow = I->ki->smem_bytes ? mem_calloc(al, sizeof(ishadow) * (size_t)I->ki->smem_bytes) : NULL;
    bl->bars = mem_calloc(al, sizeof(ibar) * (size_t)(I->nbars + 1));
    size_t cells = (size_t)IR_TMEM_ROWS * (size_t)I->ki->tmem_cols;
    bl->tmem = cells ? mem_realloc(al, NULL, 0, 4 * cells) : NULL;
    bl->tshadow = cells ? mem_realloc(al, NULL, 0, sizeof(itshadow) * cells) : NULL;
    if ((I->ki->smem_bytes && (!bl->smem || !bl->shadow)) || !bl->bars || (cells && (!bl->tmem || !bl->tshadow)))
      diag_throw(I->d, ERR_NOMEM, "");
    int rest = b % I->cblocks;   /* cluster axis 0 varies fastest, like %cluster_ctarank */
    for (int i = 0; i < k->opts.cluster_rank; i++) { bl->cidx[i] = rest % k->opts.cluster[i]; rest /= k->opts.cluster[i]; }
  }
  uint32_t j = 0;
  int nb = 0;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    if (op->code == IR_barrier_alloc) { I->bar_of[op->res] = nb; nb += (int)ir_ints(k, op)[0]; }
    if (op->code != IR_smem_alloc && op->code != IR_reshape_ref) continue;
    const ir_op *alloc = &k->ops.v[k->vals.v[ir_ref_alloc(k, op->res)].def];
    int64_t shape[IR_MAXRANK];
    int rank;
    ir_root_shape(k, op->res, shape, &rank);
    xf_chain c;
    bool ok = xf_parse(ir_str(k, alloc->text), &c, NULL, 0) &&
              xf_apply(&c, shape, rank, dt_bytes(ir_vtype(k, op->res)->dtype), &I->maps[j], NULL, 0);
    mgpu_assert(ok);   /* the builder checked the transforms (and that a reshape keeps the tiled dims) */
    I->map_of[op->res] = j++;
  }
}

static void free_all(interp *I) {
  const ir_kernel *k = I->k;
  const mem_alloc *al = k->alloc;
  for (int w = 0; I->agents && w < I->nagents; w++) {
    iagent *a = &I->agents[w];
    mem_free(al, a->data_block, sizeof(ival) * (size_t)I->data_total);
    mem_free(al, a->ref_block, sizeof(iref) * (size_t)I->ref_total);
    mem_free(al, a->slots, sizeof(islot) * k->vals.n);
    mem_free(al, a->waits, sizeof(int64_t) * (size_t)(I->nbars + 1));
    vec_free(al, &a->stack);
    vec_free(al, &a->ld_clock);
    vec_free(al, &a->st_clock);
    sb_free(&a->out);
  }
  if (I->clocks) mem_free(al, I->clocks, sizeof(uint32_t) * clocks_size(I));
  mem_free(al, I->agents, sizeof(iagent) * (size_t)I->nagents);
  mem_free(al, I->scratch, sizeof(ival) * (size_t)I->scratch_n);
  for (int b = 0; I->blocks && b < I->nblocks; b++) {
    mem_free(al, I->blocks[b].smem, (size_t)I->ki->smem_bytes);
    mem_free(al, I->blocks[b].shadow, sizeof(ishadow) * (size_t)I->ki->smem_bytes);
    mem_free(al, I->blocks[b].bars, sizeof(ibar) * (size_t)(I->nbars + 1));
    size_t cells = (size_t)IR_TMEM_ROWS * (size_t)I->ki->tmem_cols;
    mem_free(al, I->blocks[b].tmem, 4 * cells);
    mem_free(al, I->blocks[b].tshadow, sizeof(itshadow) * cells);
  }
  mem_free(al, I->blocks, sizeof(iblock) * (size_t)I->nblocks);
  mem_free(al, I->map_of, sizeof(uint32_t) * k->vals.n);
  mem_free(al, I->bar_of, sizeof(int32_t) * k->vals.n);
  mem_free(al, I->maps, sizeof(xf_map) * I->nmaps);
  interp_async_clear(I);
  vec_free(al, &I->async);
}

/* The debug_print lines of the cluster: block by block, warpgroup by
** warpgroup, each in program order (deterministic, unlike the GPU's). */
static void flush_prints(interp *I) {
  bool any = false;
  for (int w = 0; I->agents && w < I->nagents; w++) {
    strbuf *sb = &I->agents[w].out;
    if (!sb->len) continue;
    fwrite(sb->s, 1, sb->len, stdout);
    sb->len = 0;
    any = true;
  }
  if (any) fflush(stdout);
}

/* Run one cluster of blocks (one block without clusters) to the end. */
static void run_cluster(interp *I) {
  charge(I, NULL, I->nblocks);
  interp_race_cluster(I);
  for (int b = 0; b < I->nblocks; b++)
    if (I->blocks[b].smem) {
      /* SMEM starts as garbage: NaN in every float type, and other garbage in each block (so that two
      ** blocks storing what they never wrote store different values, as on the GPU) */
      unsigned char *m = I->blocks[b].smem, mark = (unsigned char)((I->clusters_done * I->cblocks + b) % 255);
      memset(m, 0xff, (size_t)I->ki->smem_bytes);
      for (int64_t i = 0; i < I->ki->smem_bytes; i += 4) m[i] ^= mark;
      memset(I->blocks[b].shadow, 0, sizeof(ishadow) * (size_t)I->ki->smem_bytes);
    }
  interp_barriers_init(I);
  interp_tmem_init(I);
  for (int w = 0; w < I->nagents; w++) {
    iagent *a = &I->agents[w];
    a->pc = 0; a->done = false; a->stack.n = 0; a->group = 0; a->epoch = 0; a->tmem_ld_epoch = 0; a->tmem_st_epoch = 0;
    a->ld_clock.n = a->st_clock.n = 0;
    if (a->clock) memset(a->clock, 0, sizeof(uint32_t) * (size_t)I->nagents);
    memset(a->waits, 0, sizeof(int64_t) * (size_t)(I->nbars + 1));
  }
  for (;;) {
    bool progress = false, all_done = true;
    for (int w = 0; w < I->nagents; w++) {
      iagent *a = &I->agents[w];
      if (a->done) continue;
      progress |= run_agent(I, a);
      all_done &= a->done;
    }
    if (all_done) break;
    if (!progress) interp_deadlock(I);
  }
  interp_async_clear(I);
  flush_prints(I);
  I->clusters_done++;
}

mgpu_status interp_run(const ir_kernel *k, const kinfo *ki, const interp_arg *args, uint32_t nargs, int ndev, diag *d) {
  interp I;
  memset(&I, 0, sizeof I);
  I.k = k;
  I.ki = ki;
  I.d = d;
  I.np = k->params.n;
  I.ndev = ndev;
  I.work_limit = atomic_load(&work_limit);
  I.timeout_ms = timeout_ms;
  I.deadline_ms = time_ms() + (double)timeout_ms;
  jmp_buf *saved = d->jmp;
  d->jmp = &I.jmp;
  volatile mgpu_status st = MGPU_OK;   /* survives the longjmp */
  if (setjmp(I.jmp)) {
    st = d->status;
    goto done;
  }
  if (nargs != k->params.n) diag_throw(d, ERR_LAUNCH_ARG, "", k->name, "wrong number of arguments");
  if (ndev < 1 || ndev > 64) diag_throw(d, ERR_LAUNCH_ARG, "", k->name, "between 1 and 64 devices run a kernel together");
  size_t nparam = (size_t)ndev * (k->params.n ? k->params.n : 1);
  I.params = mem_calloc(k->alloc, sizeof(iparam) * nparam);
  if (!I.params) diag_throw(d, ERR_NOMEM, "");
  for (uint32_t q = 0; q < (uint32_t)ndev * k->params.n; q++) {
    uint32_t i = q % k->params.n;
    const ir_type *t = ir_vtype(k, k->params.v[i].value);
    iparam *p = &I.params[q];
    p->data = args[q].data;
    p->dtype = t->dtype;
    p->rank = t->rank;
    int64_t s = 1;
    for (int j = t->rank - 1; j >= 0; j--) { p->shape[j] = t->shape[j]; p->stride[j] = s; s *= t->shape[j]; }
  }
  alloc_blocks(&I);
  alloc_agents(&I);
  interp_race_init(&I);
  for (uint32_t i = 0; i < k->params.n; i++) {   /* scalar parameters */
    uint32_t v = k->params.v[i].value;
    if (k->params.v[i].role != MGPU_PARAM_SCALAR) continue;
    int dt = ir_vtype(k, v)->dtype;
    for (int w = 0; w < I.nagents; w++) {
      const uint64_t *bits = &args[I.agents[w].dev * k->params.n + i].scalar;
      ival *x = &I.agents[w].slots[v].data[0];
      if (dt_isfloat(dt)) x->f = dt_load(dt, bits);
      else x->i = dt_load_int(dt, bits);
    }
  }
  /* every point of the grid (any rank), in row-major order as the GPU starts them, but those a
     running cluster canceled (cluster launch control takes the next one to start) */
  I.nclusters = 1;
  for (int i = 0; i < k->opts.grid_rank; i++) I.nclusters *= (uint64_t)k->opts.grid[i];
  while (I.next_cluster < I.nclusters) {
    uint64_t lin = I.next_cluster++;
    for (int i = k->opts.grid_rank - 1; i >= 0; i--) { I.block[i] = (int64_t)(lin % (uint64_t)k->opts.grid[i]); lin /= (uint64_t)k->opts.grid[i]; }
    run_cluster(&I);
  }
done:
  flush_prints(&I);   /* what was printed before a fault helps explain it */
  interp_race_free(&I);
  free_all(&I);
  if (I.params) mem_free(k->alloc, I.params, sizeof(iparam) * (size_t)ndev * (k->params.n ? k->params.n : 1));
  d->jmp = saved;
  return st;
}
