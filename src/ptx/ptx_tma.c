/*
** ptx_tma.c -- TMA copies between a GMEM view and an SMEM ref, and the
** tensor maps they need.
**
** The copy engine writes one box into SMEM row-major (dims innermost
** last), swizzled like the SMEM transforms.  So the GMEM array is described
** to it through the SMEM side's tiling: a tiled dim d of tile t becomes two
** dims, (N/t tiles of stride t*S) and (t rows of stride S), taken in the
** allocation's physical order (transposes included), and dims the view
** indexes with an integer become box-1 dims.  Box-1 dims then move
** outermost and neighbours that are really one dim merge, which keeps the
** rank at most 5.  A merged tiled dim, or one the copy spans with a single
** tile, may have any size: the engine zero-fills and clips past its end.  Before any PTX is written the plan is checked element by
** element: the address the engine will write each box element to must be
** the address the SMEM transforms give that element.
**
** One leader thread per warpgroup issues the copy.  A multicast copy is
** split along its outermost dim among the blocks of the group; each block
** loads its part into every block's SMEM, and every block's barrier expects
** the whole tile.  A copy partitioned over a cluster pair (Blackwell's
** 2-CTA MMAs) loads each block's half of the GMEM view into its own SMEM
** and completes on the pair's first block's barrier, which expects both.
*/
#include <stdio.h>
#include <string.h>

#include "ptx.h"

#define TMA_MAXDIM 12

typedef struct tdim {
  int64_t size, stride, box;     /* elements */
  preg reg;                      /* coordinate = reg + c (reg an s32 register or 0) */
  int64_t c;
  int64_t ragged;                /* tile counts of a dim that tiles do not divide: its size (else 0) */
  int gd;                        /* the GMEM dim, for messages */
  int64_t tile;
} tdim;

typedef struct tplan {
  const ir_op *op;
  const char *what;
  const pref *g, *s;             /* GMEM and SMEM refs */
  const ir_type *vt;
  int dtype, bytes;
  xf_map m;                      /* the SMEM allocation */
  int64_t N[IR_MAXRANK], S[IR_MAXRANK];   /* GMEM parameter shape and strides (elements) */
  int gr;                        /* its rank */
  tdim d[TMA_MAXDIM];            /* outermost first */
  int n;
} tplan;

/* s32 register holding r->doff[d] / div (exact), or 0 when there is none. */
static preg dyn_coord(pe *e, const pref *r, int d, int64_t div) {
  if (!r->doff[d]) return 0;
  preg x = pe_reg(e, PR_R);
  pe_ins(e, "cvt.u32.u64", 2, R(x), R(r->doff[d]));
  if (div > 1) pe_divrem(e, x, div, &x, NULL);
  return x;
}

static void add_dim(pe *e, tplan *p, int64_t size, int64_t stride, int64_t box, preg reg, int64_t c) {
  if (p->n == TMA_MAXDIM) pe_failf(e, "%s: too many dimensions for one TMA copy", p->what);
  p->d[p->n++] = (tdim){ size, stride, box, reg, c, 0, -1, 1 };
}

/* Where each physical dim of the SMEM allocation comes from: a root dim,
** whole or split by the tiling into tile counts and in-tile positions. */
enum { PART_WHOLE, PART_COUNT, PART_INNER };
typedef struct tsrc { int root, part; } tsrc;

/* The physical dims' sources, outermost first (returns their number), and
** the tile size of every root dim (1 = untiled). */
static int physical_dims(pe *e, const tplan *p, tsrc *src, int64_t *tile) {
  const xf_map *m = &p->m;
  int r = m->rank;
  for (int d = 0; d < r; d++) { src[d] = (tsrc){ d, PART_WHOLE }; tile[d] = 1; }
  bool tiled = false;
  for (int i = 0; i < m->c.n; i++) {
    const xf_step *s = &m->c.s[i];
    if (s->kind == XF_TRANSPOSE) {
      tsrc t[XF_MAXRANK];
      for (int j = 0; j < r; j++) t[j] = src[s->v[j]];
      memcpy(src, t, sizeof(tsrc) * (size_t)r);
    }
    if (s->kind != XF_TILING) continue;
    if (tiled) pe_failf(e, "%s: the copy engine writes one level of tiling, this SMEM ref has more", p->what);
    tiled = true;
    for (int j = 0; j < s->n; j++) {
      tsrc *w = &src[r - s->n + j];
      if (w->part != PART_WHOLE) pe_failf(e, "%s: the SMEM tiling splits a transposed dim; the copy engine cannot write that", p->what);
      tile[w->root] = s->v[j];
      src[r + j] = (tsrc){ w->root, PART_INNER };
      w->part = PART_COUNT;
    }
    r += s->n;
  }
  return r;
}

/* The copy as TMA dims in the SMEM allocation's physical order.  A tiled
** dim becomes (tile counts, in-tile positions); when the copy spans one
** tile along it, the in-tile dim alone takes the whole GMEM extent, so any
** size and start work there.  Tile counts of a dim that the tiles do not
** divide are marked ragged: simplify() must merge them with their in-tile
** dim for the copy engine to clip the last tile. */
static void build(pe *e, tplan *p) {
  const pref *g = p->g, *s = p->s;
  int r = p->vt->rank;
  int64_t tile[XF_MAXRANK];
  tsrc src[XF_MAXRANK];
  int pr = physical_dims(e, p, src, tile);
  bool in_view[IR_MAXRANK] = { false };
  int view_of[XF_MAXRANK];
  for (int d = 0; d < XF_MAXRANK; d++) view_of[d] = -1;
  for (int i = 0; i < r; i++) {
    in_view[g->dim[i]] = true;
    view_of[s->dim[i]] = i;
    int64_t B = p->vt->shape[i], N = p->N[g->dim[i]], t = tile[s->dim[i]];
    if (B > N) pe_failf(e, "%s: the tile (%lld) is larger than dimension %d of the GMEM array (%lld)", p->what,
                     (long long)B, g->dim[i], (long long)N);
    if (B % t) pe_failf(e, "%s: the copy spans %lld elements of dimension %d, not whole SMEM tiles of %lld", p->what,
                     (long long)B, g->dim[i], (long long)t);
  }
  for (int d = 0; d < p->gr; d++)   /* integer-indexed GMEM dims: box 1 */
    if (!in_view[d]) add_dim(e, p, p->N[d], p->S[d], 1, dyn_coord(e, g, d, 1), g->soff[d]);
  for (int q = 0; q < pr; q++) {
    int i = view_of[src[q].root];
    if (i < 0) continue;   /* an SMEM dim the ref indexes: part of its origin */
    int gd = g->dim[i];
    int64_t t = tile[src[q].root], B = p->vt->shape[i], N = p->N[gd];
    bool one_tile = B == t;
    if (src[q].part == PART_WHOLE || (src[q].part == PART_INNER && one_tile)) {
      add_dim(e, p, N, p->S[gd], B, dyn_coord(e, g, gd, 1), g->soff[gd]);
    } else if (src[q].part == PART_INNER) {
      add_dim(e, p, t, p->S[gd], t, 0, 0);
    } else if (!one_tile) {
      if (g->soff[gd] % t || (g->doff[gd] && pass_gcd(g->ddiv[gd], t) != t))
        pe_failf(e, "%s: the GMEM start along dimension %d must be a multiple of the SMEM tiling (%lld)", p->what, gd, (long long)t);
      add_dim(e, p, (N + t - 1) / t, t * p->S[gd], B / t, dyn_coord(e, g, gd, t), g->soff[gd] / t);
      tdim *d = &p->d[p->n - 1];
      d->ragged = N % t ? N : 0;
      d->gd = gd;
      d->tile = t;
    }
  }
}

/* Box-1 dims outermost (they add no extent), then merge neighbours that
** step through memory as one dim. */
static void simplify(pe *e, tplan *p) {
  tdim out[TMA_MAXDIM];
  int n = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < p->n; i++)
      if ((p->d[i].box == 1) == (pass == 0)) out[n++] = p->d[i];
  p->n = 0;
  for (int i = 0; i < n; i++) {
    tdim *o = p->n ? &p->d[p->n - 1] : NULL;
    const tdim *in = &out[i];
    bool innermost = i == n - 1;   /* kept apart: the swizzle and the 16-byte rule apply to it alone */
    if (o && !innermost && o->box > 1 && o->box * in->box <= 256 && o->stride == in->size * in->stride &&
        in->box == in->size && !in->reg && in->c == 0 &&
        (!o->ragged || in->size == o->tile)) {
      if (o->reg) {
        preg x = pe_reg(e, PR_R);
        pe_ins(e, "mul.lo.s32", 3, R(x), R(o->reg), I(in->size));
        o->reg = x;
      }
      o->c *= in->size;
      o->size = o->ragged ? o->ragged : o->size * in->size;
      o->ragged = 0;
      o->stride = in->stride;
      o->box *= in->box;
      continue;
    }
    p->d[p->n++] = *in;
  }
  for (int i = 0; i < p->n; i++)
    if (p->d[i].ragged)
      pe_failf(e, "%s: dimension %d of the GMEM array has size %lld, not a multiple of the SMEM tiling (%lld), and the "
            "copy's tiles along it are not adjacent in SMEM or span more than 256 elements together (pad the array, use tiles that divide it, or order the SMEM "
            "tiles so that this dim's are outermost with transforms.transpose)", p->what, p->d[i].gd,
            (long long)p->d[i].ragged, (long long)p->d[i].tile);
}

static void check_limits(pe *e, const tplan *p, int swizzle) {
  if (p->n > 5) pe_failf(e, "%s: this copy needs %d TMA dimensions, at most 5 exist (fewer tiled or indexed dims help)", p->what, p->n);
  const tdim *in = &p->d[p->n - 1];
  if (in->stride != 1)
    pe_failf(e, "%s: the SMEM ref's minor dimension must be the GMEM array's contiguous (last) dimension", p->what);
  if ((in->box * p->bytes) % 16)
    pe_failf(e, "%s: the copy's rows are %lld bytes; the copy engine needs multiples of 16", p->what, (long long)(in->box * p->bytes));
  if (swizzle && in->box * p->bytes != swizzle)
    pe_failf(e, "%s: with a %d-byte swizzle the minor tile must be %d bytes, it is %lld", p->what, swizzle, swizzle,
          (long long)(in->box * p->bytes));
  for (int i = 0; i < p->n; i++) {
    if (p->d[i].box > 256)
      pe_failf(e, "%s: a TMA box is at most 256 elements along each dimension; this one needs %lld (tile the SMEM ref or "
            "split the copy)", p->what, (long long)p->d[i].box);
    int64_t sb = p->d[i].stride * p->bytes;
    if (i < p->n - 1 && (sb % 16 || sb >= (INT64_C(1) << 40)))
      pe_failf(e, "%s: GMEM strides must be multiples of 16 bytes for the copy engine; one is %lld bytes (make the "
            "array's row length a multiple of %d elements)", p->what, (long long)sb, 16 / p->bytes > 0 ? 16 / p->bytes : 1);
  }
}

/* Every box element lands where the SMEM transforms put it. */
static void verify(pe *e, const tplan *p, int64_t origin) {
  const xf_map *m = &p->m;
  int64_t total = 1;
  for (int i = 0; i < p->n; i++) total *= p->d[i].box;
  if (total != ir_numel(p->vt)) pe_failf(e, "%s: internal: the TMA box does not cover the tile", p->what);
  for (int64_t b = 0; b < total; b++) {
    int64_t rem = b, goff = 0;
    for (int i = p->n - 1; i >= 0; i--) { goff += (rem % p->d[i].box) * p->d[i].stride; rem /= p->d[i].box; }
    int64_t x[IR_MAXRANK], ridx[XF_MAXRANK];
    for (int d = p->gr - 1; d >= 0; d--) { x[d] = goff % p->N[d]; goff /= p->N[d]; }
    for (int d = 0; d < m->rank; d++) ridx[d] = p->s->soff[d];
    bool ok = true;
    for (int i = 0; i < p->vt->rank; i++) ridx[p->s->dim[i]] += x[p->g->dim[i]];
    for (int d = 0; d < m->rank; d++) ok &= ridx[d] < m->shape[d];
    if (!ok || xf_offset(m, ridx) != xf_swizzle(m->swizzle, origin + b * p->bytes))
      pe_failf(e, "%s: the SMEM ref's layout is not what one TMA box writes (element %lld of the box would land elsewhere); "
            "copy whole tiles into an SMEM ref tiled like the GMEM view", p->what, (long long)b);
  }
}

static int tmap_param(pe *e, const tplan *p, uint32_t param, int swizzle, int ndev) {
  ptx_tmap t;
  memset(&t, 0, sizeof t);
  t.param = param;
  t.ndev = ndev;
  t.dtype = p->dtype;
  t.rank = p->n;
  t.swizzle = swizzle;
  for (int i = 0; i < p->n; i++) {   /* innermost first */
    const tdim *d = &p->d[p->n - 1 - i];
    t.dims[i] = (uint64_t)d->size;
    t.strides[i] = (uint64_t)(d->stride * p->bytes);
    t.box[i] = (uint32_t)d->box;
  }
  for (size_t i = 0; i < e->tmaps->n; i++)
    if (memcmp(&e->tmaps->v[i], &t, sizeof t) == 0) return (int)i;
  if (!vec_reserve(e->k->alloc, e->tmaps, 1)) diag_throw(e->d, ERR_NOMEM, "");
  e->tmaps->v[e->tmaps->n++] = t;
  return (int)e->tmaps->n - 1;
}

/* Into register a, the generic address of tensor map t (a kernel parameter after the kernel's own). */
static void tmap_addr(pe *e, preg a, size_t t) {
  char pname[160];
  snprintf(pname, sizeof pname, "%s_param_%u", e->k->name, e->k->params.n + (uint32_t)t);
  pe_ins(e, "mov.b64", 2, R(a), S(pname));
  pe_ins(e, "cvta.param.u64", 2, R(a), R(a));
}

void ptx_tma_prefetch(pe *e, preg tid, strbuf *entry) {
  if (!e->tmaps->n) return;
  /* the registers first: pe_reg may fail (longjmp), which must not find the buffers swapped */
  preg first = pe_reg(e, PR_P), a0 = pe_regs(e, PR_RD, (uint32_t)e->tmaps->n);
  strbuf body = e->body;   /* the instructions go to the entry, through pe_ins (which cannot fail) */
  e->body = *entry;
  pe_ins(e, "setp.eq.u32", 3, R(first), R(tid), I(0));
  for (size_t i = 0; i < e->tmaps->n; i++) {
    preg a = a0 + (preg)i;
    tmap_addr(e, a, i);
    int n = e->tmaps->v[i].ndev ? e->tmaps->v[i].ndev : 1;   /* remote views: one map per device */
    for (int j = 0; j < n; j++) pe_pins(e, first, false, "prefetch.tensormap", 1, ADDR(a, 128 * j));
  }
  *entry = e->body;
  e->body = body;
}

/* s32 coordinate registers, innermost first, as the instruction lists them. */
static po coords(pe *e, const tplan *p) {
  preg c[5];
  for (int i = 0; i < p->n; i++) {
    const tdim *d = &p->d[p->n - 1 - i];
    c[i] = pe_reg(e, PR_R);
    if (d->reg) pe_ins(e, "add.s32", 3, R(c[i]), R(d->reg), I(d->c));
    else pe_ins(e, "mov.b32", 2, R(c[i]), I(d->c));
  }
  return RV(c, p->n);
}

/* Multicast: the group's size, this block's place in it (u32 register), and
** the u16 mask of the group's blocks. */
static int multicast(pe *e, int64_t mask, preg *place, preg *ctamask) {
  const ir_kernel *k = e->k;
  int n = 1;
  int64_t stride = 1, pattern = 1;
  preg q = pe_reg(e, PR_R), base = pe_reg(e, PR_R);
  pe_ins(e, "mov.u32", 2, R(q), I(0));
  pe_ins(e, "mov.u32", 2, R(base), R(e->crank));
  for (int a = 0; a < k->opts.cluster_rank; a++) {
    if (mask >> a & 1) {
      int64_t grown = 0;
      for (int j = 0; j < k->opts.cluster[a]; j++) grown |= pattern << (j * stride);
      pattern = grown;
      pe_ins(e, "mad.lo.u32", 4, R(q), R(e->cid[a]), I(n), R(q));
      preg t = pe_reg(e, PR_R);
      pe_ins(e, "mul.lo.u32", 3, R(t), R(e->cid[a]), I(stride));
      pe_ins(e, "sub.u32", 3, R(base), R(base), R(t));
      n *= k->opts.cluster[a];
    }
    stride *= k->opts.cluster[a];
  }
  preg m32 = pe_reg(e, PR_R);
  *ctamask = pe_reg(e, PR_H);
  pe_ins(e, "shl.b32", 3, R(m32), I(pattern), R(base));
  pe_ins(e, "cvt.u16.u32", 2, R(*ctamask), R(m32));
  *place = q;
  return n;
}

/* A load with oob = "undefined" or "promise_in_bounds" whose GMEM view is
** one contiguous range (its dims the parameter's last ones, all whole but
** the outermost) and whose SMEM ref is a contiguous part of an untransformed
** buffer, 16-byte aligned at both ends, goes by the plain bulk copy
** (cp.async.bulk: no tensor map).  With "undefined" the byte count stops at
** the end of the parameter along the outermost dim (in whole 16 bytes; what
** lies past it is left as it was), as Pallas' non-tensor path clamps it;
** leading dims the view indexes must then be static and in range.  Returns
** false, having emitted nothing, when the copy does not qualify. */
static bool bulk_load(pe *e, const tplan *p, int oob, preg pred) {
  const pref *g = p->g, *s = p->s;
  const ir_type *vt = p->vt;
  int vr = vt->rank, lead = p->gr - vr;
  if (g->base || p->m.c.n || lead < 0 || s->rank != vr) return false;
  int64_t goff = 0;
  for (int i = 0; i < vr; i++) {
    if (g->dim[i] != lead + i || s->dim[i] != p->m.rank - vr + i) return false;
    int d = lead + i;
    if (i && (vt->shape[i] != p->N[d] || g->soff[d] || g->doff[d])) return false;
    if (i && (vt->shape[i] != p->m.shape[s->dim[i]] || s->soff[s->dim[i]] || s->doff[s->dim[i]])) return false;
  }
  for (int d = 0; d < p->gr; d++) {
    goff += g->soff[d] * p->S[d];
    if (g->doff[d] && (g->ddiv[d] * p->S[d] * p->bytes) % 16) return false;
    if (d < lead && oob == 1 && (g->doff[d] || g->soff[d] >= p->N[d])) return false;
  }
  int64_t row = vt->rank > 1 ? ir_numel(vt) / vt->shape[0] : 1, bytes = ir_numel(vt) * p->bytes;
  if ((goff * p->bytes) % 16 || bytes % 16 || bytes >= (INT64_C(1) << 32)) return false;
  int64_t sidx[XF_MAXRANK];
  for (int d = 0; d < p->m.rank; d++) sidx[d] = s->soff[d];
  int64_t origin = xf_linear(&p->m, sidx);
  if (origin % 16) return false;
  int64_t steps[XF_MAXRANK];
  if (!pe_smem_dyn_steps(e, s, &p->m, steps)) return false;
  for (int d = 0; d < p->m.rank; d++) if (s->doff[d] && (steps[d] * (s->ddiv[d] ? s->ddiv[d] : 1)) % 16) return false;

  preg saddr = pe_smem_origin(e, s, &p->m, 16, p->what);
  if (origin) pe_ins(e, "add.u32", 3, R(saddr), R(saddr), I(origin));
  preg src = pe_reg(e, PR_RD);
  pe_ins(e, "add.s64", 3, R(src), R(pe_ref_base(e, g)), I(goff * p->bytes));
  for (int d = 0; d < p->gr; d++)
    if (g->doff[d]) pe_ins(e, "mad.lo.s64", 4, R(src), R(g->doff[d]), I(p->S[d] * p->bytes), R(src));
  po size = I(bytes);
  if (oob == 1) {   /* rows of the outermost dim left in the parameter, clamped to [0, box], in whole 16 bytes */
    int d0 = lead;
    preg left = pe_reg(e, PR_RD), n = pe_reg(e, PR_R);
    pe_ins(e, "mov.s64", 2, R(left), I(p->N[d0] - g->soff[d0]));
    if (g->doff[d0]) pe_ins(e, "sub.s64", 3, R(left), R(left), R(g->doff[d0]));
    pe_ins(e, "max.s64", 3, R(left), R(left), I(0));
    pe_ins(e, "min.s64", 3, R(left), R(left), I(vt->shape[0]));
    pe_ins(e, "mul.lo.s64", 3, R(left), R(left), I(row * p->bytes));
    pe_ins(e, "cvt.u32.u64", 2, R(n), R(left));
    pe_ins(e, "and.b32", 3, R(n), R(n), I(~15LL & 0xffffffffLL));
    size = R(n);
  }
  preg bar = pe_barrier_addr(e, ir_opds(e->k, p->op)[2]);
  pe_pins(e, pred, false, "mbarrier.arrive.expect_tx.shared::cta.b64", 3, S("_"), ADDR(bar, 0), size);
  pe_pins(e, pred, false, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", 4, ADDR(saddr, 0),
          ADDR(src, 0), size, ADDR(bar, 0));
  return true;
}

void ptx_tma(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  const uint32_t *o = ir_opds(k, op);
  const int64_t *at = ir_ints(k, op);
  bool load = op->code == IR_tma_load;
  tplan p;
  memset(&p, 0, sizeof p);
  p.op = op;
  p.what = load ? "copy_gmem_to_smem" : "copy_smem_to_gmem";
  uint32_t gv = o[load ? 0 : 1], sv = o[load ? 1 : 0];
  p.g = &e->refs[gv];
  p.s = &e->refs[sv];
  p.vt = ir_vtype(k, sv);
  p.dtype = p.vt->dtype;
  p.bytes = dt_bytes(p.dtype);
  if (p.vt->rank == 0) pe_failf(e, "%s: copy at least one dimension (a rank-0 ref is one element)", p.what);
  pe_smem_map(e, p.s->root, &p.m);
  const ir_type *pt = ir_vtype(k, k->params.v[p.g->root].value);
  p.gr = pt->rank;
  int64_t st = 1;
  for (int d = pt->rank - 1; d >= 0; d--) { p.N[d] = pt->shape[d]; p.S[d] = st; st *= pt->shape[d]; }
  int oob = load && op->niat > 2 ? (int)at[2] : 0, pdim = load && op->niat > 3 ? (int)at[3] - 1 : -1;
  pref half;
  if (pdim >= 0) {   /* partitioned over the cluster pair: the pair's second block loads the second half */
    half = *p.g;
    int gd = half.dim[pdim];
    int64_t n = p.vt->shape[pdim];
    preg off = pe_reg(e, PR_RD);
    pe_ins(e, "cvt.u64.u32", 2, R(off), R(e->cid[0]));
    pe_ins(e, "mul.lo.s64", 3, R(off), R(off), I(n));
    if (half.doff[gd]) pe_ins(e, "add.s64", 3, R(off), R(off), R(half.doff[gd]));
    half.ddiv[gd] = half.doff[gd] ? pass_gcd(half.ddiv[gd], n) : n;
    half.doff[gd] = off;
    p.g = &half;
  }
  if (oob && !at[0] && pdim < 0) {   /* undefined or promise_in_bounds, no multicast: the plain bulk copy where it fits */
    preg pred = pe_leader(e);
    if (at[1]) pe_ins(e, "and.pred", 3, R(pred), R(pred), R(e->vreg[o[3]]));
    if (bulk_load(e, &p, oob, pred)) return;
  }
  build(e, &p);
  simplify(e, &p);
  int swizzle = p.m.swizzle;
  check_limits(e, &p, swizzle);

  /* where the box goes in SMEM */
  int64_t sidx[XF_MAXRANK];
  for (int d = 0; d < p.m.rank; d++) sidx[d] = p.s->soff[d];
  int64_t origin = xf_linear(&p.m, sidx), align = swizzle ? 1024 : 128;
  if (origin % align)
    pe_failf(e, "%s: the SMEM ref starts %lld bytes into its buffer; the copy engine needs a multiple of %lld there",
          p.what, (long long)origin, (long long)align);
  verify(e, &p, origin);
  preg saddr = pe_smem_origin(e, p.s, &p.m, align, p.what);
  int64_t bytes = ir_numel(p.vt) * p.bytes;

  preg pred = pe_leader(e);
  bool has_pred = at[load ? 1 : 2] != 0;
  if (has_pred) pe_ins(e, "and.pred", 3, R(pred), R(pred), R(e->vreg[o[load ? 3 : 2]]));
  preg place = 0, ctamask = 0;
  int group = 1;
  if (load && at[0]) {
    group = multicast(e, at[0], &place, &ctamask);
    int split = -1;
    for (int i = 0; i < p.n && split < 0; i++) if (p.d[i].box > 1) split = i;
    /* the innermost dim splits only when it is the tile's one dim (each part a contiguous run) */
    bool rows = split < p.n - 1 || (split == p.n - 1 && !swizzle);
    if (split < 0 || !rows || p.d[split].box % group)
      pe_failf(e, "%s: the tile's outermost dimension (box %lld) does not divide among the %d blocks multicasting it "
            "(each block loads a part of it; its rows must stay whole)", p.what, split < 0 ? 1LL : (long long)p.d[split].box, group);
    int64_t part = bytes / group, palign = swizzle ? 1024 : 128;
    if (part % palign)
      pe_failf(e, "%s: each multicast part (%lld bytes) must be a multiple of %lld bytes%s", p.what, (long long)part,
            (long long)palign, swizzle ? " with a swizzle" : "");
    p.d[split].box /= group;
    check_limits(e, &p, swizzle);
    preg off = pe_reg(e, PR_R), c = pe_reg(e, PR_R);
    pe_ins(e, "mad.lo.u32", 4, R(saddr), R(place), I(part), R(saddr));
    pe_ins(e, "mul.lo.u32", 3, R(off), R(place), I(p.d[split].box));
    if (p.d[split].reg) pe_ins(e, "add.s32", 3, R(c), R(p.d[split].reg), R(off));
    else pe_ins(e, "mov.b32", 2, R(c), R(off));
    p.d[split].reg = c;
  }
  int ndev = p.g->base ? p.g->ndev : 0;    /* remote views: the map of their device, among one per device */
  int t = tmap_param(e, &p, p.g->root, swizzle, ndev);
  char opc[160];
  preg tm = pe_reg(e, PR_RD);
  tmap_addr(e, tm, (size_t)t);
  if (ndev) {
    preg d64 = pe_reg(e, PR_RD);
    pe_ins(e, "cvt.s64.s32", 2, R(d64), R(p.g->dev));
    pe_ins(e, "mad.lo.s64", 4, R(tm), R(d64), I(128), R(tm));
  }
  po tmc = coords(e, &p);   /* "[tmap, {c...}]" */
  {
    po tn = R(tm);
    size_t lt = strlen(tn.s), lc = strlen(tmc.s);
    if (lt + lc + 5 > sizeof tmc.s) pe_fail(e, "internal: operand text too long");
    memmove(tmc.s + lt + 3, tmc.s, lc + 1);
    tmc.s[0] = '[';
    memcpy(tmc.s + 1, tn.s, lt);
    tmc.s[lt + 1] = ',';
    tmc.s[lt + 2] = ' ';
    strcat(tmc.s, "]");
  }
  if (pdim >= 0) {   /* the pair's first block's barrier counts both halves */
    preg bar = pe_barrier_addr(e, o[2]), first = pe_reg(e, PR_P), rank = pe_reg(e, PR_R), lb = pe_reg(e, PR_R);
    pe_ins(e, "setp.eq.u32", 3, R(first), R(e->cid[0]), I(0));
    pe_ins(e, "and.pred", 3, R(first), R(first), R(pred));
    pe_pins(e, first, false, "mbarrier.arrive.expect_tx.shared::cta.b64", 3, S("_"), ADDR(bar, 0), I(2 * bytes));
    pe_ins(e, "and.b32", 3, R(rank), R(e->crank), I(~1));
    pe_ins(e, "mapa.shared::cluster.u32", 3, R(lb), R(bar), R(rank));
    snprintf(opc, sizeof opc, "cp.async.bulk.tensor.%dd.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes", p.n);
    pe_pins(e, pred, false, opc, 3, ADDR(saddr, origin), tmc, ADDR(lb, 0));
    return;
  }
  if (load) {
    preg bar = pe_barrier_addr(e, o[2]);
    pe_pins(e, pred, false, "mbarrier.arrive.expect_tx.shared::cta.b64", 3, S("_"), ADDR(bar, 0), I(bytes));
    snprintf(opc, sizeof opc, "cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes%s", p.n,
             group > 1 ? ".multicast::cluster" : "");
    if (group > 1) pe_pins(e, pred, false, opc, 4, ADDR(saddr, origin), tmc, ADDR(bar, 0), R(ctamask));
    else pe_pins(e, pred, false, opc, 3, ADDR(saddr, origin), tmc, ADDR(bar, 0));
    return;
  }
  int red = (int)at[1];
  if (red) snprintf(opc, sizeof opc, "cp.reduce.async.bulk.tensor.%dd.global.shared::cta.%s.tile.bulk_group", p.n, ir_red_names[red]);
  else snprintf(opc, sizeof opc, "cp.async.bulk.tensor.%dd.global.shared::cta.bulk_group", p.n);
  pe_pins(e, pred, false, opc, 2, tmc, ADDR(saddr, origin));
  if (at[0]) pe_pins(e, pred, false, "cp.async.bulk.commit_group", 0);
}
