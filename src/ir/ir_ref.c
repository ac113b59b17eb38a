/*
** ir_ref.c -- what is known of a ref at compile time: the allocation it
** views, and reshapes of SMEM refs.
**
** A reshape_ref result is a root of its own (an alias of its allocation):
** the allocation's elements, from its first, in row-major order under the
** shape (N / unit, shape[1], ..., shape[r-1]) with unit = shape[1] * ... *
** shape[r-1], laid out by the allocation's transforms; the reshaped ref is
** rows [start, start + shape[0]) of it along dim 0.  That is the same
** memory as the source view exactly when the source is contiguous over its
** leading dims and keeps its tiled trailing dims whole, which
** ir_reshape_check demands.
*/
#include <stdio.h>
#include <string.h>

#include "../layout/xform.h"
#include "ir.h"

/* The op that made ref v from another ref (a view, transpose, reshape or cluster_ref), or NULL
** at the start of its chain. */
static const ir_op *chain_op(const ir_kernel *k, uint32_t v) {
  int32_t d = k->vals.v[v].def;
  if (d < 0 || (k->vals.v[v].flags & IRV_ARG)) return NULL;
  const ir_op *op = &k->ops.v[d];
  bool link = op->code == IR_view || op->code == IR_transpose_ref || op->code == IR_reshape_ref || op->code == IR_cluster_ref;
  return link ? op : NULL;
}

uint32_t ir_ref_base(const ir_kernel *k, uint32_t v) {
  for (const ir_op *op; (op = chain_op(k, v)) != NULL;) v = ir_opds(k, op)[0];
  return v;
}

bool ir_ref_in_cluster(const ir_kernel *k, uint32_t v) {
  for (const ir_op *op; (op = chain_op(k, v)) != NULL; v = ir_opds(k, op)[0])
    if (op->code == IR_cluster_ref) return true;
  return false;
}

bool ir_uses_dsmem(const ir_kernel *k) {
  for (uint32_t i = 0; i < k->ops.n; i++)
    if (k->ops.v[i].code == IR_cluster_ref || k->ops.v[i].code == IR_async_store_smem) return true;
  return false;
}

bool ir_barrier_gets_stores(const ir_kernel *k, uint32_t root) {
  for (uint32_t i = 0; i < k->ops.n; i++)
    if (k->ops.v[i].code == IR_async_store_smem && ir_ref_base(k, ir_opds(k, &k->ops.v[i])[2]) == root) return true;
  return false;
}

uint32_t ir_ref_alloc(const ir_kernel *k, uint32_t v) {
  v = ir_ref_base(k, v);
  int32_t d = k->vals.v[v].def;
  return d >= 0 && !(k->vals.v[v].flags & IRV_ARG) && k->ops.v[d].code == IR_smem_alloc ? v : 0;
}

void ir_root_shape(const ir_kernel *k, uint32_t root, int64_t *shape, int *rank) {
  const ir_type *t = ir_vtype(k, root);
  *rank = t->rank;
  memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
  if (k->ops.v[k->vals.v[root].def].code != IR_reshape_ref) return;
  int64_t unit = 1;
  for (int i = 1; i < t->rank; i++) unit *= t->shape[i];
  shape[0] = ir_numel(ir_vtype(k, ir_ref_alloc(k, root))) / unit;
}

void ir_ref_walk(const ir_kernel *k, uint32_t v, ir_refview *rv) {
  int32_t d = k->vals.v[v].def;
  const ir_op *op = d >= 0 && !(k->vals.v[v].flags & IRV_ARG) ? &k->ops.v[d] : NULL;
  if (op && op->code == IR_cluster_ref) {   /* the same view, in another block */
    ir_ref_walk(k, ir_opds(k, op)[0], rv);
    return;
  }
  if (!op || (op->code != IR_view && op->code != IR_transpose_ref)) {   /* a root */
    const ir_type *t = ir_vtype(k, v);
    memset(rv, 0, sizeof *rv);
    rv->root = v;
    rv->rank = t->rank;
    for (int i = 0; i < t->rank; i++) rv->dim[i] = (int8_t)i;
    return;
  }
  ir_refview src;
  ir_ref_walk(k, ir_opds(k, op)[0], &src);
  *rv = src;
  const int64_t *at = ir_ints(k, op);
  if (op->code == IR_transpose_ref) {
    for (int j = 0; j < src.rank; j++) rv->dim[j] = src.dim[at[j]];
    return;
  }
  uint32_t nidx = op->niat / 3;
  rv->rank = 0;
  for (uint32_t i = 0; i < src.rank; i++) {
    int dd = src.dim[i];
    if (i < nidx && at[3 * i] != IR_IDX_ALL) {
      if (at[3 * i + 1] == IR_DYNAMIC) rv->dyn[dd] = true;
      else rv->off[dd] += at[3 * i + 1];
    }
    if (i >= nidx || at[3 * i] != IR_IDX_INT) rv->dim[rv->rank++] = (int8_t)dd;
  }
}

/* "{a, b, c}" */
static const char *shape_text(const int64_t *s, int rank, char *buf, size_t n) {
  size_t at = (size_t)snprintf(buf, n, "{");
  for (int i = 0; i < rank && at < n; i++) at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? ", " : "", (long long)s[i]);
  if (at < n) snprintf(buf + at, n - at, "}");
  return buf;
}

bool ir_reshape_check(const ir_kernel *k, uint32_t v, const int64_t *shape, int rank, char *why, size_t n) {
  const ir_type *t = ir_vtype(k, v);
  char a[160], b[160];
  if (t->space != MGPU_SPACE_SMEM) return snprintf(why, n, "only SMEM refs can be reshaped"), false;
  if (rank < 1) return snprintf(why, n, "the new shape needs at least one dim"), false;
  int64_t total = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 1) return snprintf(why, n, "dim %d of the new shape has size %lld", i, (long long)shape[i]), false;
    total *= shape[i];
  }
  shape_text(t->shape, t->rank, a, sizeof a);
  shape_text(shape, rank, b, sizeof b);
  if (total != ir_numel(t)) return snprintf(why, n, "%s does not have the %lld elements of %s", b, (long long)ir_numel(t), a), false;
  ir_refview rv;
  ir_ref_walk(k, v, &rv);
  uint32_t alloc = ir_ref_alloc(k, rv.root);
  if (!alloc) return snprintf(why, n, "only SMEM buffers (mgpu.SMEM) can be reshaped"), false;
  xf_chain c;
  bool ok = xf_parse(ir_str(k, k->ops.v[k->vals.v[alloc].def].text), &c, NULL, 0);
  mgpu_assert(ok);      /* the builder checked the transforms */
  int tiled = 0, tilings = 0;
  int64_t t0 = 1;     /* the tile's size along the first tiled dim */
  for (int i = 0; i < c.n; i++) {
    if (c.s[i].kind == XF_TRANSPOSE)
      return snprintf(why, n, "the allocation's transforms permute its tiles (transforms.transpose), so its rows are not contiguous"), false;
    if (c.s[i].kind == XF_TILING && !tilings++) tiled = c.s[i].n, t0 = c.s[i].v[0];
  }
  int64_t rshape[IR_MAXRANK];
  int rrank;
  ir_root_shape(k, rv.root, rshape, &rrank);
  /* every dim but the outermost, and every tiled dim, whole and in order, ending with the root's last */
  for (int i = 0; i < rv.rank; i++) {
    int d = rv.dim[i];
    if (i && d <= rv.dim[i - 1]) return snprintf(why, n, "the ref is transposed (transpose_ref); reshape it before transposing"), false;
    bool whole = !rv.off[d] && !rv.dyn[d] && t->shape[i] == rshape[d];
    bool tile_rows = tilings == 1 && i == 0 && d == rrank - tiled;   /* rows of the first tiled dim: checked below */
    if ((i || d >= rrank - tiled) && !whole && !tile_rows)
      return snprintf(why, n, "dim %d of the ref %s is a slice of %lld; only the outermost untiled dim of a reshaped view may be "
                      "sliced", i, a, (long long)rshape[d]), false;
    if (i && d != rv.dim[i - 1] + 1)
      return snprintf(why, n, "the ref drops dim %d of its buffer between its dims %d and %d, so its elements are not contiguous",
                      d - 1, i - 1, i), false;
  }
  if (rv.rank && rv.dim[rv.rank - 1] != rrank - 1)
    return snprintf(why, n, "the ref indexes the buffer's last dim, so its elements are not contiguous"), false;
  if (tiled > rv.rank) return snprintf(why, n, "the ref has %d dims but its buffer tiles %d", rv.rank, tiled), false;
  /* The tiles' rows along the first tiled dim follow the leading dims row-major, so with one
  ** tiling that dim may merge with or split into leading dims in whole tiles; the other tiled
  ** dims stay as they are. */
  int keep = tilings == 1 ? tiled - 1 : tiled;
  for (int j = 1; j <= keep; j++) {
    if (j > rank || shape[rank - j] != t->shape[t->rank - j]) {
      char tl[160];
      shape_text(t->shape + t->rank - keep, keep, tl, sizeof tl);
      return snprintf(why, n, "dim %d of the new shape %s changes the tiled dims %s of %s: %s", j > rank ? 0 : rank - j, b, tl, a,
                      tilings == 1 ? "only the first tiled dim may be merged or split, with the leading dims"
                                   : "with several tilings only the leading, untiled dims may be merged or split"), false;
    }
  }
  int first = rank - tiled;   /* the new shape's first tiled dim */
  if (tilings == 1 && tiled) {
    if (first < 0)
      return snprintf(why, n, "the new shape %s has %d dims but the buffer tiles %d", b, rank, tiled), false;
    if (shape[first] % t0)
      return snprintf(why, n, "dim %d of the new shape %s is %lld, not a multiple of the tiling's %lld (tiles stay whole)",
                      first, b, (long long)shape[first], (long long)t0), false;
  }
  int64_t unit = total / shape[0], stride = 1, start = 0;
  bool rows_tiled = tilings == 1 && tiled && first == 0;   /* dim 0's rows are tiled: starts in whole tiles */
  for (int d = rrank - 1; d >= 0; d--) {
    if (rv.dyn[d] && stride % (rows_tiled ? unit * t0 : unit))
      return snprintf(why, n, "a dynamic index along dim %d of the buffer moves by %lld elements, not by whole %s of %lld of "
                      "the new shape", d, (long long)stride, rows_tiled ? "tiles" : "rows",
                      (long long)(rows_tiled ? unit * t0 : unit)), false;
    start += rv.off[d] * stride;
    stride *= rshape[d];
  }
  if (start % unit)
    return snprintf(why, n, "the ref starts at element %lld of its buffer, not at a whole row of %lld of the new shape",
                    (long long)start, (long long)unit), false;
  if (rows_tiled && (start / unit) % t0)
    return snprintf(why, n, "the ref starts at row %lld of its buffer, inside a tile of %lld rows", (long long)(start / unit),
                    (long long)t0), false;
  return true;
}
