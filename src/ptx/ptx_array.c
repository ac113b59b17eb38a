/*
** ptx_array.c -- array ops whose code depends on register layouts:
** reductions (in-thread, then butterfly shuffles across lanes, then SMEM
** across warps), broadcasts from reduced layouts (register moves only),
** iota, and the layout-preserving reshape and layout_cast.
**
** Under a tiled layout an element's logical coordinates split into a part
** that depends on the thread (warp and lane levels) and a constant part per
** register element (register and vector levels); see lay.h.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ptx.h"

void pe_fit(pe *e, uint32_t v, lay_fit *f) {
  const ir_type *t = ir_vtype(e->k, v);
  char why[200];
  if (!lay_fit_shape(&e->ki->lay[v], t->shape, t->rank, f, why, sizeof why)) pe_fail(e, why);
}

/* Walk the warp and lane parts: fn(level or -1, size, source register, shift). */
typedef void (*part_fn)(pe *e, const lay_fit *f, int lev, int64_t size, preg src, int shift, void *ud);
static void each_part(pe *e, const lay_fit *f, part_fn fn, void *ud) {
  const lay_layout *l = f->l;
  int first = f->nlev - l->nlev;
  const lay_part *lists[2] = { l->warp, l->lane };
  int np[2] = { l->nwarp, l->nlane }, total[2] = { 2, 5 };
  preg src[2] = { e->warp, e->lane32 };
  for (int k = 0; k < 2; k++) {
    int shift = total[k];
    for (int i = 0; i < np[k]; i++) {
      int lev = lists[k][i].lev >= 0 ? first + lists[k][i].lev : -1;
      int64_t size = lev >= 0 ? f->size[lev] : lists[k][i].rep;
      shift -= pe_log2(size);
      fn(e, f, lev, size, src[k], shift, ud);
    }
  }
}

static preg part_index(pe *e, preg src, int shift, int64_t size) {
  preg t = pe_reg(e, PR_R);
  pe_ins(e, "shr.u32", 3, R(t), R(src), I(shift));
  pe_ins(e, "and.b32", 3, R(t), R(t), I(size - 1));
  return t;
}

static void add_coord(pe *e, const lay_fit *f, int lev, int64_t size, preg src, int shift, void *ud) {
  preg *T = ud;
  if (lev < 0) return;   /* replicas do not move the coordinate */
  preg t = part_index(e, src, shift, size);
  int d = f->ldim[lev];
  if (f->stride[lev] != 1) pe_ins(e, "mul.lo.u32", 3, R(t), R(t), I(f->stride[lev]));
  if (T[d]) pe_ins(e, "add.u32", 3, R(T[d]), R(T[d]), R(t));
  else T[d] = t;
}

void pe_thread_coords(pe *e, const lay_fit *f, preg *T) {
  for (int d = 0; d < f->rank; d++) T[d] = 0;
  if (f->l->kind == LAY_TILED) each_part(e, f, add_coord, T);
}

void pe_const_coords(const lay_fit *f, int64_t r, int el, int64_t *C) { lay_index(f, 0, 0, r, el, C); }

static void owner_part(pe *e, const lay_fit *f, int lev, int64_t size, preg src, int shift, void *ud) {
  preg *p = ud;
  if (lev >= 0) return;
  preg t = part_index(e, src, shift, size), q = pe_reg(e, PR_P);
  pe_ins(e, "setp.eq.u32", 3, R(q), R(t), I(0));
  if (*p) pe_ins(e, "and.pred", 3, R(*p), R(*p), R(q));
  else *p = q;
}

preg pe_owner(pe *e, const lay_fit *f) {
  preg p = 0;
  if (f->l->kind == LAY_TILED) each_part(e, f, owner_part, &p);
  return p;
}

void pe_wg_barrier(pe *e) {
  if (e->single_warp) pe_fail(e, "this op needs a warpgroup barrier, which cannot run inside single_warp");
  if (e->k->opts.num_threads <= 1) { pe_ins(e, "bar.sync", 2, I(1), I(128)); return; }
  preg id = pe_reg(e, PR_R);
  pe_ins(e, "add.u32", 3, R(id), R(e->wg), I(1));
  pe_ins(e, "bar.sync", 2, R(id), I(128));
}

preg pe_wg_scratch(pe *e) {
  preg base = pe_reg(e, PR_R);
  pe_ins(e, "mad.lo.u32", 4, R(base), R(e->wg), I(e->ki->red_bytes), R(e->smem));
  if (e->ki->red_offset) pe_ins(e, "add.u32", 3, R(base), R(base), I(e->ki->red_offset));
  return base;
}

/* The register element of fit g whose constant coordinates are C (dims of
** g), or -1. */
static int64_t slot_of(const lay_fit *g, const int64_t *C) {
  for (int64_t r = 0; r < g->nregs; r++)
    for (int el = 0; el < g->vlen; el++) {
      int64_t D[LAY_MAXRANK];
      pe_const_coords(g, r, el, D);
      bool same = true;
      for (int d = 0; d < g->rank; d++) same &= D[d] == C[d];
      if (same) return r * g->vlen + el;
    }
  return -1;
}

/* -- Reductions --------------------------------------------------------------------- */

static void identity(pe *e, int code, int dt, preg d) {
  char opc[32];
  if (dt_isfloat(dt)) {
    double v = code == IR_add ? 0 : code == IR_max ? -INFINITY : INFINITY;
    if (dt == MGPU_F64) pe_ins(e, "mov.f64", 2, R(d), F64(v));
    else pe_ins(e, "mov.f32", 2, R(d), F32(v));
    return;
  }
  bool sg = dt_issigned(dt), wide = pe_cls(dt) == PR_RD;
  int bits = dt_table[dt].bits;
  int64_t v = 0;
  if (code == IR_max) v = sg ? -(INT64_C(1) << (bits - 1)) : 0;
  if (code == IR_min) v = sg ? (bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1) : (bits == 64 ? -1 : (INT64_C(1) << bits) - 1);
  snprintf(opc, sizeof opc, "mov.%s", wide ? "b64" : "b32");
  pe_ins(e, opc, 2, R(d), I(v));
}

/* t = value of x in the lane whose index differs in `mask` */
static void shuffle(pe *e, int dt, preg t, preg x, int mask) {
  if (pe_cls(dt) == PR_RD || pe_cls(dt) == PR_FD) {
    preg lo = pe_reg(e, PR_R), hi = pe_reg(e, PR_R), lo2 = pe_reg(e, PR_R), hi2 = pe_reg(e, PR_R);
    pe_ins(e, "mov.b64", 2, RV((preg[]){ lo, hi }, 2), R(x));
    pe_ins(e, "shfl.sync.bfly.b32", 5, R(lo2), R(lo), I(mask), I(31), I(-1));
    pe_ins(e, "shfl.sync.bfly.b32", 5, R(hi2), R(hi), I(mask), I(31), I(-1));
    pe_ins(e, "mov.b64", 2, R(t), RV((preg[]){ lo2, hi2 }, 2));
    return;
  }
  pe_ins(e, "shfl.sync.bfly.b32", 5, R(t), R(x), I(mask), I(31), I(-1));
}

typedef struct bits { int lane_bits[5], nlane, warp_bits[2], nwarp; const bool *reduced; } bits;

static void collect_bits(pe *e, const lay_fit *f, int lev, int64_t size, preg src, int shift, void *ud) {
  bits *b = ud;
  if (lev < 0 || !b->reduced[f->ldim[lev]]) return;
  for (int i = 0; i < pe_log2(size); i++) {
    if (src == e->warp) b->warp_bits[b->nwarp++] = shift + i;
    else b->lane_bits[b->nlane++] = shift + i;
  }
}

void ptx_reduce(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  uint32_t src = ir_opds(k, op)[0];
  const ir_type *st = ir_vtype(k, src), *rt = ir_vtype(k, op->res);
  int dt = st->dtype, acc_dt = (dt == MGPU_F16 || dt == MGPU_BF16) ? MGPU_F32 : dt;
  int code = op->code == IR_reduce_sum ? IR_add : op->code == IR_reduce_max ? IR_max : IR_min;
  lay_fit f, g;
  pe_fit(e, src, &f);
  bool scalar = rt->kind != MGPU_VALUE_ARRAY;
  if (!scalar) pe_fit(e, op->res, &g);
  int64_t nslots = scalar ? 1 : g.nregs * g.vlen;
  bool reduced[LAY_MAXRANK] = { false };
  for (uint32_t a = 0; a < op->niat; a++) reduced[ir_ints(k, op)[a]] = true;
  preg acc = pe_regs(e, pe_cls(acc_dt), (uint32_t)nslots);
  bool *init = mem_calloc(k->alloc, (size_t)nslots);
  if (!init) diag_throw(e->d, ERR_NOMEM, "");
  bool strided = f.l->kind == LAY_STRIDED;
  int64_t numel = ir_numel(st);
  preg x0 = pe_vreg(e, src), lanev = 0;
  if (strided && f.nregs * 128 * f.vlen > numel) {
    lanev = pe_reg(e, PR_R);
    pe_ins(e, "mul.lo.u32", 3, R(lanev), R(e->lane), I(f.vlen));
  }
  /* 1. inside the thread */
  for (int64_t r = 0; r < f.nregs; r++)
    for (int el = 0; el < f.vlen; el++) {
      int64_t slot = 0;
      if (!scalar) {
        int64_t C[LAY_MAXRANK], K[LAY_MAXRANK];
        pe_const_coords(&f, r, el, C);
        int kd = 0;
        for (int d = 0; d < f.rank; d++) if (!reduced[d]) K[kd++] = C[d];
        slot = slot_of(&g, K);
        if (slot < 0) pe_fail(e, "internal: reduction result layout does not match its operand");
      }
      preg x = x0 + (uint32_t)(r * f.vlen + el);
      if (acc_dt != dt) {
        preg t = pe_reg(e, PR_F);
        pe_ins(e, dt == MGPU_BF16 ? "cvt.f32.bf16" : "cvt.f32.f16", 2, R(t), R(x));
        x = t;
      }
      if (lanev && (r + 1) * 128 * f.vlen > numel) {   /* padding of a strided array */
        preg p = pe_reg(e, PR_P), id = pe_reg(e, pe_cls(acc_dt)), y = pe_reg(e, pe_cls(acc_dt)), fi = pe_reg(e, PR_R);
        static const char *const sel[PR__COUNT] = { NULL, "selp.b16", "selp.b32", "selp.f32", "selp.b64", "selp.f64" };
        pe_ins(e, "add.u32", 3, R(fi), R(lanev), I(r * 128 * f.vlen + el));
        pe_ins(e, "setp.lt.u32", 3, R(p), R(fi), I(numel));
        identity(e, code, acc_dt, id);
        pe_ins(e, sel[pe_cls(acc_dt)], 4, R(y), R(x), R(id), R(p));
        x = y;
      }
      preg a = acc + (uint32_t)slot;
      if (!init[slot]) { ptx_move(e, acc_dt, a, x, 1, false); init[slot] = true; }
      else ptx_binop(e, code, acc_dt, a, a, x);
    }
  for (int64_t s = 0; s < nslots; s++) if (!init[s]) identity(e, code, acc_dt, acc + (uint32_t)s);
  mem_free(k->alloc, init, (size_t)nslots);
  /* 2. across lanes, 3. across warps */
  bits b = { { 0 }, 0, { 0 }, 0, reduced };
  if (strided) { b.nlane = 5; b.nwarp = 2; for (int i = 0; i < 5; i++) b.lane_bits[i] = i; b.warp_bits[0] = 0; b.warp_bits[1] = 1; }
  else each_part(e, &f, collect_bits, &b);
  for (int i = 0; i < b.nlane; i++)
    for (int64_t s = 0; s < nslots; s++) {
      preg t = pe_reg(e, pe_cls(acc_dt));
      shuffle(e, acc_dt, t, acc + (uint32_t)s, 1 << b.lane_bits[i]);
      ptx_binop(e, code, acc_dt, acc + (uint32_t)s, acc + (uint32_t)s, t);
    }
  if (b.nwarp) {
    int ab = dt_bytes(acc_dt);
    const char *ty = ab == 8 ? "b64" : "b32";
    char sto[32], ldo[32];
    snprintf(sto, sizeof sto, "st.shared.%s", ty);
    snprintf(ldo, sizeof ldo, "ld.shared.%s", ty);
    preg base = pe_wg_scratch(e), mine = pe_reg(e, PR_R);
    pe_ins(e, "mad.lo.u32", 4, R(mine), R(e->lane), I(nslots * ab), R(base));
    pe_wg_barrier(e);
    for (int64_t s = 0; s < nslots; s++) pe_ins(e, sto, 2, ADDR(mine, s * ab), R(acc + (uint32_t)s));
    pe_wg_barrier(e);
    int wmask = 0;
    for (int i = 0; i < b.nwarp; i++) wmask |= 1 << b.warp_bits[i];
    preg keep = pe_reg(e, PR_R);
    pe_ins(e, "and.b32", 3, R(keep), R(e->warp), I(3 & ~wmask));
    bool first = true;
    for (int w = 0; w < 4; w++) {
      if (w & ~wmask) continue;   /* every combination of the reduced warp bits, in order */
      preg other = pe_reg(e, PR_R), addr = pe_reg(e, PR_R);
      pe_ins(e, "or.b32", 3, R(other), R(keep), I(w));
      pe_ins(e, "mad.lo.u32", 4, R(other), R(other), I(32), R(e->lane32));
      pe_ins(e, "mad.lo.u32", 4, R(addr), R(other), I(nslots * ab), R(base));
      for (int64_t s = 0; s < nslots; s++) {
        preg t = pe_reg(e, pe_cls(acc_dt));
        pe_ins(e, ldo, 2, R(t), ADDR(addr, s * ab));
        if (first) ptx_move(e, acc_dt, acc + (uint32_t)s, t, 1, false);
        else ptx_binop(e, code, acc_dt, acc + (uint32_t)s, acc + (uint32_t)s, t);
      }
      first = false;
    }
  }
  /* 4. into the result dtype */
  preg d = pe_vreg(e, op->res);
  for (int64_t s = 0; s < nslots; s++) {
    if (acc_dt == dt) ptx_move(e, dt, d + (uint32_t)s, acc + (uint32_t)s, 1, false);
    else pe_ins(e, dt == MGPU_BF16 ? "cvt.rn.bf16.f32" : "cvt.rn.f16.f32", 2, R(d + (uint32_t)s), R(acc + (uint32_t)s));
  }
}

/* -- Broadcasts, iota, same-register ops ---------------------------------------------- */

void ptx_bcastdim(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  uint32_t src = ir_opds(k, op)[0];
  const ir_type *st = ir_vtype(k, src);
  const ir_type *rt = ir_vtype(k, op->res);
  int dt = rt->dtype;
  preg d = pe_vreg(e, op->res), s = pe_vreg(e, src);
  if (st->kind == MGPU_VALUE_SCALAR) { ptx_move(e, dt, d, s, pe_nregs(e, op->res), true); return; }
  const int64_t *dims = ir_ints(k, op) + 1 + rt->rank;
  lay_fit fr, fo;
  pe_fit(e, op->res, &fr);
  pe_fit(e, src, &fo);
  for (int64_t r = 0; r < fr.nregs; r++)
    for (int el = 0; el < fr.vlen; el++) {
      int64_t C[LAY_MAXRANK], Co[LAY_MAXRANK];
      pe_const_coords(&fr, r, el, C);
      for (int i = 0; i < st->rank; i++) Co[i] = C[dims[i]];
      int64_t slot = slot_of(&fo, Co);
      if (slot < 0) pe_fail(e, "internal: broadcast operand layout does not match the result");
      ptx_move(e, dt, d + (uint32_t)(r * fr.vlen + el), s + (uint32_t)slot, 1, false);
    }
}

void ptx_iota(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  const ir_type *rt = ir_vtype(k, op->res);
  int dim = (int)ir_ints(k, op)[1], dt = rt->dtype;
  lay_fit f;
  pe_fit(e, op->res, &f);
  preg d = pe_vreg(e, op->res);
  preg T[LAY_MAXRANK];
  preg lanev = 0;
  pe_thread_coords(e, &f, T);
  int64_t inner = 1;
  for (int i = dim + 1; i < rt->rank; i++) inner *= rt->shape[i];
  if (f.l->kind == LAY_STRIDED) {
    lanev = pe_reg(e, PR_R);
    pe_ins(e, "mul.lo.u32", 3, R(lanev), R(e->lane), I(f.vlen));
  }
  for (int64_t r = 0; r < f.nregs; r++)
    for (int el = 0; el < f.vlen; el++) {
      preg c = pe_reg(e, PR_R);
      if (f.l->kind == LAY_STRIDED) {   /* (flat / inner) % size */
        pe_ins(e, "add.u32", 3, R(c), R(lanev), I(r * 128 * f.vlen + el));
        if (inner > 1) pe_divrem(e, c, inner, &c, NULL);
        if (dim > 0) pe_divrem(e, c, rt->shape[dim], NULL, &c);
      } else {
        int64_t C[LAY_MAXRANK];
        pe_const_coords(&f, r, el, C);
        if (T[dim]) pe_ins(e, "add.u32", 3, R(c), R(T[dim]), I(C[dim]));
        else pe_ins(e, "mov.u32", 2, R(c), I(C[dim]));
      }
      preg out = d + (uint32_t)(r * f.vlen + el);
      char opc[40];
      if (dt_isfloat(dt)) {
        if (dt == MGPU_F32 || dt == MGPU_F64) {
          snprintf(opc, sizeof opc, "cvt.rn.%s.u32", dt_table[dt].ptx);
          pe_ins(e, opc, 2, R(out), R(c));
        } else {
          preg t = pe_reg(e, PR_F);
          pe_ins(e, "cvt.rn.f32.u32", 2, R(t), R(c));
          pe_ins(e, dt == MGPU_BF16 ? "cvt.rn.bf16.f32" : "cvt.rn.f16.f32", 2, R(out), R(t));
        }
      } else if (pe_cls(dt) == PR_RD) {
        pe_ins(e, "cvt.u64.u32", 2, R(out), R(c));
      } else {
        pe_ins(e, "mov.b32", 2, R(out), R(c));
      }
    }
}

void ptx_same_regs(pe *e, const ir_op *op) {
  uint32_t src = ir_opds(e->k, op)[0];
  ptx_move(e, ir_vtype(e->k, src)->dtype, pe_vreg(e, op->res), pe_vreg(e, src), pe_nregs(e, op->res), false);
}
