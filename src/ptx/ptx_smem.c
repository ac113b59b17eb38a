/*
** ptx_smem.c -- SMEM refs: allocations, transposed views, and moving
** register arrays to and from SMEM through the transforms.
**
** An access is planned at compile time by evaluating the address of every
** element for every thread of the warpgroup with xf_offset, the function
** the interpreter uses too.  Each thread computes the address of its first
** element once; another register vector then costs nothing when its
** distance from the first is the same for every thread (an immediate
** offset), one XOR when it differs only inside 1024-byte swizzle periods,
** and a full address computation otherwise.  Chunks move with the widest
** vector access every thread's addresses allow.  The plan also counts bank
** conflicts and reports them in a PTX comment.
**
** A store of 16-bit wgmma-style fragments (every pair of registers one
** thread's share of an 8x8 matrix, rows of 16 contiguous bytes in SMEM)
** goes through stmatrix, four matrices an instruction instead of one b32
** store per pair.
**
** Automatic barriers (unless unsafe_no_auto_barriers): a store is preceded
** by a warpgroup barrier when SMEM may have been read since the last one,
** and followed by one (commit_smem's, when that comes next), so loads and
** stores act in program order across the warpgroup's threads.
*/
#include <stdio.h>
#include <string.h>

#include "../layout/xform.h"
#include "ptx.h"

enum { M_ADD, M_XOR, M_FULL };

typedef struct smem_access {
  const ir_type *vt;          /* view type */
  const pref *r;
  xf_map m;                   /* the allocation's transforms */
  int dtype, bytes;
  lay_layout own_lay;         /* layout used for scalar (splat) stores */
  lay_fit f;
  bool strided;
  int64_t numel, nel;         /* view elements; register elements per thread */
  int64_t *addr;              /* [128][nel]: byte offset in the allocation, -1 = padding */
  int w;                      /* elements per instruction */
  bool dyn_full;              /* a dynamic offset that is not additive: every address in full */
  bool dyn_aligned;           /* dynamic offsets move by multiples of 1024 bytes */
  int64_t dyn_step[XF_MAXRANK];  /* bytes per unit of the dynamic offset (additive dims) */
} smem_access;


void ptx_alloc(pe *e, const ir_op *op) {
  pref *r = &e->refs[op->res];
  const ir_type *t = ir_vtype(e->k, op->res);
  memset(r, 0, sizeof *r);
  r->root = op->res;
  r->space = t->space;
  r->rank = t->rank;
  for (int i = 0; i < t->rank; i++) r->dim[i] = (int8_t)i;
}

void ptx_transpose_ref(pe *e, const ir_op *op) {
  const pref *src = &e->refs[ir_opds(e->k, op)[0]];
  pref *dst = &e->refs[op->res];
  const int64_t *perm = ir_ints(e->k, op);
  *dst = *src;
  for (int j = 0; j < src->rank; j++) dst->dim[j] = src->dim[perm[j]];
}

/* reshape_ref: rows of the allocation reshaped (ir_ref.c), from the source's first element;
** the source's dynamic offsets move whole rows (ir_reshape_check). */
void ptx_reshape_ref(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  const pref *src = &e->refs[ir_opds(k, op)[0]];
  pref *dst = &e->refs[op->res];
  const ir_type *t = ir_vtype(k, op->res);
  int64_t shape[IR_MAXRANK], stride = 1, start = 0, unit = ir_numel(t) / t->shape[0];
  int rank;
  ir_root_shape(k, src->root, shape, &rank);
  memset(dst, 0, sizeof *dst);
  for (int d = rank - 1; d >= 0; d--) {
    start += src->soff[d] * stride;
    if (src->doff[d]) {
      int64_t rows = stride / unit;
      preg x = pe_reg(e, PR_RD);
      if (dst->doff[0]) pe_ins(e, "mad.lo.s64", 4, R(x), R(src->doff[d]), I(rows), R(dst->doff[0]));
      else pe_ins(e, "mul.lo.s64", 3, R(x), R(src->doff[d]), I(rows));
      dst->ddiv[0] = dst->doff[0] ? pass_gcd(dst->ddiv[0], src->ddiv[d] * rows) : src->ddiv[d] * rows;
      dst->doff[0] = x;
    }
    stride *= shape[d];
  }
  dst->root = op->res;
  dst->space = src->space;
  dst->rank = t->rank;
  for (int d = 0; d < t->rank; d++) dst->dim[d] = (int8_t)d;
  dst->soff[0] = start / unit;
}

void pe_smem_map(pe *e, uint32_t root, xf_map *m) {
  const ir_kernel *k = e->k;
  const ir_op *op = &k->ops.v[k->vals.v[ir_ref_alloc(k, root)].def];
  int64_t shape[IR_MAXRANK];
  int rank;
  ir_root_shape(k, root, shape, &rank);
  xf_chain c;
  char why[300];
  if (!xf_parse(ir_str(k, op->text), &c, why, sizeof why) ||
      !xf_apply(&c, shape, rank, dt_bytes(ir_vtype(k, root)->dtype), m, why, sizeof why))
    pe_fail(e, why);
}

void ptx_smem_prologue(pe *e) {
  const ir_kernel *k = e->k;
  bool swizzled = false;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    if (op->code != IR_smem_alloc) continue;
    xf_map m;
    pe_smem_map(e, op->res, &m);
    swizzled |= m.swizzle != 0;
  }
  if (!swizzled) return;
  preg t = pe_reg(e, PR_R), p = pe_reg(e, PR_P);
  pe_ins(e, "and.b32", 3, R(t), R(e->smem), I(1023));
  pe_ins(e, "setp.ne.u32", 3, R(p), R(t), I(0));
  pe_pins(e, p, false, "trap", 0);
}

/* -- Address code -------------------------------------------------------------------- */

/* u32 register = v + c (v may be 0: then a mov of c). */
static preg add_const(pe *e, preg v, int64_t c) {
  preg x = pe_reg(e, PR_R);
  if (v) pe_ins(e, "add.u32", 3, R(x), R(v), I(c));
  else pe_ins(e, "mov.u32", 2, R(x), I(c));
  return x;
}

/* Byte offset (u32 register) of the element at root index reg[d] + c[d]
** (reg[d] a u32 register or 0), through the allocation's transforms. */
static preg emit_offset(pe *e, const xf_map *m, const preg *reg, const int64_t *c) {
  preg rg[XF_MAXRANK] = { 0 };
  int64_t cs[XF_MAXRANK] = { 0 };
  int r = m->rank;
  memcpy(rg, reg, sizeof(preg) * (size_t)r);
  memcpy(cs, c, sizeof(int64_t) * (size_t)r);
  for (int i = 0; i < m->c.n; i++) {
    const xf_step *s = &m->c.s[i];
    if (s->kind == XF_TILING) {
      int first = r - s->n;
      for (int j = 0; j < s->n; j++) {
        int d = first + j;
        int64_t t = s->v[j];
        if (!rg[d]) { cs[r + j] = cs[d] % t; cs[d] /= t; rg[r + j] = 0; continue; }
        preg x = cs[d] ? add_const(e, rg[d], cs[d]) : rg[d];
        pe_divrem(e, x, t, &rg[d], &rg[r + j]);
        cs[d] = 0; cs[r + j] = 0;
      }
      r += s->n;
    } else if (s->kind == XF_TRANSPOSE) {
      preg tr[XF_MAXRANK];
      int64_t tc[XF_MAXRANK];
      for (int j = 0; j < r; j++) { tr[j] = rg[s->v[j]]; tc[j] = cs[s->v[j]]; }
      memcpy(rg, tr, sizeof(preg) * (size_t)r);
      memcpy(cs, tc, sizeof(int64_t) * (size_t)r);
    }
  }
  int64_t k = 0;
  preg acc = 0;
  for (int j = 0; j < r; j++) {
    int64_t sb = m->pstride[j] * m->bytes;
    k += cs[j] * sb;
    if (!rg[j]) continue;
    preg n = pe_reg(e, PR_R);
    if (acc) pe_ins(e, "mad.lo.u32", 4, R(n), R(rg[j]), I(sb), R(acc));
    else if (sb == 1) pe_ins(e, "mov.u32", 2, R(n), R(rg[j]));
    else pe_ins(e, "mul.lo.u32", 3, R(n), R(rg[j]), I(sb));
    acc = n;
  }
  if (!acc) return add_const(e, 0, xf_swizzle(m->swizzle, k));
  if (k) acc = add_const(e, acc, k);
  if (m->swizzle) {
    preg t = pe_reg(e, PR_R), x = pe_reg(e, PR_R);
    pe_ins(e, "shr.u32", 3, R(t), R(acc), I(7));
    pe_ins(e, "and.b32", 3, R(t), R(t), I(m->swizzle / 16 - 1));
    pe_ins(e, "shl.b32", 3, R(t), R(t), I(4));
    pe_ins(e, "xor.b32", 3, R(x), R(acc), R(t));
    acc = x;
  }
  return acc;
}

/* Per view dim, the u32 registers and constants of the coordinates of
** register element j of this thread. */
static void coords(pe *e, const smem_access *a, const preg *T, preg lanev, int64_t j, preg *reg, int64_t *c) {
  const lay_fit *f = &a->f;
  int rank = a->vt->rank;
  if (!a->strided) {
    pe_const_coords(f, j / f->vlen, (int)(j % f->vlen), c);
    for (int i = 0; i < rank; i++) reg[i] = T[i];
    return;
  }
  /* strided: flat index lane * vec + constant, unravelled */
  int64_t c0 = (j / f->vlen) * 128 * f->vlen + j % f->vlen;
  preg rest = add_const(e, lanev, c0);
  for (int i = rank - 1; i >= 0; i--) {
    c[i] = 0;
    if (i == 0) { reg[0] = rest; break; }
    pe_divrem(e, rest, a->vt->shape[i], &rest, &reg[i]);
  }
}

/* Offset in the allocation of register element j: the root index is the
** view's static start + the element's coordinates (+ dynamic starts when
** they are not additive). */
static preg full_offset(pe *e, const smem_access *a, const preg *T, preg lanev, int64_t j) {
  preg vreg[IR_MAXRANK] = { 0 }, rreg[XF_MAXRANK] = { 0 };
  int64_t vc[IR_MAXRANK] = { 0 }, rc[XF_MAXRANK] = { 0 };
  coords(e, a, T, lanev, j, vreg, vc);
  for (int d = 0; d < a->m.rank; d++) rc[d] = a->r->soff[d];
  for (int i = 0; i < a->vt->rank; i++) {
    int d = a->r->dim[i];
    rc[d] += vc[i];
    rreg[d] = vreg[i];
  }
  if (a->dyn_full)
    for (int d = 0; d < a->m.rank; d++) {
      if (!a->r->doff[d]) continue;
      preg x = pe_reg(e, PR_R);
      pe_ins(e, "cvt.u32.u64", 2, R(x), R(a->r->doff[d]));
      if (rreg[d]) pe_ins(e, "add.u32", 3, R(x), R(x), R(rreg[d]));
      rreg[d] = x;
    }
  return emit_offset(e, &a->m, rreg, rc);
}

/* -- Planning -------------------------------------------------------------------------- */

/* The bytes a step of q along dim d moves every element of the allocation
** (a multiple of q), or -1 when that differs from element to element.
** Before the swizzle an offset is a sum of one term per dim, so the dim's
** own terms decide; a step that is a whole swizzle period (S * 8 bytes)
** commutes with the swizzle.  Any other step is checked element by element. */
static int64_t dyn_step(const xf_map *m, int d, int64_t q) {
  int64_t idx[XF_MAXRANK] = { 0 }, total = 1, st = 0;
  bool seen = false, additive = true;
  for (int64_t i = 0; i + q < m->shape[d] && additive; i++) {
    idx[d] = i;
    int64_t o0 = xf_linear(m, idx);
    idx[d] = i + q;
    int64_t s = xf_linear(m, idx) - o0;
    additive = !seen || s == st;
    st = s, seen = true;
  }
  if (!seen) return 0;                              /* no element can move by q */
  if (additive && m->swizzle && st % (m->swizzle * 8)) {
    seen = false;
    for (int i = 0; i < m->rank; i++) total *= m->shape[i];
    for (int64_t el = 0; el < total && additive; el++) {
      int64_t rem = el;
      for (int i = m->rank - 1; i >= 0; i--) { idx[i] = rem % m->shape[i]; rem /= m->shape[i]; }
      if (idx[d] + q >= m->shape[d]) continue;
      int64_t o0 = xf_offset(m, idx);
      idx[d] += q;
      int64_t s = xf_offset(m, idx) - o0;
      additive = !seen || s == st;
      st = s, seen = true;
    }
  }
  return additive && st % q == 0 ? st / q : -1;
}

bool pe_smem_dyn_steps(pe *e, const pref *r, const xf_map *m, int64_t *step) {
  for (int d = 0; d < m->rank; d++) {
    step[d] = 0;
    if (!r->doff[d]) continue;
    int64_t q = r->ddiv[d];
    if (q == 0) continue;                          /* always zero */
    if (q >= m->shape[d]) q = m->shape[d];          /* only 0 fits: any step is right */
    int i = 0;   /* every element of the allocation is visited: remember the answer */
    while (i < e->ndstep && (e->dstep[i].root != r->root || e->dstep[i].dim != d || e->dstep[i].q != q)) i++;
    if (i == e->ndstep) {
      i = e->ndstep < (int)MGPU_COUNTOF(e->dstep) ? e->ndstep++ : (int)(r->root % MGPU_COUNTOF(e->dstep));
      e->dstep[i].root = r->root;
      e->dstep[i].dim = d;
      e->dstep[i].q = q;
      e->dstep[i].step = dyn_step(m, d, q);
    }
    if (e->dstep[i].step < 0) return false;
    step[d] = e->dstep[i].step;
  }
  return true;
}

/* Dynamic starts: additive, or every address computed in full. */
static void plan_dynamic(pe *e, smem_access *a) {
  a->dyn_full = !pe_smem_dyn_steps(e, a->r, &a->m, a->dyn_step);
  a->dyn_aligned = true;
  for (int d = 0; d < a->m.rank; d++) a->dyn_aligned &= a->dyn_step[d] % 1024 == 0;
}

preg pe_smem_origin(pe *e, const pref *r, const xf_map *m, int64_t align, const char *what) {
  int64_t step[XF_MAXRANK];
  if (!pe_smem_dyn_steps(e, r, m, step))
    pe_failf(e, "%s: a dynamic index into this SMEM ref does not move it by whole tiles; index it in "
             "multiples of the tiling (or slice leading, untiled dims)", what);
  preg base = pe_reg(e, PR_R);
  pe_ins(e, "add.u32", 3, R(base), R(e->smem), I(e->ki->smem_off[r->root]));
  for (int d = 0; d < m->rank; d++) {
    if (!r->doff[d] || !step[d]) continue;
    int64_t q = r->ddiv[d] < m->shape[d] ? r->ddiv[d] : m->shape[d];   /* the index is a multiple of q */
    if (step[d] * q % align)
      pe_failf(e, "%s: a dynamic index along dimension %d moves the SMEM ref by multiples of %lld bytes, not "
               "of %lld", what, d, (long long)(step[d] * q), (long long)align);
    preg x = pe_reg(e, PR_R);
    pe_ins(e, "cvt.u32.u64", 2, R(x), R(r->doff[d]));
    pe_ins(e, "mad.lo.u32", 4, R(base), R(x), I(step[d]), R(base));
  }
  return base;
}

/* Address of every element for every thread. */
static void plan_addresses(pe *e, smem_access *a) {
  const lay_fit *f = &a->f;
  a->nel = f->nregs * f->vlen;
  a->addr = mem_calloc(e->k->alloc, sizeof(int64_t) * (size_t)(128 * a->nel));
  if (!a->addr) diag_throw(e->d, ERR_NOMEM, "");
  for (int t = 0; t < 128; t++)
    for (int64_t j = 0; j < a->nel; j++) {
      int64_t vidx[LAY_MAXRANK], ridx[XF_MAXRANK];
      lay_index(f, t / 32, t % 32, j / f->vlen, (int)(j % f->vlen), vidx);
      bool valid = true;
      for (int i = 0; i < a->vt->rank; i++) valid &= vidx[i] < a->vt->shape[i];
      if (!valid) { a->addr[t * a->nel + j] = -1; continue; }
      for (int d = 0; d < a->m.rank; d++) ridx[d] = a->r->soff[d];
      for (int i = 0; i < a->vt->rank; i++) ridx[a->r->dim[i]] += vidx[i];
      a->addr[t * a->nel + j] = xf_offset(&a->m, ridx);
    }
}

/* The widest access (elements) every chunk of every thread allows. */
static int plan_width(const smem_access *a) {
  int vlen = a->f.vlen;
  if (a->bytes == 1 || (a->bytes == 2 && pe_cls(a->dtype) == PR_R)) return 1;
  for (int w = vlen; w > 1; w /= 2) {
    if (vlen % w || w * a->bytes > 16) continue;
    bool ok = true;
    for (int t = 0; t < 128 && ok; t++)
      for (int64_t j = 0; j < a->nel && ok; j += w) {
        const int64_t *p = &a->addr[t * a->nel + j];
        if (p[0] < 0) { for (int i = 1; i < w; i++) ok &= p[i] < 0; continue; }
        ok = p[0] % (w * a->bytes) == 0;
        for (int i = 1; i < w && ok; i++) ok = p[i] == p[0] + i * a->bytes;
      }
    if (ok) return w;
  }
  return 1;
}

/* How an access whose thread t uses offset tab[t * stride] is addressed
** relative to the first, whose thread t uses tab0[t * stride]: addr =
** a0 + k (M_ADD), addr = (a0 ^ x) + k with x below the 1024-byte swizzle
** period and k a multiple of it (M_XOR, only when dynamic offsets keep
** that period: xor_ok), or in full.  *partial: some thread skips it
** (offset < 0). */
static int plan_relative(const int64_t *tab0, const int64_t *tab, int64_t stride, bool xor_ok, int64_t *k, int64_t *x,
                         bool *partial) {
  const int64_t hi = ~INT64_C(1023);
  bool add = true, xr = true, first = true;
  int64_t k_add = 0, k_xor = 0, x_xor = 0;
  *partial = false;
  for (int t = 0; t < 128; t++) {
    int64_t p = tab[t * stride], p0 = tab0[t * stride];
    if (p < 0) { *partial = true; continue; }
    int64_t dk = p - p0, dx = (p ^ p0) & 1023, hk = (p & hi) - (p0 & hi);
    if (first) { k_add = dk; x_xor = dx; k_xor = hk; first = false; }
    add &= dk == k_add;
    xr &= dx == x_xor && hk == k_xor;
  }
  *k = 0;
  *x = 0;
  if (add) { *k = k_add; return M_ADD; }
  if (xr && xor_ok) { *k = k_xor; *x = x_xor; return M_XOR; }
  return M_FULL;
}

/* Bank conflicts of one instruction whose thread t moves `bytes` bytes at
** offset tab[t * stride] (< 0: none): wavefronts over all warps, and the
** conflict-free count. */
static void bank_count(const int64_t *tab, int64_t stride, int bytes, int64_t *waves, int64_t *ideal) {
  int per_phase = bytes >= 16 ? 8 : bytes == 8 ? 16 : 32;
  int words = bytes >= 4 ? bytes / 4 : 1;
  for (int wp = 0; wp < 4; wp++)
    for (int ph = 0; ph < 32 / per_phase; ph++) {
      int64_t seen[32][32];
      int nseen[32] = { 0 }, worst = 0;
      bool any = false;
      for (int l = ph * per_phase; l < (ph + 1) * per_phase; l++) {
        int64_t p = tab[(wp * 32 + l) * stride];
        if (p < 0) continue;
        any = true;
        for (int q = 0; q < words; q++) {
          int64_t word = p / 4 + q;
          int bank = (int)(word % 32);
          bool dup = false;
          for (int s = 0; s < nseen[bank]; s++) dup |= seen[bank][s] == word;
          if (!dup && nseen[bank] < 32) seen[bank][nseen[bank]++] = word;
          if (nseen[bank] > worst) worst = nseen[bank];
        }
      }
      if (!any) continue;
      *waves += worst;
      *ideal += 1;
    }
}

/* -- Matrix stores ---------------------------------------------------------------------- */

/* stmatrix.x4 stores four 8x8 matrices of 16-bit elements: each thread
** gives one b32 per matrix (its row lane / 4, columns 2 (lane % 4) and +1,
** the fragments of wgmma's accumulator) and lane l the address of row
** l % 8 of matrix l / 8.  Instruction i stores the register pairs starting
** at elements 8 i + 2 m (m = 0..3): matrices (R, C), (R + 8, C), (R, C + 8),
** (R + 8, C + 8) of the 16x16 square whose corner (R, C) is where element
** 8 i of warp 0's thread 0 lies, warp w 16 w rows down.  The plan is the
** byte offset every thread gives, per instruction: [n][128]. */

/* The view coordinates (row, column) of register element j of thread 0. */
static void stm_corner(const smem_access *a, int64_t j, int64_t *rc) {
  int64_t v[LAY_MAXRANK];
  lay_index(&a->f, 0, 0, j / a->f.vlen, (int)(j % a->f.vlen), v);
  rc[0] = v[0];
  rc[1] = v[1];
}

static int64_t stm_offset(const smem_access *a, int64_t row, int64_t col) {
  int64_t ridx[XF_MAXRANK];
  for (int d = 0; d < a->m.rank; d++) ridx[d] = a->r->soff[d];
  ridx[a->r->dim[0]] += row;
  ridx[a->r->dim[1]] += col;
  return xf_offset(&a->m, ridx);
}

/* The plan for storing a's register array (a->nel / 8 instructions), or
** NULL when it does not fit stmatrix: the plan holds when every lane's
** address is 16-byte aligned and every element lands where stmatrix puts
** it.  The caller frees it (stm_free). */
static int64_t *stm_make(pe *e, const smem_access *a) {
  if (a->bytes != 2 || pe_cls(a->dtype) != PR_H || a->vt->rank != 2 || a->strided || a->dyn_full ||
      a->f.vlen % 2 || a->nel % 8)
    return NULL;
  int64_t n = a->nel / 8;
  int64_t *plan = mem_calloc(e->k->alloc, sizeof(int64_t) * (size_t)(n * 128));
  if (!plan) diag_throw(e->d, ERR_NOMEM, "");
  for (int64_t i = 0; i < n; i++) {
    int64_t rc[2], *A = plan + i * 128;
    stm_corner(a, 8 * i, rc);
    for (int t = 0; t < 128; t++) {
      int l = t % 32;
      int64_t row = rc[0] + 16 * (t / 32) + 8 * ((l >> 3) & 1) + (l & 7), col = rc[1] + 8 * (l >> 4);
      if (row >= a->vt->shape[0] || col + 8 > a->vt->shape[1]) goto no;
      A[t] = stm_offset(a, row, col);
      if (A[t] % 16) goto no;
    }
    for (int t = 0; t < 128; t++) {
      int w = t / 32, l = t % 32;
      for (int m = 0; m < 4; m++) {
        const int64_t *p = &a->addr[t * a->nel + 8 * i + 2 * m];
        int64_t want = A[32 * w + 8 * m + l / 4] + 4 * (l % 4);
        if (p[0] != want || p[1] != want + 2) goto no;
      }
    }
  }
  return plan;
no:
  mem_free(e->k->alloc, plan, sizeof(int64_t) * (size_t)(n * 128));
  return NULL;
}

static void stm_free(pe *e, const smem_access *a, int64_t *plan) {
  mem_free(e->k->alloc, plan, sizeof(int64_t) * (size_t)(a->nel / 8 * 128));
}

/* Emit the plan: the first instruction's addresses computed from the
** thread index, the others an immediate offset or an XOR away where every
** thread's moves alike. */
static void stm_emit(pe *e, const smem_access *a, const int64_t *plan, preg reg, preg base, int64_t *waves,
                     int64_t *ideal) {
  preg t = pe_reg(e, PR_R), u = pe_reg(e, PR_R), rr = pe_reg(e, PR_R), cr = pe_reg(e, PR_R);
  pe_ins(e, "shr.u32", 3, R(t), R(e->lane), I(5));           /* row: 16 warp + 8 (lane / 8 % 2) + lane % 8 */
  pe_ins(e, "shl.b32", 3, R(rr), R(t), I(4));
  pe_ins(e, "and.b32", 3, R(u), R(e->lane), I(8));
  pe_ins(e, "add.u32", 3, R(rr), R(rr), R(u));
  pe_ins(e, "and.b32", 3, R(u), R(e->lane), I(7));
  pe_ins(e, "add.u32", 3, R(rr), R(rr), R(u));
  pe_ins(e, "and.b32", 3, R(cr), R(e->lane), I(16));         /* column: 8 (lane / 16 % 2) */
  pe_ins(e, "shr.u32", 3, R(cr), R(cr), I(1));
  preg a0 = 0;
  for (int64_t i = 0; i < a->nel / 8; i++) {
    int64_t kk, xx;
    bool partial;
    int mode = i == 0 ? M_FULL : plan_relative(plan, plan + i * 128, 1, a->dyn_aligned, &kk, &xx, &partial);
    preg addr;
    int64_t imm = 0;
    if (mode == M_FULL) {
      preg rreg[XF_MAXRANK] = { 0 };
      int64_t rc[XF_MAXRANK], corner[2];
      stm_corner(a, 8 * i, corner);
      for (int d = 0; d < a->m.rank; d++) rc[d] = a->r->soff[d];
      rc[a->r->dim[0]] += corner[0];
      rc[a->r->dim[1]] += corner[1];
      rreg[a->r->dim[0]] = rr;
      rreg[a->r->dim[1]] = cr;
      preg off = emit_offset(e, &a->m, rreg, rc);
      addr = pe_reg(e, PR_R);
      pe_ins(e, "add.u32", 3, R(addr), R(base), R(off));
      if (i == 0) a0 = addr;
    } else if (mode == M_ADD) {
      addr = a0, imm = kk;
    } else {
      addr = pe_reg(e, PR_R), imm = kk;
      pe_ins(e, "xor.b32", 3, R(addr), R(a0), I(xx));
    }
    preg pk[4];
    for (int m = 0; m < 4; m++) {
      preg h[2] = { reg + (uint32_t)(8 * i + 2 * m), reg + (uint32_t)(8 * i + 2 * m + 1) };
      pk[m] = pe_reg(e, PR_R);
      pe_ins(e, "mov.b32", 2, R(pk[m]), RV(h, 2));
    }
    pe_ins(e, "stmatrix.sync.aligned.m8n8.x4.shared.b16", 2, ADDR(addr, imm), RV(pk, 4));
    bank_count(plan + i * 128, 1, 16, waves, ideal);   /* lanes give 16-byte rows */
  }
}

/* -- Lowering ----------------------------------------------------------------------------- */

static void barrier(pe *e) {
  pe_wg_barrier(e);
  e->smem_reads = false;
}

/* Whether the op after the one being lowered is commit_smem, whose fence and warpgroup barrier
** order a store for the async proxy and for every thread: the store then needs no barrier of
** its own. */
static bool commit_follows(const pe *e) {
  const ir_op *next = e->op + 1;
  return next < e->k->ops.v + e->k->ops.n && next->code == IR_commit_smem;
}

/* w elements from reg on into another block's SMEM at peer (async_store_smem), completing on its
** barrier e->sta_bar: st.async of whole 32-bit words (16-bit pairs packed) or 64-bit ones, or
** red.async per 32-bit element. */
static void async_mem(pe *e, int dtype, preg reg, int w, preg peer, preg pred) {
  static const char *const reds[IR_RED_XOR + 1] = { [IR_RED_ADD] = "add", [IR_RED_MIN] = "min", [IR_RED_MAX] = "max",
                                                     [IR_RED_AND] = "and", [IR_RED_OR] = "or", [IR_RED_XOR] = "xor" };
  char opc[128];
  if (e->sta_red != IR_RED_NONE) {
    snprintf(opc, sizeof opc, "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.%s.%s",
             reds[e->sta_red], e->sta_red >= IR_RED_AND ? "b32" : dtype == MGPU_I32 ? "s32" : "u32");
    for (int i = 0; i < w; i++) {
      if (pred) pe_pins(e, pred, false, opc, 3, ADDR(peer, 4 * i), R(reg + (uint32_t)i), ADDR(e->sta_bar, 0));
      else pe_ins(e, opc, 3, ADDR(peer, 4 * i), R(reg + (uint32_t)i), ADDR(e->sta_bar, 0));
    }
    return;
  }
  int bytes = dt_bytes(dtype);
  preg words[8];
  int nw = w;
  const char *ty = bytes == 8 ? (dtype == MGPU_F64 ? "f64" : "b64") : dtype == MGPU_F32 ? "f32" : "b32";
  if (bytes == 2) {
    if (w % 2) pe_fail(e, "async_store_smem: this array's layout stores 16-bit elements one at a time, and st.async "
                          "moves whole 32-bit words: give it a layout with pairs of columns (such as WGMMA)");
    nw = w / 2;
    for (int i = 0; i < nw; i++) {
      preg pair[2] = { reg + (uint32_t)(2 * i), reg + (uint32_t)(2 * i + 1) };
      words[i] = pe_reg(e, PR_R);
      pe_ins(e, "mov.b32", 2, R(words[i]), RV(pair, 2));
    }
  } else {
    for (int i = 0; i < nw; i++) words[i] = reg + (uint32_t)i;
  }
  for (int i = 0; i < nw; i += bytes == 8 ? 2 : 4) {   /* (st.async has no .v4 of 64-bit words) */
    int n = nw - i < (bytes == 8 ? 2 : 4) ? nw - i : (bytes == 8 ? 2 : 4);
    snprintf(opc, sizeof opc, "st.async.shared::cluster.mbarrier::complete_tx::bytes%s.%s", n == 1 ? "" : n == 2 ? ".v2" : ".v4",
             ty);
    po data = n == 1 ? R(words[i]) : RV(words + i, n);
    int64_t off = (int64_t)i * (bytes == 8 ? 8 : 4);
    if (pred) pe_pins(e, pred, false, opc, 3, ADDR(peer, off), data, ADDR(e->sta_bar, 0));
    else pe_ins(e, opc, 3, ADDR(peer, off), data, ADDR(e->sta_bar, 0));
  }
}

/* One load or store of w elements at addr + imm in the block's SMEM, or, for a cluster_ref (and
** async_store_smem), at the same place in the SMEM of the block it names (the address mapped into
** the cluster's window). */
static void smem_mem(pe *e, const smem_access *a, bool store, preg reg, bool splat, int w, preg addr, int64_t imm, preg pred) {
  if (!a->r->cta) {
    pe_mem(e, "shared", a->dtype, store, reg, splat, w, addr, imm, pred, false);
    return;
  }
  preg peer = pe_reg(e, PR_R);
  pe_ins(e, "add.u32", 3, R(peer), R(addr), I(imm));
  pe_ins(e, "mapa.shared::cluster.u32", 3, R(peer), R(peer), R(a->r->cta));
  if (e->sta_bar) async_mem(e, a->dtype, reg, w, peer, pred);
  else pe_mem(e, "shared::cluster", a->dtype, store, reg, splat, w, peer, 0, pred, false);
}

void ptx_async_store_smem(pe *e, const ir_op *op) {
  const uint32_t *o = ir_opds(e->k, op);
  const ir_type *t = ir_vtype(e->k, o[1]);
  preg rank = pe_vreg(e, o[3]), bar = pe_reg(e, PR_R);
  pe_ins(e, "mapa.shared::cluster.u32", 3, R(bar), R(pe_barrier_addr(e, o[2])), R(rank));
  /* the warpgroup's one arrival on the receiving block's barrier, expecting every byte the stores
  ** complete; after a warpgroup barrier (even without automatic barriers), so that its release
  ** covers the whole warpgroup's earlier writes */
  pe_wg_barrier(e);
  e->smem_reads = false;
  preg lead = pe_leader(e);
  pe_pins(e, lead, false, "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64", 3, S("_"), ADDR(bar, 0),
          I(ir_numel(t) * dt_bytes(t->dtype)));
  pref saved = e->refs[o[1]];
  e->refs[o[1]].cta = rank;
  e->sta_bar = bar;
  e->sta_red = op->niat ? (int)ir_ints(e->k, op)[0] : IR_RED_NONE;
  ptx_smem_access(e, o[1], o[0], true);
  e->sta_bar = 0;
  e->refs[o[1]] = saved;
  if (e->ptx_isa < 81) e->ptx_isa = 81;   /* st.async, red.async: PTX ISA 8.1 */
}

/* A rank-0 view: one element, the same address for every thread (stores:
** lane 0 of the warpgroup). */
static void access_scalar(pe *e, const smem_access *a, preg reg, bool store) {
  preg rreg[XF_MAXRANK] = { 0 };
  int64_t rc[XF_MAXRANK] = { 0 };
  for (int d = 0; d < a->m.rank; d++) {
    rc[d] = a->r->soff[d];
    if (!a->r->doff[d]) continue;
    rreg[d] = pe_reg(e, PR_R);
    pe_ins(e, "cvt.u32.u64", 2, R(rreg[d]), R(a->r->doff[d]));
  }
  preg off = emit_offset(e, &a->m, rreg, rc), addr = pe_reg(e, PR_R);
  pe_ins(e, "add.u32", 3, R(addr), R(off), R(e->smem));
  preg p = 0;
  if (store) {
    p = pe_reg(e, PR_P);
    pe_ins(e, "setp.eq.u32", 3, R(p), R(e->lane), I(0));
  }
  smem_mem(e, a, store, reg, false, 1, addr, e->ki->smem_off[a->r->root], p);
}

void ptx_smem_access(pe *e, uint32_t refv, uint32_t valv, bool store) {
  const ir_kernel *k = e->k;
  smem_access a;
  memset(&a, 0, sizeof a);
  a.r = &e->refs[refv];
  a.vt = ir_vtype(k, refv);
  a.dtype = a.vt->dtype;
  a.bytes = dt_bytes(a.dtype);
  pe_smem_map(e, a.r->root, &a.m);
  bool auto_bar = !k->opts.unsafe_no_auto_barriers;
  const ir_type *valt = ir_vtype(k, valv);
  preg reg = pe_vreg(e, valv);
  bool splat = store && valt->kind == MGPU_VALUE_SCALAR;
  if (store && auto_bar && e->smem_reads) barrier(e);

  if (a.vt->rank == 0) {
    access_scalar(e, &a, reg, store);
  } else {
    a.numel = ir_numel(a.vt);
    if (splat) {   /* a scalar stored everywhere: any layout will do */
      int vec = (a.bytes == 1 || (a.bytes == 2 && pe_cls(a.dtype) == PR_R)) ? 1 : 16 / a.bytes;
      while (vec > 1 && (a.numel % vec || a.numel < 128 * vec)) vec /= 2;
      lay_strided(&a.own_lay, vec);
      char why[200];
      if (!lay_fit_shape(&a.own_lay, a.vt->shape, a.vt->rank, &a.f, why, sizeof why)) pe_fail(e, why);
    } else {
      pe_fit(e, valv, &a.f);
    }
    a.strided = a.f.l->kind == LAY_STRIDED;
    if (a.f.l->kind == LAY_SPLAT) pe_fail(e, "a splat-layout array cannot be moved to or from SMEM; cast it first");
    plan_dynamic(e, &a);
    plan_addresses(e, &a);
    a.w = plan_width(&a);

    /* thread coordinates and the first element's address */
    preg T[LAY_MAXRANK] = { 0 }, lanev = 0;
    if (a.strided) {
      lanev = pe_reg(e, PR_R);
      pe_ins(e, "mul.lo.u32", 3, R(lanev), R(e->lane), I(a.f.vlen));
    } else {
      pe_thread_coords(e, &a.f, T);
    }
    preg base = pe_reg(e, PR_R);   /* SMEM window address of the allocation + dynamic starts */
    pe_ins(e, "add.u32", 3, R(base), R(e->smem), I(e->ki->smem_off[a.r->root]));
    if (!a.dyn_full)
      for (int d = 0; d < a.m.rank; d++) {
        if (!a.r->doff[d] || !a.dyn_step[d]) continue;
        preg x = pe_reg(e, PR_R);
        pe_ins(e, "cvt.u32.u64", 2, R(x), R(a.r->doff[d]));
        pe_ins(e, "mad.lo.u32", 4, R(base), R(x), I(a.dyn_step[d]), R(base));
      }
    preg a0 = 0;
    preg xreg[64];                 /* a0 ^ x, by x / 16 (x < 1024 and a multiple of the access width) */
    memset(xreg, 0, sizeof xreg);
    preg own = store && !splat ? pe_owner(e, &a.f) : 0;
    int64_t waves = 0, ideal = 0, ninstr = 0;
    int64_t *plan = store && !splat && !own && !a.r->cta ? stm_make(e, &a) : NULL;   /* (stmatrix: own SMEM only) */
    bool matrix = plan != NULL;
    if (matrix) {
      stm_emit(e, &a, plan, reg, base, &waves, &ideal);
      ninstr = a.nel / 8;
      stm_free(e, &a, plan);
    }
    for (int64_t j = 0; j < (matrix ? 0 : a.nel); j += a.w) {
      int64_t kk = 0, xx = 0;
      bool partial;
      int mode = plan_relative(a.addr, a.addr + j, a.nel, a.dyn_aligned, &kk, &xx, &partial);
      if (a.dyn_full) mode = M_FULL;
      bool any = false;
      for (int t = 0; t < 128; t++) any |= a.addr[t * a.nel + j] >= 0;
      if (!any) continue;   /* padding for every thread */
      bank_count(a.addr + j, a.nel, a.w * a.bytes, &waves, &ideal);
      ninstr++;
      preg addr;
      int64_t imm = 0;
      if (mode == M_FULL) {
        preg off = full_offset(e, &a, T, lanev, j);
        addr = pe_reg(e, PR_R);
        pe_ins(e, "add.u32", 3, R(addr), R(base), R(off));
      } else {
        if (!a0) {
          preg off = full_offset(e, &a, T, lanev, 0);
          a0 = pe_reg(e, PR_R);
          pe_ins(e, "add.u32", 3, R(a0), R(base), R(off));
        }
        addr = a0;
        imm = kk;
        if (mode == M_XOR && xx) {
          preg *slot = xx % 16 == 0 ? &xreg[xx / 16] : NULL;
          if (!slot || !*slot) {
            addr = pe_reg(e, PR_R);
            pe_ins(e, "xor.b32", 3, R(addr), R(a0), I(xx));
            if (slot) *slot = addr;
          }
          addr = slot ? *slot : addr;
        }
      }
      preg pred = own;
      if (partial) {   /* strided padding: this chunk exists where lane*vec + c < numel */
        int64_t c = (j / a.f.vlen) * 128 * a.f.vlen + j % a.f.vlen;
        preg p = pe_reg(e, PR_P);
        pe_ins(e, "setp.lt.u32", 3, R(p), R(lanev), I(a.numel - c));
        if (pred) pe_ins(e, "and.pred", 3, R(p), R(p), R(pred));
        pred = p;
        if (!store) pe_zero(e, a.dtype, reg + (uint32_t)j, a.w);
      }
      smem_mem(e, &a, store, splat ? reg : reg + (uint32_t)j, splat, a.w, addr, imm, pred);
    }
    char ty[96];
    char how[32];
    if (matrix) snprintf(how, sizeof how, "stmatrix");
    else snprintf(how, sizeof how, "%d-byte accesses", a.w * a.bytes);
    pe_comment(e, "smem %s %s: %s, %lld instructions, bank conflicts: %s (%lld wavefronts for %lld)",
               store ? "store" : "load", ir_type_str(a.vt, ty, sizeof ty), how, (long long)ninstr,
               waves == ideal ? "none" : "yes", (long long)waves, (long long)ideal);
    mem_free(k->alloc, a.addr, sizeof(int64_t) * (size_t)(128 * a.nel));
  }
  if (!auto_bar) return;
  if (!store) e->smem_reads = true;
  else if (!commit_follows(e)) barrier(e);
}
