/*
** pass_smem.c -- the SMEM and TMEM plans of a kernel, checked against the
** device's limits before any PTX exists.  SMEM: every allocation on a
** 1024-byte boundary.  The cross-warp reduction scratch comes first (one
** slice per warpgroup), then the allocations: a stack, each smem_alloc
** living until the region that holds it ends (scratch_shapes: the whole
** kernel; run_scoped: its scope), so disjoint scopes share bytes.  mbarriers
** (8 bytes each) follow, allocated for the whole kernel, then the word
** tcgen05.alloc writes the TMEM address into.  TMEM (pass_tmem): the same
** stack of tmem_alloc results in 32-bit columns, each on a 32-column
** boundary; the kernel allocates the peak (a power of two, 32 to 512
** columns) once at entry.
*/
#include <stdio.h>
#include <string.h>

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

/* The stack of live allocations while walking the kernel. */
typedef struct plan {
  const ir_kernel *k;
  int code;                      /* the allocating op: smem_alloc or tmem_alloc */
  int64_t align;                 /* every allocation starts at a multiple of it */
  int64_t *off;                  /* per value: where its allocation starts */
  int64_t base;                  /* first unit after the reduction scratch (SMEM) */
  int64_t sp, peak;
  uint32_t live[256];            /* alloc ops on the stack */
  int nlive;
  uint32_t at_peak[256];         /* the stack when the peak was reached */
  int npeak;
  bool too_many;
} plan;

/* SMEM bytes, or TMEM columns, of an allocation. */
static int64_t alloc_size(const ir_kernel *k, const ir_op *op) {
  const ir_type *t = ir_vtype(k, op->res);
  if (op->code == IR_tmem_alloc) return ir_tmem_cols(t->dtype, t->shape[1]);
  return ir_numel(t) * dt_bytes(t->dtype);
}

/* Allocate the region [i, end): allocations live until the region ends. */
static void walk(plan *p, uint32_t i, uint32_t end) {
  const ir_kernel *k = p->k;
  int64_t sp0 = p->sp;
  int n0 = p->nlive;
  while (i < end) {
    const ir_op *op = &k->ops.v[i];
    if (op->code == p->code) {
      int64_t off = (p->sp + p->align - 1) / p->align * p->align;
      p->off[op->res] = p->base + off;
      p->sp = off + alloc_size(k, op);
      if (p->nlive < (int)(sizeof p->live / sizeof p->live[0])) p->live[p->nlive++] = i;
      else p->too_many = true;
      if (p->sp > p->peak) {
        p->peak = p->sp;
        p->npeak = p->nlive;
        memcpy(p->at_peak, p->live, sizeof(uint32_t) * (size_t)p->nlive);
      }
    }
    if (op->code == IR_reshape_ref && p->code == IR_smem_alloc) p->off[op->res] = p->off[ir_ref_alloc(k, op->res)];
    if (ir_optab[op->code].flags & IRF_R) {
      walk(p, i + 1, i + 1 + op->body[0]);
      if (op->body[1]) walk(p, i + 1 + op->body[0], i + 1 + op->body[0] + op->body[1]);
    }
    i += ir_extent(k, i);
  }
  p->sp = sp0;
  p->nlive = n0;
}

mgpu_status pass_smem(const ir_kernel *k, kinfo *ki, int64_t limit, diag *d) {
  int64_t red = 0;
  int32_t red_op = -1;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    int64_t need;
    if (op->code == IR_atomic) need = 8;   /* the old value, handed from the leader to its warpgroup */
    else if (ir_optab[op->code].cls == IRC_REDUCE) need = red_scratch(k, ki, op);
    else continue;
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
  plan p;
  memset(&p, 0, sizeof p);
  p.k = k;
  p.code = IR_smem_alloc;
  p.align = SMEM_ALIGN;
  p.off = ki->smem_off;
  p.base = red ? ((red * wgs + SMEM_ALIGN - 1) / SMEM_ALIGN) * SMEM_ALIGN : 0;
  walk(&p, 0, k->ops.n);
  /* mbarriers after the data: 8 bytes each, for the whole kernel */
  int64_t total = p.base + (p.peak + 7) / 8 * 8;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    if (op->code != IR_barrier_alloc) continue;
    ki->smem_off[op->res] = total;
    total += 8 * ir_ints(k, op)[0];
  }
  if (ki->tmem_cols) { ki->tmem_slot = total; total += 8; }
  total = (total + SMEM_ALIGN - 1) / SMEM_ALIGN * SMEM_ALIGN;
  ki->smem_bytes = total;
  if (total <= limit) return MGPU_OK;
  strbuf sb;
  sb_init(&sb, k->alloc);
  sb_printf(&sb, "kernel '%s' needs %lld bytes of SMEM but a block may have %lld; live at the peak:",
            k->name, (long long)total, (long long)limit);
  if (red)
    sb_printf(&sb, "\n  reduction scratch (%lld warpgroup(s) x %lld bytes, for %s): %lld bytes", (long long)wgs,
              (long long)red, red_op >= 0 ? ir_loc(k, &k->ops.v[red_op]) : "?", (long long)p.base);
  for (int j = 0; j < p.npeak; j++) {
    const ir_op *op = &k->ops.v[p.at_peak[j]];
    char ty[96];
    ir_type shown = *ir_vtype(k, op->res);
    shown.kind = MGPU_VALUE_ARRAY;
    int64_t size = alloc_size(k, op), padded = (size + SMEM_ALIGN - 1) / SMEM_ALIGN * SMEM_ALIGN;
    sb_printf(&sb, "\n  %s: SMEM %s: %lld bytes", ir_loc(k, op), ir_type_str(&shown, ty, sizeof ty), (long long)size);
    if (padded != size) sb_printf(&sb, " (%lld with 1024-byte alignment)", (long long)padded);
  }
  if (p.too_many) sb_puts(&sb, "\n  (and more)");
  size_t len;
  char *msg = sb_take(&sb, &len);
  /* reported at the allocation that went over */
  const char *loc = p.npeak ? ir_loc(k, &k->ops.v[p.at_peak[p.npeak - 1]]) : red_op >= 0 ? ir_loc(k, &k->ops.v[red_op]) : "";
  mgpu_status s = diag_set(d, ERR_VERIFY, loc, msg ? msg : "SMEM over the limit");
  if (msg) mem_free(k->alloc, msg, len + 1);
  else sb_free(&sb);
  return s;
}

/* -- TMEM ------------------------------------------------------------------------------------- */

#define TMEM_ALIGN 32   /* columns: tcgen05.alloc's granularity */

mgpu_status pass_tmem(const ir_kernel *k, kinfo *ki, diag *d) {
  plan p;
  memset(&p, 0, sizeof p);
  p.k = k;
  p.code = IR_tmem_alloc;
  p.align = TMEM_ALIGN;
  p.off = ki->tmem_off;
  walk(&p, 0, k->ops.n);
  ki->tmem_cols = 0;
  ki->cta_group = 0;
  for (uint32_t i = 0; i < k->ops.n; i++)
    if (k->ops.v[i].code == IR_tmem_alloc) ki->cta_group = ir_ints(k, &k->ops.v[i])[3] ? 2 : 1;
  if (!p.peak) return MGPU_OK;
  if (p.peak <= IR_TMEM_COLS) {
    int32_t cols = TMEM_ALIGN;
    while (cols < p.peak) cols *= 2;
    ki->tmem_cols = cols;
    return MGPU_OK;
  }
  strbuf sb;
  sb_init(&sb, k->alloc);
  sb_printf(&sb, "kernel '%s' needs %lld columns of TMEM but a block has %d; live at the peak (each on a %d-column boundary):",
            k->name, (long long)p.peak, IR_TMEM_COLS, TMEM_ALIGN);
  for (int j = 0; j < p.npeak; j++) {
    const ir_op *op = &k->ops.v[p.at_peak[j]];
    char ty[96];
    ir_type shown = *ir_vtype(k, op->res);
    shown.kind = MGPU_VALUE_ARRAY;
    sb_printf(&sb, "\n  %s: TMEM %s: %lld columns", ir_loc(k, op), ir_type_str(&shown, ty, sizeof ty), (long long)alloc_size(k, op));
  }
  if (p.too_many) sb_puts(&sb, "\n  (and more)");
  size_t len;
  char *msg = sb_take(&sb, &len);
  mgpu_status s = diag_set(d, ERR_VERIFY, p.npeak ? ir_loc(k, &k->ops.v[p.at_peak[p.npeak - 1]]) : "", msg ? msg : "TMEM over the limit");
  if (msg) mem_free(k->alloc, msg, len + 1);
  else sb_free(&sb);
  return s;
}
