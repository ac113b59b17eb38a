/*
** pass_layout.c -- register layouts of arrays.
**
** Every array produced from others by an elementwise op, carried through a
** loop or merged by a branch must share one layout, so values are grouped
** into classes with union-find.  Each class gets the warpgroup-strided
** layout: the flattened array is split into vectors of `vec` consecutive
** elements dealt to the 128 threads round-robin (thread t holds vectors t,
** t+128, ...).  vec is chosen so that the narrowest dtype in the class moves
** 16 bytes per access, and shrunk for arrays too small to fill the
** warpgroup at that width.
*/
#include <string.h>

#include "pass.h"

static uint32_t find(uint32_t *parent, uint32_t v) {
  while (parent[v] != v) { parent[v] = parent[parent[v]]; v = parent[v]; }
  return v;
}

static void unite(uint32_t *parent, uint32_t a, uint32_t b) {
  a = find(parent, a); b = find(parent, b);
  if (a != b) parent[a < b ? b : a] = a < b ? a : b;
}

static bool is_array(const ir_kernel *k, uint32_t v) { return ir_vtype(k, v)->kind == MGPU_VALUE_ARRAY; }

static void link_all(const ir_kernel *k, uint32_t *parent, uint32_t res, const uint32_t *o, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (is_array(k, o[i])) unite(parent, res, o[i]);
}

mgpu_status pass_layout(const ir_kernel *k, kinfo *ki, diag *d) {
  uint32_t n = k->vals.n;
  uint32_t *parent = mem_realloc(k->alloc, NULL, 0, sizeof(uint32_t) * n);
  uint8_t *cvec = mem_calloc(k->alloc, n);
  int32_t *par = ir_parents(k, NULL);
  if (!parent || !cvec || !par) {
    mem_free(k->alloc, parent, sizeof(uint32_t) * n);
    mem_free(k->alloc, cvec, n);
    mem_free(k->alloc, par, sizeof(int32_t) * (k->ops.n ? k->ops.n : 1));
    return diag_set(d, ERR_NOMEM, "");
  }
  for (uint32_t v = 0; v < n; v++) parent[v] = v;

  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    const uint32_t *o = ir_opds(k, op);
    switch (ir_optab[op->code].cls) {
    case IRC_UNARY: case IRC_BINARY: case IRC_COMPARE: case IRC_SELECT: case IRC_CONVERT:
      if (is_array(k, op->res)) link_all(k, parent, op->res, o, op->nopd);
      break;
    case IRC_FOR: {
      /* init ~ carried arg ~ result; the yield is linked below */
      for (uint32_t j = 0; j < op->nres; j++)
        if (is_array(k, op->res + j)) { unite(parent, op->res + j, o[3 + j]); unite(parent, op->res + j, op->arg + 1 + j); }
      break;
    }
    case IRC_YIELD: {   /* yielded ~ results of the region op */
      const ir_op *r = &k->ops.v[par[i]];
      for (uint32_t m = 0; m < op->nopd && m < r->nres; m++)
        if (is_array(k, o[m])) unite(parent, r->res + m, o[m]);
      break;
    }
    default:
      break;
    }
  }

  /* vec per class: 16 bytes of the narrowest member dtype, at most what
     fills the warpgroup once */
  for (uint32_t v = 1; v < n; v++) {
    if (!is_array(k, v)) continue;
    const ir_type *t = ir_vtype(k, v);
    int bytes = t->dtype == MGPU_PRED ? 16 : dt_bytes(t->dtype);
    int want = 16 / bytes;
    int64_t numel = ir_numel(t);
    while (want > 1 && numel < 128 * want) want /= 2;
    uint32_t r = find(parent, v);
    if (want > cvec[r]) cvec[r] = (uint8_t)want;
  }
  for (uint32_t v = 1; v < n; v++) {
    if (!is_array(k, v)) continue;
    uint32_t r = find(parent, v);
    int vec = cvec[r];
    int64_t numel = ir_numel(ir_vtype(k, v));
    while (vec > 1 && numel < 128 * vec) vec /= 2;   /* pred-only classes */
    ki->vec[v] = (uint8_t)(vec ? vec : 1);
  }
  mem_free(k->alloc, parent, sizeof(uint32_t) * n);
  mem_free(k->alloc, cvec, n);
  mem_free(k->alloc, par, sizeof(int32_t) * (k->ops.n ? k->ops.n : 1));
  return MGPU_OK;
}
