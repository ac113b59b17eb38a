/*
** ir_verify.c -- structural invariants of a kernel: regions nest and end in
** yield, every operand is defined before use in a visible scope, and yields
** match what their region op carries.  The builder already guarantees this
** for traced kernels; passes that rewrite the IR are checked with it too.
*/
#include <stdio.h>
#include <string.h>

#include "ir.h"

typedef struct vctx {
  const ir_kernel *k;
  diag *d;
  uint8_t *vis;     /* per value: currently visible */
} vctx;

static bool fail(vctx *c, const ir_op *op, const char *msg, uint32_t v) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, "IR verification failed at %s (op %s, value %%%u): %s",
           op ? ir_loc(c->k, op) : "?", op ? ir_optab[op->code].name : "?", v, msg);
  diag_set(c->d, ERR_VERIFY, "", tmp);
  return false;
}

static void set_vis(vctx *c, uint32_t first, uint32_t n, uint8_t on) {
  for (uint32_t i = 0; i < n; i++) c->vis[first + i] = on;
}

static bool region(vctx *c, uint32_t i, uint32_t end, int depth);

static bool check_op(vctx *c, uint32_t i, uint32_t end, int depth) {
  const ir_kernel *k = c->k;
  const ir_op *op = &k->ops.v[i];
  if (op->code >= IR__COUNT) return fail(c, NULL, "bad opcode", 0);
  if (ir_extent(k, i) > end - i) return fail(c, op, "region extends past its parent", 0);
  const uint32_t *o = ir_opds(k, op);
  for (uint32_t j = 0; j < op->nopd; j++) {
    if (o[j] == 0 || o[j] >= k->vals.n) return fail(c, op, "operand out of range", o[j]);
    if (!c->vis[o[j]]) return fail(c, op, "operand used outside the scope that defines it", o[j]);
  }
  if (op->code == IR_yield) {
    if (i + 1 != end || depth == 0) return fail(c, op, "yield must end a region", 0);
    return true;
  }
  if (ir_optab[op->code].flags & IRF_R) {
    uint32_t b0 = i + 1, b1 = b0 + op->body[0], b2 = b1 + op->body[1];
    if (op->body[0] == 0) return fail(c, op, "empty region", 0);
    set_vis(c, op->arg, op->narg, 1);
    if (!region(c, b0, b1, depth + 1)) return false;
    set_vis(c, op->arg, op->narg, 0);
    const ir_op *y0 = &k->ops.v[b1 - 1];
    if ((op->code == IR_for || op->code == IR_scoped || op->code == IR_single_warp) && y0->nopd != op->nres)
      return fail(c, op, "region yield count differs from its results", 0);
    if (op->code == IR_while) {
      if (y0->nopd != 1) return fail(c, op, "a while's condition must yield one value", 0);
      set_vis(c, op->arg, op->narg, 1);
      if (!region(c, b1, b2, depth + 1)) return false;
      set_vis(c, op->arg, op->narg, 0);
      if (k->ops.v[b2 - 1].nopd != op->nres) return fail(c, op, "a while's body yield count differs from its results", 0);
    }
    if (op->code == IR_if) {
      if (op->body[1]) {
        if (!region(c, b1, b2, depth + 1)) return false;
        if (k->ops.v[b2 - 1].nopd != op->nres || y0->nopd != op->nres)
          return fail(c, op, "branch yield count differs from its results", 0);
      } else if (op->nres) {
        return fail(c, op, "if with results needs an else region", 0);
      }
    }
  } else if (op->body[0] || op->body[1]) {
    return fail(c, op, "op without regions has a body", 0);
  }
  set_vis(c, op->res, op->nres, 1);
  return true;
}

static bool region(vctx *c, uint32_t i, uint32_t end, int depth) {
  uint32_t start = i;
  if (depth > 0 && (end <= i || c->k->ops.v[end - 1].code != IR_yield))
    return fail(c, i < c->k->ops.n ? &c->k->ops.v[i] : NULL, "region does not end with yield", 0);
  while (i < end) {
    if (!check_op(c, i, end, depth)) return false;
    i += ir_extent(c->k, i);
  }
  if (depth > 0)   /* values defined inside leave scope */
    for (uint32_t j = start; j < end; j += ir_extent(c->k, j)) set_vis(c, c->k->ops.v[j].res, c->k->ops.v[j].nres, 0);
  return true;
}

bool ir_verify(const ir_kernel *k, diag *d) {
  vctx c = { k, d, mem_calloc(k->alloc, k->vals.n) };
  if (!c.vis) { diag_set(d, ERR_NOMEM, ""); return false; }
  for (uint32_t i = 0; i < k->params.n; i++) c.vis[k->params.v[i].value] = 1;
  bool ok = region(&c, 0, k->ops.n, 0);
  mem_free(k->alloc, c.vis, k->vals.n);
  return ok;
}
