/*
** pass_layout.c -- register layouts of arrays.
**
** Warpgroup semantics (the default) infers layouts: arrays tied by
** elementwise ops, layout_cast, loop carries and branch results form one
** class, which must end with one layout.  Layouts are fixed by
** layout_cast, load layouts and iota layouts; a reduction's result has the
** reduced layout of its operand, and a broadcast's operand the reduced
** layout of its result.  These relations are solved to a fixpoint; classes
** still open then get a default (warps over rows for arrays reduced along
** their last axis, the warpgroup-strided layout otherwise), one class at
** a time in the order values are defined, with solving in between so that
** consumers inherit from producers.  Lane semantics only propagates forward: each op's layout
** follows from its operands as the op is reached.
**
** A conflict names the value, both layouts and the lines that asked for
** them.
*/
#include <stdio.h>
#include <string.h>

#include "pass.h"

typedef struct cls {
  bool known;
  lay_layout lay;
  int32_t why;          /* op that fixed it, or -1 (a default) */
} cls;

typedef struct ctx {
  const ir_kernel *k;
  kinfo *ki;
  diag *d;
  uint32_t *parent;     /* union-find over values */
  cls *c;               /* per class root */
  bool lane;            /* Lane semantics */
  jmp_buf *jmp;
} ctx;

static uint32_t find(uint32_t *p, uint32_t v) {
  while (p[v] != v) { p[v] = p[p[v]]; v = p[v]; }
  return v;
}

static void unite(uint32_t *p, uint32_t a, uint32_t b) {
  a = find(p, a); b = find(p, b);
  if (a != b) p[a < b ? b : a] = a < b ? a : b;
}

static bool is_array(const ir_kernel *k, uint32_t v) { return v && ir_vtype(k, v)->kind == MGPU_VALUE_ARRAY; }

static void layout_text(const lay_layout *l, char *buf, size_t n) {
  strbuf sb;
  mem_alloc a;
  mem_alloc_default(&a);
  sb_init(&sb, &a);
  lay_print(l, &sb);
  snprintf(buf, n, "%s", sb_str(&sb));
  sb_free(&sb);
}

/* Report that value v (a class) cannot have both layouts. */
MGPU_NORET static void conflict(ctx *x, uint32_t v, const lay_layout *a, int32_t wa, const lay_layout *b, int32_t wb) {
  const ir_kernel *k = x->k;
  char la[300], lb[300], msg[1200];
  layout_text(a, la, sizeof la);
  layout_text(b, lb, sizeof lb);
  snprintf(msg, sizeof msg,
           "layout inference failed: %%%u (defined at %s) must have layout %s (asked for at %s) and layout %s (asked for at %s)%s",
           v, *ir_value_loc(k, v) ? ir_value_loc(k, v) : "a parameter", la, wa >= 0 ? ir_loc(k, &k->ops.v[wa]) : "a default",
           lb, wb >= 0 ? ir_loc(k, &k->ops.v[wb]) : "a default",
           x->lane ? "; Lane semantics chooses layouts eagerly, add a layout_cast" : "; use layout_cast to choose one");
  diag_throw(x->d, ERR_VERIFY, wb >= 0 ? ir_loc(k, &k->ops.v[wb]) : "", msg);
}

MGPU_NORET static void unfit(ctx *x, uint32_t v, const lay_layout *l, int32_t why, const char *reason) {
  const ir_kernel *k = x->k;
  char la[300], ts[96], msg[900];
  layout_text(l, la, sizeof la);
  snprintf(msg, sizeof msg, "layout inference failed: layout %s (asked for at %s) does not fit %%%u, a %s: %s", la,
           why >= 0 ? ir_loc(k, &k->ops.v[why]) : "a default", v, ir_type_str(ir_vtype(k, v), ts, sizeof ts), reason);
  diag_throw(x->d, ERR_VERIFY, ir_value_loc(k, v), msg);
}

/* Give class of v the layout l (asked for by op `why`); true if new. */
static bool assign(ctx *x, uint32_t v, const lay_layout *l, int32_t why) {
  cls *c = &x->c[find(x->parent, v)];
  if (c->known) {
    if (!lay_equal(&c->lay, l)) conflict(x, v, &c->lay, c->why, l, why);
    return false;
  }
  if (l->kind == LAY_NONE) return false;
  c->known = true;
  c->lay = *l;
  c->why = why;
  return true;
}

static const lay_layout *known(ctx *x, uint32_t v) {
  cls *c = &x->c[find(x->parent, v)];
  return c->known ? &c->lay : NULL;
}

/* Axes removed by a broadcast_in_dim (result dims no operand dim maps to). */
static int bcast_axes(const ir_kernel *k, const ir_op *op, int *axes) {
  const int64_t *a = ir_ints(k, op);
  int R = (int)a[0], r = ir_vtype(k, ir_opds(k, op)[0])->rank, n = 0;
  for (int d = 0; d < R; d++) {
    bool mapped = false;
    for (int i = 0; i < r; i++) mapped |= a[1 + R + i] == d;
    if (!mapped) axes[n++] = d;
  }
  return n;
}

static bool parse_text(ctx *x, const ir_op *op, lay_layout *l) {
  if (!op->text) return false;
  char why[200];
  if (!lay_parse(ir_str(x->k, op->text), l, why, sizeof why))
    diag_throw(x->d, ERR_VERIFY, ir_loc(x->k, op), why);
  return true;
}

/* One round over the relations between classes; true if anything changed. */
static bool propagate(ctx *x) {
  const ir_kernel *k = x->k;
  bool changed = false;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    const uint32_t *o = ir_opds(k, op);
    int cls_ = ir_optab[op->code].cls;
    if (cls_ == IRC_REDUCE && is_array(k, op->res)) {
      const lay_layout *src = known(x, o[0]);
      if (src) {
        int axes[IR_MAXRANK];
        for (uint32_t a = 0; a < op->niat; a++) axes[a] = (int)ir_ints(k, op)[a];
        lay_layout red;
        lay_reduce(src, ir_vtype(k, o[0])->rank, axes, (int)op->niat, &red);
        if (red.kind == LAY_NONE) {
          char la[300], msg[700];
          layout_text(src, la, sizeof la);
          snprintf(msg, sizeof msg, "%s: the operand's layout %s cannot be reduced over these axes (a strided layout "
                   "reduces only completely); give the operand a tiled layout with layout_cast", ir_optab[op->code].name, la);
          diag_throw(x->d, ERR_VERIFY, ir_loc(k, op), msg);
        }
        changed |= assign(x, op->res, &red, (int32_t)i);
      }
    } else if (cls_ == IRC_BCASTDIM && is_array(k, o[0]) && !x->lane) {
      const lay_layout *dst = known(x, op->res);
      if (dst) {
        int axes[IR_MAXRANK];
        int n = bcast_axes(k, op, axes);
        lay_layout red;
        lay_reduce(dst, ir_vtype(k, op->res)->rank, axes, n, &red);
        changed |= assign(x, o[0], &red, (int32_t)i);
      }
    } else if (cls_ == IRC_RESHAPE) {
      const lay_layout *a = known(x, o[0]), *b = known(x, op->res);
      if ((a && a->kind == LAY_TILED) || (b && b->kind == LAY_TILED))
        diag_throw(x->d, ERR_VERIFY, ir_loc(k, op), "reshape: only arrays in the strided layout can be reshaped");
      if (a && !b && !x->lane) changed |= assign(x, op->res, a, (int32_t)i);
      else if (a && !b) changed |= assign(x, op->res, a, (int32_t)i);
      else if (b && !a && !x->lane) changed |= assign(x, o[0], b, (int32_t)i);
    }
  }
  return changed;
}

/* Default for an open class: the strided layout whose vectors move 16
** bytes of the narrowest member dtype (fewer for arrays too small to fill
** the warpgroup), or, for an array reduced along its last axis only, warps
** over rows and lanes x vectors over columns. */
static void defaults(ctx *x) {
  const ir_kernel *k = x->k;
  uint32_t n = k->vals.n;
  uint8_t *want = mem_calloc(k->alloc, n);
  int32_t *rowop = mem_realloc(k->alloc, NULL, 0, sizeof(int32_t) * n);
  if (!want || !rowop) { mem_free(k->alloc, want, n); mem_free(k->alloc, rowop, sizeof(int32_t) * n); diag_throw(x->d, ERR_NOMEM, ""); }
  for (uint32_t v = 0; v < n; v++) rowop[v] = -1;
  for (uint32_t v = 1; v < n; v++) {
    if (!is_array(k, v)) continue;
    const ir_type *t = ir_vtype(k, v);
    int bytes = t->dtype == MGPU_PRED ? 16 : dt_bytes(t->dtype);
    int w = 16 / bytes;
    while (w > 1 && ir_numel(t) < 128 * w) w /= 2;
    uint32_t r = find(x->parent, v);
    if (w > want[r]) want[r] = (uint8_t)w;
  }
  for (uint32_t i = 0; i < k->ops.n; i++) {   /* operands reduced along their last axis */
    const ir_op *op = &k->ops.v[i];
    if (ir_optab[op->code].cls != IRC_REDUCE) continue;
    const ir_type *t = ir_vtype(k, ir_opds(k, op)[0]);
    if (op->niat == 1 && ir_ints(k, op)[0] == t->rank - 1 && t->rank >= 2) rowop[find(x->parent, ir_opds(k, op)[0])] = (int32_t)i;
  }
  for (uint32_t v = 1; v < n; v++) {
    uint32_t r = find(x->parent, v);
    if (!is_array(k, v) || r != v || x->c[r].known) continue;
    const ir_type *t = ir_vtype(k, v);
    lay_layout l;
    if (rowop[r] >= 0 && !x->lane) {
      /* rows over the 4 warps; 32 lanes x vec columns */
      int vec = want[r] ? want[r] : 1;
      lay_fit f;
      bool ok = false;
      for (; vec >= 1 && !ok; vec /= 2) {
        char text[128];
        snprintf(text, sizeof text, "tiled((4,%d),(%d));warp(-3);lane(-2);vec(-1)", 32 * vec, vec);
        ok = lay_parse(text, &l, NULL, 0) && lay_fit_shape(&l, t->shape, t->rank, &f, NULL, 0);
      }
      if (ok) { assign(x, v, &l, -1); while (propagate(x)) {} continue; }
    }
    int vec = want[r] ? want[r] : 1;
    lay_strided(&l, vec);
    assign(x, v, &l, -1);
    while (propagate(x)) {}
  }
  mem_free(k->alloc, want, n);
  mem_free(k->alloc, rowop, sizeof(int32_t) * n);
}

/* Lane semantics: walk forward, each op's layout from its operands. */
static void forward(ctx *x) {
  const ir_kernel *k = x->k;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    lay_layout l;
    switch (ir_optab[op->code].cls) {
    case IRC_LOAD: case IRC_IOTA:
      if (!is_array(k, op->res) || known(x, op->res)) break;
      if (!parse_text(x, op, &l)) lay_strided(&l, 1);
      if (l.kind == LAY_STRIDED && !op->text) {   /* 16-byte vectors where the array allows */
        const ir_type *t = ir_vtype(k, op->res);
        int w = 16 / dt_bytes(t->dtype);
        while (w > 1 && ir_numel(t) < 128 * w) w /= 2;
        lay_strided(&l, w);
      }
      assign(x, op->res, &l, (int32_t)i);
      break;
    default:
      break;
    }
    propagate(x);
  }
}

mgpu_status pass_layout(const ir_kernel *k, kinfo *ki, diag *d) {
  uint32_t n = k->vals.n;
  ctx x = { k, ki, d, NULL, NULL, k->opts.lowering_semantics == 1, NULL };
  x.parent = mem_realloc(k->alloc, NULL, 0, sizeof(uint32_t) * n);
  x.c = mem_calloc(k->alloc, sizeof(cls) * n);
  int32_t *par = ir_parents(k, NULL);
  jmp_buf jb, *saved = d->jmp;
  d->jmp = &jb;
  volatile mgpu_status st = MGPU_OK;
  if (setjmp(jb)) { st = d->status; goto done; }
  if (!x.parent || !x.c || !par) diag_throw(d, ERR_NOMEM, "");
  for (uint32_t v = 0; v < n; v++) x.parent[v] = v;

  /* classes */
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    const uint32_t *o = ir_opds(k, op);
    switch (ir_optab[op->code].cls) {
    case IRC_UNARY: case IRC_BINARY: case IRC_COMPARE: case IRC_SELECT: case IRC_CONVERT: case IRC_LAYOUTCAST:
      if (is_array(k, op->res))
        for (uint32_t j = 0; j < op->nopd; j++) if (is_array(k, o[j])) unite(x.parent, op->res, o[j]);
      break;
    case IRC_FOR:
      for (uint32_t j = 0; j < op->nres; j++)
        if (is_array(k, op->res + j)) { unite(x.parent, op->res + j, o[3 + j]); unite(x.parent, op->res + j, op->arg + 1 + j); }
      break;
    case IRC_WHILE:
      for (uint32_t j = 0; j < op->nres; j++)
        if (is_array(k, op->res + j)) { unite(x.parent, op->res + j, o[j]); unite(x.parent, op->res + j, op->arg + j); }
      break;
    case IRC_YIELD: {
      const ir_op *r = &k->ops.v[par[i]];
      if (r->code == IR_while && k->ops.v[i].code == IR_yield && i == (uint32_t)par[i] + r->body[0]) break;   /* the condition */
      for (uint32_t m = 0; m < op->nopd && m < r->nres; m++)
        if (is_array(k, o[m])) unite(x.parent, r->res + m, o[m]);
      break;
    }
    default:
      break;
    }
  }
  /* wgmma fragments: accumulator reads and writes, register A operands */
  lay_layout wg;
  lay_wgmma(&wg);
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    const uint32_t *o = ir_opds(k, op);
    int c = ir_optab[op->code].cls;
    if (c == IRC_LOAD && ir_vtype(k, o[0])->space == MGPU_SPACE_REGS) assign(&x, op->res, &wg, (int32_t)i);
    if (c == IRC_STORE && ir_vtype(k, o[0])->space == MGPU_SPACE_REGS && is_array(k, o[1])) assign(&x, o[1], &wg, (int32_t)i);
    if (c == IRC_WGMMA && is_array(k, o[1])) assign(&x, o[1], &wg, (int32_t)i);
  }
  /* fixed layouts */
  if (!x.lane) {
    for (uint32_t i = 0; i < k->ops.n; i++) {
      const ir_op *op = &k->ops.v[i];
      int c = ir_optab[op->code].cls;
      lay_layout l;
      if ((c == IRC_LAYOUTCAST || c == IRC_LOAD || c == IRC_IOTA) && is_array(k, op->res) && parse_text(&x, op, &l))
        assign(&x, op->res, &l, (int32_t)i);
    }
    while (propagate(&x)) {}
    defaults(&x);
    while (propagate(&x)) {}
  } else {
    for (uint32_t i = 0; i < k->ops.n; i++) {   /* casts are checks in Lane semantics */
      const ir_op *op = &k->ops.v[i];
      lay_layout l;
      if (ir_optab[op->code].cls == IRC_LAYOUTCAST && parse_text(&x, op, &l)) assign(&x, op->res, &l, (int32_t)i);
    }
    forward(&x);
    defaults(&x);
  }
  /* every array has a layout that fits it */
  for (uint32_t v = 1; v < n; v++) {
    if (!is_array(k, v)) continue;
    cls *c = &x.c[find(x.parent, v)];
    mgpu_assert(c->known);
    lay_fit f;
    char why[200];
    if (!lay_fit_shape(&c->lay, ir_vtype(k, v)->shape, ir_vtype(k, v)->rank, &f, why, sizeof why)) unfit(&x, v, &c->lay, c->why, why);
    int32_t def = k->vals.v[v].def;
    int dc = def >= 0 ? ir_optab[k->ops.v[def].code].cls : -1;
    if (c->lay.kind == LAY_SPLAT && (dc == IRC_LOAD || dc == IRC_IOTA || dc == IRC_REDUCE || dc == IRC_BCASTDIM))
      unfit(&x, v, &c->lay, c->why, "only arrays broadcast from a scalar can be splat (one value for every element); "
                                     "this one is computed element by element");
    ki->lay[v] = c->lay;
  }
done:
  mem_free(k->alloc, x.parent, sizeof(uint32_t) * n);
  mem_free(k->alloc, x.c, sizeof(cls) * n);
  mem_free(k->alloc, par, sizeof(int32_t) * (k->ops.n ? k->ops.n : 1));
  d->jmp = saved;
  return st;
}
