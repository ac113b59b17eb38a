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
  uint32_t wv;          /* the value it was fixed on */
} cls;

/* Why two values share a class: an op tying them, or a loop carry (the
** loop's result j tied to its initial value, to the body's argument or to
** the value the body yields).  Kept to explain conflicts. */
enum { TIE_OP, TIE_ENTRY, TIE_ARG, TIE_YIELD, TIE_AFTER };
typedef struct tie {
  uint32_t a, b;
  int32_t loop;         /* the for/while op, or -1 */
  uint16_t carry;       /* its carried value (0-based) */
  uint8_t kind;         /* TIE_* */
} tie;

typedef struct ctx {
  const ir_kernel *k;
  kinfo *ki;
  diag *d;
  uint32_t *parent;     /* union-find over values */
  cls *c;               /* per class root */
  bool lane;            /* Lane semantics */
  jmp_buf *jmp;
  VEC(tie) ties;
  uint8_t *want;        /* defaults(): per class, the vector width wanted (freed by pass_layout, which errors skip to) */
  int32_t *rowop;       /* defaults(): per class, the reduction along its last axis, or -1 */
} ctx;

static uint32_t find(uint32_t *p, uint32_t v) {
  while (p[v] != v) { p[v] = p[p[v]]; v = p[v]; }
  return v;
}

static void unite(uint32_t *p, uint32_t a, uint32_t b) {
  a = find(p, a); b = find(p, b);
  if (a != b) p[a < b ? b : a] = a < b ? a : b;
}

/* unite, remembering why (loop < 0: an op). */
static void tie_values(ctx *x, uint32_t a, uint32_t b, int32_t loop, uint32_t carry, int kind) {
  unite(x->parent, a, b);
  if (!vec_reserve(x->k->alloc, &x->ties, 1)) diag_throw(x->d, ERR_NOMEM, "");
  x->ties.v[x->ties.n++] = (tie){ a, b, loop, (uint16_t)carry, (uint8_t)kind };
}

static bool is_array(const ir_kernel *k, uint32_t v) { return v && ir_vtype(k, v)->kind == MGPU_VALUE_ARRAY; }

void pass_layout_name(const ir_kernel *k, const lay_layout *l, char *buf, size_t n) {
  enum { MAXTEXT = 64 };
  const char *texts[MAXTEXT];
  int nt = 0;
  for (uint32_t i = 0; i < k->ops.n && nt < MAXTEXT; i++) {   /* the layouts the script wrote */
    const ir_op *op = &k->ops.v[i];
    int c = ir_optab[op->code].cls;
    if (op->text && (c == IRC_LAYOUTCAST || c == IRC_LOAD || c == IRC_MMLOAD || c == IRC_IOTA)) texts[nt++] = ir_str(k, op->text);
  }
  strbuf sb;
  mem_alloc a;
  mem_alloc_default(&a);
  sb_init(&sb, &a);
  lay_name(l, texts, nt, &sb);
  snprintf(buf, n, "%s", sb_str(&sb));
  sb_free(&sb);
}

static void layout_name(const ctx *x, const lay_layout *l, char *buf, size_t n) { pass_layout_name(x->k, l, buf, n); }

static const char *asked_at(const ir_kernel *k, int32_t w) { return w >= 0 ? ir_loc(k, &k->ops.v[w]) : "a default"; }

/* Which side of carry `carry` of `loop` (at its result) the path leaves
** through tie t (NULL: it ends at the result). */
static int side_of(const tie *t, int32_t loop, uint32_t carry) {
  if (!t || t->loop != loop || t->carry != carry) return TIE_AFTER;   /* the result itself, or ops after the loop */
  return t->kind;
}

/* Values a (fixed by op wa) and b (by op wb) share a class but got
** different layouts.  If the ties joining them pass through a loop's
** carried value from one side (entry, body, after the loop) to another,
** report that carry: its position, name, both layouts and both lines. */
static void carry_conflict(ctx *x, uint32_t a, const lay_layout *la_, int32_t wa, uint32_t b, const lay_layout *lb_, int32_t wb) {
  const ir_kernel *k = x->k;
  const mem_alloc *al = k->alloc;
  uint32_t n = k->vals.n, m = (uint32_t)x->ties.n;
  uint32_t *start = mem_calloc(al, sizeof(uint32_t) * (n + 1)), *adj = mem_calloc(al, sizeof(uint32_t) * (2 * m + 1));
  int32_t *via = mem_realloc(al, NULL, 0, sizeof(int32_t) * n);   /* tie that reached each value, -2 unseen */
  uint32_t *queue = mem_calloc(al, sizeof(uint32_t) * n), *fill = mem_calloc(al, sizeof(uint32_t) * (n + 1));
  const ir_op *found = NULL;
  char msg[1400];
  if (!start || !adj || !via || !queue || !fill) goto out;
  for (uint32_t i = 0; i < m; i++) { start[x->ties.v[i].a + 1]++; start[x->ties.v[i].b + 1]++; }
  for (uint32_t v = 0; v < n; v++) start[v + 1] += start[v];
  for (uint32_t i = 0; i < m; i++) {
    adj[start[x->ties.v[i].a] + fill[x->ties.v[i].a]++] = i;
    adj[start[x->ties.v[i].b] + fill[x->ties.v[i].b]++] = i;
  }
  for (uint32_t v = 0; v < n; v++) via[v] = -2;
  uint32_t head = 0, tail = 0;
  via[a] = -1;
  queue[tail++] = a;
  while (head < tail && via[b] == -2) {
    uint32_t v = queue[head++];
    for (uint32_t e = start[v]; e < start[v + 1]; e++) {
      const tie *t = &x->ties.v[adj[e]];
      uint32_t w = t->a == v ? t->b : t->a;
      if (via[w] != -2) continue;
      via[w] = (int32_t)adj[e];
      queue[tail++] = w;
    }
  }
  if (via[b] == -2) goto out;
  /* walk from b back to a: at each loop result on the way, the sides of the two ties around it */
  const tie *toward_b = NULL;
  for (uint32_t v = b;;) {
    const tie *toward_a = via[v] >= 0 ? &x->ties.v[via[v]] : NULL;
    const tie *around[2] = { toward_a, toward_b };
    for (int c = 0; c < 2; c++) {
      const tie *t = around[c];
      if (!t || t->loop < 0 || v != k->ops.v[t->loop].res + t->carry) continue;
      const ir_op *lp = &k->ops.v[t->loop];
      int sa = side_of(toward_a, t->loop, t->carry), sb = side_of(toward_b, t->loop, t->carry);
      if (sa == sb) break;
      static const char *const where[] = { "", "on entry", "in the loop body", "as the body's result", "after the loop" };
      const lay_layout *l1 = la_, *l2 = lb_;
      int32_t w1 = wa, w2 = wb;
      if (sb < sa) { int tmp = sa; sa = sb; sb = tmp; l1 = lb_; l2 = la_; w1 = wb; w2 = wa; }
      char n1[300], n2[300], name[80] = "";
      layout_name(x, l1, n1, sizeof n1);
      layout_name(x, l2, n2, sizeof n2);
      const char *names = ir_str(k, lp->text);   /* "acc,m": the body's parameter names */
      for (uint32_t j = 0; *names; j++) {
        const char *end = strchr(names, ',');
        size_t len = end ? (size_t)(end - names) : strlen(names);
        if (j == t->carry && len) snprintf(name, sizeof name, " (%.*s)", (int)(len < 60 ? len : 60), names);
        if (!end) break;
        names = end + 1;
      }
      snprintf(msg, sizeof msg,
               "%s: carried value %u%s has layout %s %s (asked for at %s) but %s %s (asked for at %s); "
               "a carried array keeps one layout: give both the same one with mgpu.layout_cast",
               lp->code == IR_while ? "while_loop" : "fori", t->carry + 1, name, n1, where[sa], asked_at(k, w1), n2,
               where[sb], asked_at(k, w2));
      found = lp;
      goto out;
    }
    if (!toward_a) break;
    toward_b = toward_a;
    v = toward_a->a == v ? toward_a->b : toward_a->a;
  }
out:
  mem_free(al, start, sizeof(uint32_t) * (n + 1));
  mem_free(al, adj, sizeof(uint32_t) * (2 * m + 1));
  mem_free(al, via, sizeof(int32_t) * n);
  mem_free(al, queue, sizeof(uint32_t) * n);
  mem_free(al, fill, sizeof(uint32_t) * (n + 1));
  if (found) diag_throw(x->d, ERR_VERIFY, ir_loc(k, found), msg);
}

/* Report that value v (a class, fixed on value av) cannot have both layouts. */
MGPU_NORET static void conflict(ctx *x, uint32_t v, uint32_t av, const lay_layout *a, int32_t wa, const lay_layout *b, int32_t wb) {
  const ir_kernel *k = x->k;
  char la[300], lb[300], msg[1200];
  carry_conflict(x, av, a, wa, v, b, wb);
  layout_name(x, a, la, sizeof la);
  layout_name(x, b, lb, sizeof lb);
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
  layout_name(x, l, la, sizeof la);
  snprintf(msg, sizeof msg, "layout inference failed: layout %s (asked for at %s) does not fit %%%u, a %s: %s", la,
           why >= 0 ? ir_loc(k, &k->ops.v[why]) : "a default", v, ir_type_str(ir_vtype(k, v), ts, sizeof ts), reason);
  diag_throw(x->d, ERR_VERIFY, ir_value_loc(k, v), msg);
}

/* Give class of v the layout l (asked for by op `why`); true if new. */
static bool assign(ctx *x, uint32_t v, const lay_layout *l, int32_t why) {
  cls *c = &x->c[find(x->parent, v)];
  if (c->known) {
    if (!lay_equal(&c->lay, l)) conflict(x, v, c->wv, &c->lay, c->why, l, why);
    return false;
  }
  if (l->kind == LAY_NONE) return false;
  c->known = true;
  c->lay = *l;
  c->why = why;
  c->wv = v;
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

/* A strided operand broadcast along new leading axes keeps its layout when
** every thread holds the same columns in each new row: the operand's size
** is a multiple of the warpgroup's 128 vectors. */
static bool strided_lead(const ctx *x, const ir_op *op, const lay_layout *src, const int *axes, int n) {
  const ir_type *st = ir_vtype(x->k, ir_opds(x->k, op)[0]);
  for (int i = 0; i < n; i++) if (axes[i] != i) return false;
  const int64_t *map = ir_ints(x->k, op) + 1 + ir_vtype(x->k, op->res)->rank;
  for (int i = 0; i < st->rank; i++) if (map[i] != n + i) return false;
  return src->kind == LAY_STRIDED && ir_numel(st) % (128 * src->vec) == 0;
}

/* A layout for broadcast op's result that reduces (over the broadcast
** axes) to src: one of lay_known_layouts, fitting the result; for a
** strided src broadcast along leading axes (strided_lead), the same one. */
static bool broadcast_layout(const ctx *x, const ir_op *op, const lay_layout *src, const int *axes, int n, lay_layout *out) {
  if (strided_lead(x, op, src, axes, n)) { *out = *src; return true; }
  const ir_type *t = ir_vtype(x->k, op->res);
  lay_known cand[LAY_NKNOWN];
  int nc = lay_known_layouts(cand);
  for (int i = 0; i < nc; i++) {
    lay_layout red;
    lay_fit f;
    lay_reduce(&cand[i].l, t->rank, axes, n, &red);
    if (lay_equal(&red, src) && lay_fit_shape(&cand[i].l, t->shape, t->rank, &f, NULL, 0)) { *out = cand[i].l; return true; }
  }
  return false;
}

/* The layout TMEM loads give array v when none is asked for: TCGEN05 for
** 32-bit values, a row per thread for packed ones (a 32-bit column each). */
static void tmem_default(const ir_kernel *k, uint32_t v, lay_layout *l) {
  int bytes = dt_bytes(ir_vtype(k, v)->dtype);
  if (bytes == 4) lay_tcgen05(l);
  else lay_tmem_native(l, 4 / bytes);
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
          layout_name(x, src, la, sizeof la);
          snprintf(msg, sizeof msg, "%s: the operand's layout %s cannot be reduced over these axes (a strided layout "
                   "reduces only completely); give the operand a tiled layout such as WGMMA with layout_cast",
                   ir_optab[op->code].name, la);
          diag_throw(x->d, ERR_VERIFY, ir_loc(k, op), msg);
        }
        changed |= assign(x, op->res, &red, (int32_t)i);
      }
    } else if (cls_ == IRC_BCASTDIM && is_array(k, o[0])) {
      const lay_layout *dst = known(x, op->res), *src = known(x, o[0]);
      int axes[IR_MAXRANK];
      int n = bcast_axes(k, op, axes);
      lay_layout l;
      if (dst && !x->lane) {   /* the operand: the result's layout reduced (none: checked at the end) */
        lay_reduce(dst, ir_vtype(k, op->res)->rank, axes, n, &l);
        if (l.kind != LAY_NONE) changed |= assign(x, o[0], &l, (int32_t)i);
      } else if (!dst && src && src->kind != LAY_SPLAT && broadcast_layout(x, op, src, axes, n, &l)) {
        changed |= assign(x, op->res, &l, (int32_t)i);   /* a layout that reduces to the operand's */
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
** the warpgroup), or, for an array reduced over some but not all of its
** axes, the rows layout (warps over rows, lanes x vectors over columns),
** which reduces over either of its last two. */
static void defaults(ctx *x) {
  const ir_kernel *k = x->k;
  uint32_t n = k->vals.n;
  uint8_t *want = x->want = mem_calloc(k->alloc, n);
  int32_t *rowop = x->rowop = mem_realloc(k->alloc, NULL, 0, sizeof(int32_t) * n);
  if (!want || !rowop) diag_throw(x->d, ERR_NOMEM, "");
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
  for (uint32_t i = 0; i < k->ops.n; i++) {   /* operands reduced over some of their axes (a strided layout cannot) */
    const ir_op *op = &k->ops.v[i];
    if (ir_optab[op->code].cls != IRC_REDUCE) continue;
    const ir_type *t = ir_vtype(k, ir_opds(k, op)[0]);
    if (t->rank >= 2 && (int)op->niat < t->rank) rowop[find(x->parent, ir_opds(k, op)[0])] = (int32_t)i;
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
        lay_rows_text(vec, text, sizeof text);
        ok = lay_parse(text, &l, NULL, 0) && lay_fit_shape(&l, t->shape, t->rank, &f, NULL, 0);
      }
      if (ok) { assign(x, v, &l, -1); while (propagate(x)) {} continue; }
    }
    int vec = want[r] ? want[r] : 1;
    lay_strided(&l, vec);
    assign(x, v, &l, -1);
    while (propagate(x)) {}   /* may throw: pass_layout frees want and rowop */
  }
}

/* Lane semantics: walk forward, each op's layout from its operands. */
static void forward(ctx *x) {
  const ir_kernel *k = x->k;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    lay_layout l;
    switch (ir_optab[op->code].cls) {
    case IRC_LOAD: case IRC_MMLOAD: case IRC_IOTA:
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
  ctx x = { k, ki, d, NULL, NULL, k->opts.lowering_semantics == 1, NULL, { 0 }, NULL, NULL };
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
        for (uint32_t j = 0; j < op->nopd; j++) if (is_array(k, o[j])) tie_values(&x, op->res, o[j], -1, 0, TIE_OP);
      break;
    case IRC_FOR:
      for (uint32_t j = 0; j < op->nres; j++)
        if (is_array(k, op->res + j)) {
          tie_values(&x, op->res + j, o[3 + j], (int32_t)i, j, TIE_ENTRY);
          tie_values(&x, op->res + j, op->arg + 1 + j, (int32_t)i, j, TIE_ARG);
        }
      break;
    case IRC_WHILE:
      for (uint32_t j = 0; j < op->nres; j++)
        if (is_array(k, op->res + j)) {
          tie_values(&x, op->res + j, o[j], (int32_t)i, j, TIE_ENTRY);
          tie_values(&x, op->res + j, op->arg + j, (int32_t)i, j, TIE_ARG);
        }
      break;
    case IRC_YIELD: {
      const ir_op *r = &k->ops.v[par[i]];
      if (r->code == IR_while && k->ops.v[i].code == IR_yield && i == (uint32_t)par[i] + r->body[0]) break;   /* the condition */
      bool loop = r->code == IR_for || r->code == IR_while;
      for (uint32_t m = 0; m < op->nopd && m < r->nres; m++)
        if (is_array(k, o[m])) tie_values(&x, r->res + m, o[m], loop ? par[i] : -1, m, loop ? TIE_YIELD : TIE_OP);
      break;
    }
    default:
      break;
    }
  }
  /* TMEM loads: the layout asked for, else TCGEN05 (32-bit) or rows per thread (packed values) */
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    lay_layout l;
    if (op->code == IR_tmem_load && !parse_text(&x, op, &l)) tmem_default(k, op->res, &l);
    if (op->code == IR_tmem_load) assign(&x, op->res, &l, (int32_t)i);
  }
  /* wgmma fragments: accumulator reads and writes, register A operands */
  lay_layout wg, wg8;
  lay_wgmma(&wg);
  lay_wgmma_8bit(&wg8);
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    const uint32_t *o = ir_opds(k, op);
    int c = ir_optab[op->code].cls;
    if (c == IRC_LOAD && ir_vtype(k, o[0])->space == MGPU_SPACE_REGS) assign(&x, op->res, &wg, (int32_t)i);
    if (c == IRC_STORE && ir_vtype(k, o[0])->space == MGPU_SPACE_REGS && is_array(k, o[1])) assign(&x, o[1], &wg, (int32_t)i);
    if (c == IRC_WGMMA && is_array(k, o[1])) assign(&x, o[1], dt_bytes(ir_vtype(k, o[1])->dtype) == 1 ? &wg8 : &wg, (int32_t)i);
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
    for (uint32_t i = 0; i < k->ops.n; i++) {   /* arrays stored to TMEM with no layout yet: the load default */
      const ir_op *op = &k->ops.v[i];
      lay_layout l;
      if (op->code != IR_tmem_store || known(&x, ir_opds(k, op)[1])) continue;
      tmem_default(k, ir_opds(k, op)[1], &l);
      assign(&x, ir_opds(k, op)[1], &l, (int32_t)i);
      while (propagate(&x)) {}
    }
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
  /* every broadcast's operand is its result's layout reduced (what lowering needs) */
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    if (ir_optab[op->code].cls != IRC_BCASTDIM || !is_array(k, ir_opds(k, op)[0])) continue;
    const lay_layout *src = known(&x, ir_opds(k, op)[0]), *dst = known(&x, op->res);
    int axes[IR_MAXRANK], nax = bcast_axes(k, op, axes);
    lay_layout red;
    lay_reduce(dst, ir_vtype(k, op->res)->rank, axes, nax, &red);
    if (src->kind == LAY_SPLAT || lay_equal(&red, src) || (lay_equal(src, dst) && strided_lead(&x, op, src, axes, nax))) continue;
    char ls[300], ld[300], msg[900];
    layout_name(&x, src, ls, sizeof ls);
    layout_name(&x, dst, ld, sizeof ld);
    snprintf(msg, sizeof msg, "broadcast_in_dim: the operand's layout %s does not broadcast to the result's layout %s "
             "(asked for at %s); give the operand the result's layout reduced over the new axes (as WGMMA:reduce(1) "
             "broadcasts to WGMMA), with layout_cast", ls, ld, asked_at(k, x.c[find(x.parent, op->res)].why));
    diag_throw(d, ERR_VERIFY, ir_loc(k, op), msg);
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
    if (c->lay.kind == LAY_SPLAT && (dc == IRC_LOAD || dc == IRC_MMLOAD || dc == IRC_IOTA || dc == IRC_REDUCE || dc == IRC_BCASTDIM))
      unfit(&x, v, &c->lay, c->why, "only arrays broadcast from a scalar can be splat (one value for every element); "
                                     "this one is computed element by element");
    ki->lay[v] = c->lay;
  }
done:
  vec_free(k->alloc, &x.ties);
  mem_free(k->alloc, x.want, n);
  mem_free(k->alloc, x.rowop, sizeof(int32_t) * n);
  mem_free(k->alloc, x.parent, sizeof(uint32_t) * n);
  mem_free(k->alloc, x.c, sizeof(cls) * n);
  mem_free(k->alloc, par, sizeof(int32_t) * (k->ops.n ? k->ops.n : 1));
  d->jmp = saved;
  return st;
}
