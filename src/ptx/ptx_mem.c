/*
** ptx_mem.c -- GMEM refs, views, loads and stores.
**
** A ref is lowered to its offset along every dimension of its parameter
** (static part plus an s64 register for the dynamic part).  A load or store
** moves each thread's register vectors in chunks that are contiguous in
** memory, as wide as contiguity and proven alignment allow (up to 16
** bytes).  Views may extend past their parameter: elements outside it read
** as zero and are not written.  When that can happen the op tests once,
** uniformly, whether the whole view is inside; if not it takes a slow path
** that checks every element.
*/
#include <stdio.h>
#include <string.h>

#include "ptx.h"

/* What a load/store needs to know about its ref, computed once per op. */
typedef struct access {
  const ir_type *t;              /* view type */
  const pref *r;
  int dtype, bytes;
  int64_t N[IR_MAXRANK];         /* parameter shape */
  int64_t S[IR_MAXRANK];         /* parameter strides (elements) */
  int prank;
  int64_t numel;
  int64_t run;                   /* trailing elements contiguous in memory */
  int64_t chunk;                 /* register-vector elements that stay contiguous */
  int width;                     /* elements per memory instruction */
  int vec;                       /* register vector length (1 for scalars) */
  int64_t nvec;                  /* vectors per thread */
  bool tiled;                    /* the value has a tiled layout (f) */
  lay_fit f;
  bool oob[IR_MAXRANK];          /* parameter dims the view may leave */
  bool maybe_oob;                /* any of them */
  bool static_oob;               /* the view certainly leaves its parameter */
  preg base;                     /* u64: parameter address + view offset */
} access;

preg pe_ref_base(pe *e, const pref *r) { return r->base ? r->base : e->param_addr[r->root]; }

void ptx_param_ref(pe *e, uint32_t v, uint32_t param) {
  pref *r = &e->refs[v];
  const ir_type *t = ir_vtype(e->k, v);
  memset(r, 0, sizeof *r);
  r->root = param;
  r->space = MGPU_SPACE_GMEM;
  r->rank = t->rank;
  for (int i = 0; i < t->rank; i++) r->dim[i] = (int8_t)i;
}

void ptx_view(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  const uint32_t *o = ir_opds(k, op);
  const pref *src = &e->refs[o[0]];
  pref *dst = &e->refs[op->res];
  const int64_t *at = ir_ints(k, op);
  uint32_t nidx = op->niat / 3, dyn = 1;
  *dst = *src;
  dst->rank = 0;
  for (uint32_t i = 0; i < src->rank; i++) {
    int d = src->dim[i];
    if (i >= nidx) { dst->dim[dst->rank++] = (int8_t)d; continue; }
    int64_t kind = at[3 * i], start = at[3 * i + 1];
    if (kind != IR_IDX_ALL) {
      if (start == IR_DYNAMIC) {
        uint32_t sv = o[dyn++];
        int sdt = ir_vtype(k, sv)->dtype;
        preg s64 = pe_reg(e, PR_RD);
        if (pe_cls(sdt) == PR_RD) pe_ins(e, "mov.b64", 2, R(s64), R(pe_vreg(e, sv)));
        else pe_ins(e, dt_issigned(sdt) ? "cvt.s64.s32" : "cvt.u64.u32", 2, R(s64), R(pe_vreg(e, sv)));
        int64_t dv = e->ki->div[sv];
        if (dst->doff[d]) {
          pe_ins(e, "add.s64", 3, R(s64), R(s64), R(dst->doff[d]));
          dst->ddiv[d] = pass_gcd(dst->ddiv[d], dv);
        } else {
          dst->ddiv[d] = dv;
        }
        dst->doff[d] = s64;
      } else {
        dst->soff[d] += start;
      }
    }
    if (kind != IR_IDX_INT) dst->dim[dst->rank++] = (int8_t)d;
  }
}

/* -- Planning ------------------------------------------------------------------------ */

static int64_t gcd(int64_t a, int64_t b) { return pass_gcd(a, b); }

static void plan(pe *e, uint32_t refv, uint32_t valv, access *a) {
  const ir_kernel *k = e->k;
  memset(a, 0, sizeof *a);
  a->r = &e->refs[refv];
  a->t = ir_vtype(k, refv);
  a->dtype = a->t->dtype;
  a->bytes = dt_bytes(a->dtype);
  const ir_type *pt = ir_vtype(k, k->params.v[a->r->root].value);
  a->prank = pt->rank;
  int64_t s = 1;
  for (int d = pt->rank - 1; d >= 0; d--) { a->N[d] = pt->shape[d]; a->S[d] = s; s *= pt->shape[d]; }
  a->numel = ir_numel(a->t);
  if (a->numel >= (INT64_C(1) << 31)) pe_fail(e, "a single load or store may move at most 2^31 elements");
  const ir_type *vt = ir_vtype(k, valv);
  a->vec = 1;
  if (vt->kind == MGPU_VALUE_ARRAY) {
    pe_fit(e, valv, &a->f);
    a->tiled = a->f.l->kind == LAY_TILED;
    a->vec = a->f.vlen;
  }
  a->nvec = (a->numel + 128 * a->vec - 1) / (128 * a->vec);

  /* contiguous trailing run */
  int r = a->t->rank;
  a->run = 1;
  if (r > 0 && a->S[a->r->dim[r - 1]] == 1) {
    a->run = a->t->shape[r - 1];
    for (int i = r - 2; i >= 0 && a->S[a->r->dim[i]] == a->run; i--) a->run *= a->t->shape[i];
  }
  a->chunk = vt->kind == MGPU_VALUE_ARRAY ? gcd(a->vec, a->run) : 1;
  if (a->tiled) {
    int vl = a->f.vlev;
    bool contiguous = vl >= 0 && a->f.stride[vl] == 1 && a->S[a->r->dim[a->f.ldim[vl]]] == 1;
    a->chunk = contiguous ? a->vec : 1;
  }

  /* alignment of every chunk start, in elements */
  int64_t al = a->bytes <= 16 ? 16 / a->bytes : 1;   /* parameters are 16-byte aligned */
  al = gcd(al, a->chunk);
  for (int d = 0; d < a->prank; d++) {
    al = gcd(al, a->r->soff[d] * a->S[d]);
    if (a->r->doff[d]) al = gcd(al, a->r->ddiv[d] * a->S[d]);
  }
  if (a->tiled) {   /* thread and register coordinate steps, times memory strides */
    for (int i = 0; i < a->f.nlev; i++)
      if (a->f.lev[i].role != LR_VEC) al = gcd(al, a->f.stride[i] * a->S[a->r->dim[a->f.ldim[i]]]);
  } else {
    for (int i = 0; i < r; i++) {   /* dims outside the run step by their stride */
      int64_t inner = 1;
      for (int j = i + 1; j < r; j++) inner *= a->t->shape[j];
      if (inner >= a->run) al = gcd(al, a->S[a->r->dim[i]]);
    }
  }
  int w = 1;
  while ((al % (2 * w)) == 0 && 2 * w * a->bytes <= 16) w *= 2;
  /* 8- and 16-bit integers live one per b32 register: move them singly */
  if (a->bytes == 1 || (a->bytes == 2 && pe_cls(a->dtype) == PR_R)) w = 1;
  if (e->mm) w = 1;   /* multimem ops move one element at a time */
  a->width = w;

  /* can the view leave its parameter? */
  for (int d = 0; d < a->prank; d++) {
    int64_t ext = 1;
    for (int i = 0; i < r; i++) if (a->r->dim[i] == d) ext = a->t->shape[i];
    bool past = a->r->soff[d] + ext > a->N[d];
    a->oob[d] = a->r->doff[d] || past;
    if (past && (!a->r->doff[d] || ext > a->N[d])) a->static_oob = true;   /* (no offset fits a view wider than the dim) */
    a->maybe_oob |= a->oob[d];
  }

  /* base address: parameter + static and dynamic offsets */
  int64_t soff = 0;
  for (int d = 0; d < a->prank; d++) soff += a->r->soff[d] * a->S[d];
  a->base = pe_reg(e, PR_RD);
  pe_ins(e, "add.s64", 3, R(a->base), R(pe_ref_base(e, a->r)), I(soff * a->bytes));
  for (int d = 0; d < a->prank; d++)
    if (a->r->doff[d]) pe_ins(e, "mad.lo.s64", 4, R(a->base), R(a->r->doff[d]), I(a->S[d] * a->bytes), R(a->base));
}

/* Uniform predicate: the whole view lies inside its parameter (only for
** views that are not statically partly outside). */
static preg inside(pe *e, const access *a) {
  preg all = 0;
  for (int d = 0; d < a->prank; d++) {
    if (!a->r->doff[d]) continue;
    int64_t ext = 1;
    for (int i = 0; i < a->t->rank; i++) if (a->r->dim[i] == d) ext = a->t->shape[i];
    preg lo = pe_reg(e, PR_RD), p = pe_reg(e, PR_P);
    pe_ins(e, "add.s64", 3, R(lo), R(a->r->doff[d]), I(a->r->soff[d]));
    pe_ins(e, "setp.le.u64", 3, R(p), R(lo), I(a->N[d] - ext));
    if (all) pe_ins(e, "and.pred", 3, R(all), R(all), R(p));
    else all = p;
  }
  return all;
}

/* Whether the view is inside its parameter or wholly outside: every dim
** it may leave is one it takes a single index of, so one index out of range
** puts every element out (a view of refs indexed by traced integers). */
static bool whole_or_none(const access *a) {
  for (int d = 0; d < a->prank; d++) {
    if (!a->oob[d]) continue;
    for (int i = 0; i < a->t->rank; i++) if (a->r->dim[i] == d && a->t->shape[i] > 1) return false;
  }
  return true;
}

/* -- Memory instructions ------------------------------------------------------------------ */

/* Move w consecutive elements between [addr+imm] in `space` ("global",
** "shared") and registers reg.. (or reg repeated when splat), under an
** optional predicate. */
void pe_mem(pe *e, const char *space, int dtype, bool store, preg reg, bool splat, int w, preg addr, int64_t imm,
            preg pred, bool neg) {
  char opc[96];
  const char *vs = w == 1 ? "" : w == 2 ? ".v2" : ".v4";
  const char *dir = store ? "st" : "ld";
  int bytes = dt_bytes(dtype);
  if (e->mm) {   /* one element (plan() keeps w at 1) */
    const char *ty = dtype == MGPU_F32 ? "f32" : dtype == MGPU_I32 ? "s32" : "u32";
    if (store) snprintf(opc, sizeof opc, "multimem.st.relaxed.sys.global.%s", ty);
    else snprintf(opc, sizeof opc, "multimem.ld_reduce.relaxed.sys.global.%s.%s", e->mm, ty);
    po m = ADDR(addr, imm);
    if (pred) pe_pins(e, pred, neg, opc, 2, store ? m : R(reg), store ? R(reg) : m);
    else pe_ins(e, opc, 2, store ? m : R(reg), store ? R(reg) : m);
    return;
  }
  preg regs[8];
  for (int i = 0; i < w; i++) regs[i] = splat ? reg : reg + (uint32_t)i;
  int cls = pe_cls(dtype);
  po data;
  if (cls == PR_H && w > 1) {       /* f16/bf16 pairs travel as b32 */
    int nw = w / 2;
    preg packed[4];
    for (int i = 0; i < nw; i++) packed[i] = pe_reg(e, PR_R);
    if (store)
      for (int i = 0; i < nw; i++) pe_ins(e, "mov.b32", 2, R(packed[i]), RV(regs + 2 * i, 2));
    vs = nw == 1 ? "" : nw == 2 ? ".v2" : ".v4";
    snprintf(opc, sizeof opc, "%s.%s%s.b32", dir, space, vs);
    data = nw == 1 ? R(packed[0]) : RV(packed, nw);
    po m = ADDR(addr, imm);
    if (pred) pe_pins(e, pred, neg, opc, 2, store ? m : data, store ? data : m);
    else pe_ins(e, opc, 2, store ? m : data, store ? data : m);
    if (!store)
      for (int i = 0; i < nw; i++) pe_ins(e, "mov.b32", 2, RV(regs + 2 * i, 2), R(packed[i]));
    return;
  }
  const char *ty;
  switch (cls) {
  case PR_H: ty = "b16"; break;
  case PR_F: ty = "f32"; break;
  case PR_FD: ty = "f64"; break;
  case PR_RD: ty = "b64"; break;
  default:
    if (bytes == 4) ty = "b32";
    else if (bytes == 2) ty = store ? "b16" : (dt_issigned(dtype) ? "s16" : "u16");
    else ty = store ? "b8" : (dt_issigned(dtype) ? "s8" : "u8");
    break;
  }
  snprintf(opc, sizeof opc, "%s.%s%s.%s", dir, space, vs, ty);
  data = w == 1 ? R(regs[0]) : RV(regs, w);
  po m = ADDR(addr, imm);
  if (pred) pe_pins(e, pred, neg, opc, 2, store ? m : data, store ? data : m);
  else pe_ins(e, opc, 2, store ? m : data, store ? data : m);
}

static void mem_ins(pe *e, const access *a, bool store, preg reg, bool splat, int w, preg addr, int64_t imm,
                    preg pred, bool neg) {
  pe_mem(e, "global", a->dtype, store, reg, splat, w, addr, imm, pred, neg);
}

void pe_zero(pe *e, int dtype, preg r, int n) {
  static const char *const z[PR__COUNT] = { NULL, "mov.b16", "mov.b32", "mov.f32", "mov.b64", "mov.f64" };
  int cls = pe_cls(dtype);
  for (int i = 0; i < n; i++) pe_ins(e, z[cls], 2, R(r + (uint32_t)i), cls == PR_F ? F32(0) : cls == PR_FD ? F64(0) : I(0));
}

/* u32 register holding lane * vec + c. */
static preg flat_index(pe *e, preg lanev, int64_t c) {
  preg f = pe_reg(e, PR_R);
  pe_ins(e, "add.u32", 3, R(f), R(lanev), I(c));
  return f;
}

/* Byte address of the element at flat index f (u32 register) of the view. */
static preg elem_addr(pe *e, const access *a, preg f) {
  preg off = pe_reg(e, PR_RD), addr = pe_reg(e, PR_RD);
  int r = a->t->rank;
  if (a->run >= a->numel) {
    pe_ins(e, "mul.wide.u32", 3, R(off), R(f), I(a->bytes));
  } else {
    preg rest, idx;
    pe_divrem(e, f, a->run, &rest, &idx);
    pe_ins(e, "mul.wide.u32", 3, R(off), R(idx), I(a->bytes));
    int64_t inner = 1;
    for (int i = r - 1; i >= 0; i--) {
      inner *= a->t->shape[i];
      if (inner <= a->run) continue;     /* inside the contiguous run */
      preg q;
      pe_divrem(e, rest, a->t->shape[i], &q, &idx);
      pe_ins(e, "mad.wide.u32", 4, R(off), R(idx), I(a->S[a->r->dim[i]] * a->bytes), R(off));
      rest = q;
    }
  }
  pe_ins(e, "add.s64", 3, R(addr), R(a->base), R(off));
  return addr;
}

/* Every element checked on its own: padding and parameter bounds. */
static void slow_path(pe *e, const access *a, bool store, preg reg, bool splat, preg lanev) {
  for (int64_t r = 0; r < a->nvec; r++)
    for (int j = 0; j < a->vec; j++) {
      int64_t c = r * 128 * a->vec + j;
      preg el = splat ? reg : reg + (uint32_t)(r * a->vec + j);
      preg f = flat_index(e, lanev, c), ok = pe_reg(e, PR_P);
      pe_ins(e, "setp.lt.u32", 3, R(ok), R(f), I(a->numel));
      /* root index along every dim with a dynamic offset */
      preg rest = f;
      int64_t idx_of_dim[IR_MAXRANK];
      preg idxr[IR_MAXRANK];
      memset(idx_of_dim, -1, sizeof idx_of_dim);
      for (int i = a->t->rank - 1; i >= 0; i--) {
        preg idx, q;
        pe_divrem(e, rest, a->t->shape[i], &q, &idx);
        idxr[i] = idx;
        idx_of_dim[a->r->dim[i]] = i;
        rest = q;
      }
      for (int d = 0; d < a->prank; d++) {
        if (!a->oob[d]) continue;
        preg root = pe_reg(e, PR_RD), p = pe_reg(e, PR_P);
        if (a->r->doff[d]) pe_ins(e, "add.s64", 3, R(root), R(a->r->doff[d]), I(a->r->soff[d]));
        else pe_ins(e, "mov.b64", 2, R(root), I(a->r->soff[d]));
        if (idx_of_dim[d] >= 0) {
          preg w = pe_reg(e, PR_RD);
          pe_ins(e, "cvt.u64.u32", 2, R(w), R(idxr[idx_of_dim[d]]));
          pe_ins(e, "add.s64", 3, R(root), R(root), R(w));
        }
        pe_ins(e, "setp.lt.u64", 3, R(p), R(root), I(a->N[d]));
        pe_ins(e, "and.pred", 3, R(ok), R(ok), R(p));
      }
      preg addr = elem_addr(e, a, f);
      if (!store) pe_zero(e, a->dtype, el, 1);
      mem_ins(e, a, store, el, false, 1, addr, 0, ok, false);
    }
}

/* Vector chunks; only padding (elements past the view) is checked. */
static void fast_path(pe *e, const access *a, bool store, preg reg, bool splat, preg lanev) {
  bool contiguous = a->run >= a->numel;
  preg tb = 0;
  if (contiguous) {
    preg off = pe_reg(e, PR_RD);
    tb = pe_reg(e, PR_RD);
    pe_ins(e, "mul.wide.u32", 3, R(off), R(lanev), I(a->bytes));
    pe_ins(e, "add.s64", 3, R(tb), R(a->base), R(off));
  }
  for (int64_t r = 0; r < a->nvec; r++) {
    bool partial = (r + 1) * 128 * a->vec > a->numel;
    for (int64_t j = 0; j < a->vec; j += a->chunk) {
      int64_t c = r * 128 * a->vec + j;
      preg el = splat ? reg : reg + (uint32_t)(r * a->vec + j);
      preg addr = tb;
      int64_t imm = c * a->bytes;
      preg f = 0;
      if (!contiguous || partial) f = flat_index(e, lanev, c);
      if (!contiguous) { addr = elem_addr(e, a, f); imm = 0; }
      if (!partial) {
        for (int64_t g = 0; g < a->chunk; g += a->width)
          mem_ins(e, a, store, splat ? el : el + (uint32_t)g, splat, a->width, addr, imm + g * a->bytes, 0, false);
        continue;
      }
      if (a->numel % a->chunk == 0) {   /* chunks are wholly in or out */
        preg ok = pe_reg(e, PR_P);
        pe_ins(e, "setp.lt.u32", 3, R(ok), R(f), I(a->numel));
        if (!store && !splat) pe_zero(e, a->dtype, el, (int)a->chunk);
        for (int64_t g = 0; g < a->chunk; g += a->width)
          mem_ins(e, a, store, splat ? el : el + (uint32_t)g, splat, a->width, addr, imm + g * a->bytes, ok, false);
      } else {
        for (int64_t g = 0; g < a->chunk; g++) {
          preg ok = pe_reg(e, PR_P);
          pe_ins(e, "setp.lt.u32", 3, R(ok), R(f), I(a->numel - g));
          if (!store && !splat) pe_zero(e, a->dtype, el + (uint32_t)g, 1);
          mem_ins(e, a, store, splat ? el : el + (uint32_t)g, splat, 1, addr, imm + g * a->bytes, ok, false);
        }
      }
    }
  }
}

/* Tiled layouts: address = base + thread part (one register) + a constant
** per register element.  When the view may leave its parameter every
** element is checked against the parameter's bounds. */
static void tiled_access(pe *e, const access *a, bool store, preg reg, bool checked) {
  const lay_fit *f = &a->f;
  preg T[LAY_MAXRANK];
  pe_thread_coords(e, f, T);
  preg toff = pe_reg(e, PR_RD), addr = pe_reg(e, PR_RD);
  pe_ins(e, "mov.b64", 2, R(toff), I(0));
  for (int d = 0; d < f->rank; d++)
    if (T[d]) pe_ins(e, "mad.wide.u32", 4, R(toff), R(T[d]), I(a->S[a->r->dim[d]] * a->bytes), R(toff));
  pe_ins(e, "add.s64", 3, R(addr), R(a->base), R(toff));
  preg own = store ? pe_owner(e, f) : 0;
  /* lower bound of each parameter dim the view may leave: off_d + T_d */
  preg lo[IR_MAXRANK] = { 0 };
  if (checked)
    for (int d = 0; d < a->prank; d++) {
      if (!a->oob[d]) continue;
      lo[d] = pe_reg(e, PR_RD);
      if (a->r->doff[d]) pe_ins(e, "add.s64", 3, R(lo[d]), R(a->r->doff[d]), I(a->r->soff[d]));
      else pe_ins(e, "mov.b64", 2, R(lo[d]), I(a->r->soff[d]));
      for (int i = 0; i < a->t->rank; i++)
        if (a->r->dim[i] == d && T[i]) {
          preg w = pe_reg(e, PR_RD);
          pe_ins(e, "cvt.u64.u32", 2, R(w), R(T[i]));
          pe_ins(e, "add.s64", 3, R(lo[d]), R(lo[d]), R(w));
        }
    }
  for (int64_t r = 0; r < f->nregs; r++)
    for (int el = 0; el < f->vlen; el += (int)a->chunk) {
      int64_t C[LAY_MAXRANK], imm = 0;
      pe_const_coords(f, r, el, C);
      for (int d = 0; d < f->rank; d++) imm += C[d] * a->S[a->r->dim[d]];
      imm *= a->bytes;
      preg rr = reg + (uint32_t)(r * f->vlen + el);
      if (!checked) {
        for (int64_t g = 0; g < a->chunk; g += a->width)
          mem_ins(e, a, store, rr + (uint32_t)g, false, a->width, addr, imm + g * a->bytes, own, false);
        continue;
      }
      for (int64_t g = 0; g < a->chunk; g++) {   /* one element at a time */
        int64_t Cg[LAY_MAXRANK];
        pe_const_coords(f, r, el + (int)g, Cg);
        preg ok = own;
        for (int d = 0; d < a->prank; d++) {
          if (!lo[d]) continue;
          int64_t c = 0;
          for (int i = 0; i < a->t->rank; i++) if (a->r->dim[i] == d) c = Cg[i];
          preg idx = pe_reg(e, PR_RD), p = pe_reg(e, PR_P);
          pe_ins(e, "add.s64", 3, R(idx), R(lo[d]), I(c));
          pe_ins(e, "setp.lt.u64", 3, R(p), R(idx), I(a->N[d]));
          if (ok) pe_ins(e, "and.pred", 3, R(p), R(p), R(ok));
          ok = p;
        }
        if (!store) pe_zero(e, a->dtype, rr + (uint32_t)g, 1);
        mem_ins(e, a, store, rr + (uint32_t)g, false, 1, addr, imm + g * a->bytes, ok, false);
      }
    }
}

/* A view wholly outside its parameter: a load reads zeros, a store writes nothing. */
static void no_element(pe *e, const access *a, bool store, uint32_t valv) {
  if (!store) pe_zero(e, a->dtype, pe_vreg(e, valv), (int)pe_nregs(e, valv));
}

static void access_op(pe *e, uint32_t refv, uint32_t valv, bool store) {
  access a;
  plan(e, refv, valv, &a);
  const ir_type *vt = ir_vtype(e->k, valv);
  preg reg = pe_vreg(e, valv);
  bool splat = store && vt->kind == MGPU_VALUE_SCALAR;
  preg inb = a.maybe_oob && !a.static_oob ? inside(e, &a) : 0;
  bool none = inb && whole_or_none(&a);   /* outside, the view has no element to move */

  if (ir_vtype(e->k, refv)->rank == 0) {   /* one element, seen by every thread */
    preg p = inb;
    if (store) {   /* one lane of each warpgroup writes */
      preg l0 = pe_reg(e, PR_P);
      pe_ins(e, "setp.eq.u32", 3, R(l0), R(e->lane), I(0));
      if (p) pe_ins(e, "and.pred", 3, R(l0), R(l0), R(p));
      p = l0;
    } else if (p) {
      pe_zero(e, a.dtype, reg, 1);
    }
    mem_ins(e, &a, store, reg, false, 1, a.base, 0, p, false);
    return;
  }
  if (a.tiled) {
    if (a.static_oob || !inb) { tiled_access(e, &a, store, reg, a.static_oob); return; }
    uint32_t l_slow = pe_label(e), l_done = pe_label(e);
    pe_pins(e, inb, true, "bra.uni", 1, LBL(l_slow));
    tiled_access(e, &a, store, reg, false);
    pe_ins(e, "bra.uni", 1, LBL(l_done));
    pe_label_here(e, l_slow);
    if (none) no_element(e, &a, store, valv);
    else tiled_access(e, &a, store, reg, true);
    pe_label_here(e, l_done);
    return;
  }
  preg lanev = pe_reg(e, PR_R);
  pe_ins(e, "mul.lo.u32", 3, R(lanev), R(e->lane), I(a.vec));
  if (a.static_oob) { slow_path(e, &a, store, reg, splat, lanev); return; }
  if (!inb) { fast_path(e, &a, store, reg, splat, lanev); return; }
  uint32_t l_slow = pe_label(e), l_done = pe_label(e);
  pe_pins(e, inb, true, "bra.uni", 1, LBL(l_slow));
  fast_path(e, &a, store, reg, splat, lanev);
  pe_ins(e, "bra.uni", 1, LBL(l_done));
  pe_label_here(e, l_slow);
  if (none) no_element(e, &a, store, valv);
  else slow_path(e, &a, store, reg, splat, lanev);
  pe_label_here(e, l_done);
}

/* atomic: the warpgroup's leader thread does the read-modify-write, then
** hands the old value to the other threads through the warpgroup's
** scratch slice (a store, two warpgroup barriers around the load). */
void ptx_atomic(pe *e, const ir_op *op) {
  const uint32_t *o = ir_opds(e->k, op);
  const int64_t *at = ir_ints(e->k, op);
  access a;
  plan(e, o[0], o[1], &a);
  int dt = a.dtype, bytes = a.bytes;
  if (at[1] == IR_SEM_RELEASE || at[1] == IR_SEM_ACQ_REL) pe_wg_barrier(e);   /* the leader releases the warpgroup's writes */
  preg pred = pe_leader(e);
  preg inb = a.maybe_oob && !a.static_oob ? inside(e, &a) : 0;
  if (a.static_oob) pe_ins(e, "setp.ne.u32", 3, R(pred), R(e->lane), R(e->lane));   /* never */
  else if (inb) pe_ins(e, "and.pred", 3, R(pred), R(pred), R(inb));
  preg old = e->vreg[op->res];
  pe_zero(e, dt, old, 1);
  const char *ty;
  bool bitwise = at[0] == IR_ATOM_EXCH || at[0] == IR_ATOM_CAS || at[0] >= IR_ATOM_AND;
  if (dt == MGPU_F32) ty = at[0] == IR_ATOM_ADD ? "f32" : "b32";
  else if (bitwise) ty = bytes == 8 ? "b64" : "b32";
  else if (dt == MGPU_I32) ty = "s32";
  else if (dt == MGPU_I64) ty = at[0] == IR_ATOM_ADD ? "u64" : "s64";
  else ty = bytes == 8 ? "u64" : "u32";
  char opc[96];
  snprintf(opc, sizeof opc, "atom.%s.%s.global.%s.%s", ir_sem_names[at[1]], ir_scope_names[at[2]], ir_atom_names[at[0]], ty);
  if (at[0] == IR_ATOM_CAS)
    pe_pins(e, pred, false, opc, 4, R(old), ADDR(a.base, 0), R(pe_vreg(e, o[1])), R(pe_vreg(e, o[2])));
  else
    pe_pins(e, pred, false, opc, 3, R(old), ADDR(a.base, 0), R(pe_vreg(e, o[1])));
  preg slot = pe_wg_scratch(e);
  pe_pins(e, pred, false, bytes == 8 ? "st.shared.b64" : "st.shared.b32", 2, ADDR(slot, 0), R(old));
  pe_wg_barrier(e);
  pe_ins(e, bytes == 8 ? "ld.shared.b64" : "ld.shared.b32", 2, R(old), ADDR(slot, 0));
  pe_wg_barrier(e);
}

/* The root address of GMEM ref r on the device the peer table `tabv`
** entry 2 + index names (index: an s32 register, or 0 for entry 2 + fixed):
** r's own root address plus that entry's byte offset. */
static preg peer_base(pe *e, const pref *r, uint32_t tabv, preg index, int fixed) {
  preg addr = e->param_addr[e->refs[tabv].root], delta = pe_reg(e, PR_RD), base = pe_reg(e, PR_RD);
  if (index) {
    preg i64 = pe_reg(e, PR_RD), at = pe_reg(e, PR_RD);
    pe_ins(e, "cvt.s64.s32", 2, R(i64), R(index));
    pe_ins(e, "mad.lo.s64", 4, R(at), R(i64), I(8), R(addr));
    addr = at;
  }
  pe_ins(e, "ld.global.nc.u64", 2, R(delta), ADDR(addr, 8 * (2 + fixed)));   /* entries 0, 1: this device, the count */
  pe_ins(e, "add.s64", 3, R(base), R(pe_ref_base(e, r)), R(delta));
  return base;
}

void ptx_remote(pe *e, const ir_op *op) {
  const uint32_t *o = ir_opds(e->k, op);
  pref *dst = &e->refs[op->res];
  *dst = e->refs[o[0]];
  dst->dev = pe_vreg(e, o[1]);
  dst->ndev = (int)ir_vtype(e->k, o[2])->shape[0] - 3;
  dst->base = peer_base(e, &e->refs[o[0]], o[2], dst->dev, 0);
}

void ptx_cluster_ref(pe *e, const ir_op *op) {
  const uint32_t *o = ir_opds(e->k, op);
  e->refs[op->res] = e->refs[o[0]];
  e->refs[op->res].cta = pe_vreg(e, o[1]);
}

void ptx_multimem(pe *e, const ir_op *op) {
  static const char *const reds[3] = { "add", "min", "max" };
  const uint32_t *o = ir_opds(e->k, op);
  bool store = op->code == IR_multimem_store;
  uint32_t refv = o[0], tab = o[store ? 2 : 1];
  pref saved = e->refs[refv];
  /* the multicast address: the entry after the devices' */
  e->refs[refv].base = peer_base(e, &saved, tab, 0, (int)ir_vtype(e->k, tab)->shape[0] - 3);
  if (e->ptx_isa < 81) e->ptx_isa = 81;   /* multimem: PTX ISA 8.1 */
  e->mm = store ? "st" : reds[ir_ints(e->k, op)[0]];
  access_op(e, refv, store ? o[1] : op->res, store);
  e->mm = NULL;
  e->refs[refv] = saved;
}

void ptx_sem_wait(pe *e, const ir_op *op) {
  const uint32_t *o = ir_opds(e->k, op);
  access a;
  plan(e, o[0], o[1], &a);
  preg lead = pe_leader(e), v = pe_reg(e, PR_R), want = pe_vreg(e, o[1]), next = pe_reg(e, PR_R), old = pe_reg(e, PR_R);
  preg p = pe_reg(e, PR_P);
  uint32_t spin = pe_label(e), done = pe_label(e);
  pe_pins(e, lead, true, "bra", 1, LBL(done));
  pe_label_here(e, spin);
  pe_ins(e, "ld.acquire.sys.global.u32", 2, R(v), ADDR(a.base, 0));
  pe_ins(e, "setp.lt.s32", 3, R(p), R(v), R(want));
  pe_pins(e, p, false, "bra", 1, LBL(spin));
  pe_ins(e, "sub.s32", 3, R(next), R(v), R(want));
  pe_ins(e, "atom.acquire.sys.global.cas.b32", 4, R(old), ADDR(a.base, 0), R(v), R(next));
  pe_ins(e, "setp.ne.u32", 3, R(p), R(old), R(v));
  pe_pins(e, p, false, "bra", 1, LBL(spin));   /* another waiter took it first: look again */
  pe_label_here(e, done);
  pe_wg_barrier(e);
}

void ptx_load(pe *e, const ir_op *op) {
  uint32_t r = ir_opds(e->k, op)[0];
  if (e->refs[r].space == MGPU_SPACE_SMEM) ptx_smem_access(e, r, op->res, false);
  else if (e->refs[r].space == MGPU_SPACE_REGS) ptx_acc_load(e, op);
  else access_op(e, r, op->res, false);
}

void ptx_store(pe *e, const ir_op *op) {
  const uint32_t *o = ir_opds(e->k, op);
  if (e->refs[o[0]].space == MGPU_SPACE_SMEM) ptx_smem_access(e, o[0], o[1], true);
  else if (e->refs[o[0]].space == MGPU_SPACE_REGS) ptx_acc_store(e, op);
  else access_op(e, o[0], o[1], true);
}
