/*
** ir_build.c -- tracing: append ops, type-check them, track regions and
** scopes.  Every user mistake made while tracing is reported here, with the
** Lua location of the op, before anything is compiled.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../layout/lay.h"
#include "../layout/xform.h"
#include "ir.h"

#define LOC(b) ir_str((b)->k, (b)->loc)
#define TS(t, buf) ir_type_str((t), (buf), sizeof(buf))

/* A tracing error with a free-form message, at the current location. */
MGPU_PRINTF(2, 3) static mgpu_status failf(ir_builder *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  return diag_set(b->d, ERR_TRACE, LOC(b), tmp);
}

ir_builder *irb_new(const mem_alloc *a, const mgpu_kernel_options *opts, diag *d) {
  ir_builder *b = mem_calloc(a, sizeof *b);
  if (!b) return NULL;
  b->alloc = a;
  b->d = d;
  b->k = ir_kernel_new(a, opts);
  if (!b->k || !vec_reserve(a, &b->scope_open, 1) || !vec_reserve(a, &b->scope_loc, 1) ||
      !vec_reserve(a, &b->val_scope, 1)) {
    irb_free(b);
    return NULL;
  }
  b->scope_open.v[b->scope_open.n++] = 1;   /* scope 0: the kernel body */
  b->scope_loc.v[b->scope_loc.n++] = 0;
  b->val_scope.v[b->val_scope.n++] = 0;
  return b;
}

void irb_free(ir_builder *b) {
  if (!b) return;
  const mem_alloc *a = b->alloc;
  vec_free(a, &b->frames);
  vec_free(a, &b->val_scope);
  vec_free(a, &b->scope_open);
  vec_free(a, &b->scope_loc);
  vec_free(a, &b->bar_waits);
  ir_kernel_free(b->k);
  mem_free(a, b, sizeof *b);
}

mgpu_status irb_set_loc(ir_builder *b, const char *loc) {
  if (b->finished) return diag_set(b->d, ERR_FINISHED, "");
  uint32_t id = ir_str_intern(b->k, loc);
  if (loc && *loc && !id) return diag_set(b->d, ERR_NOMEM, "");
  b->loc = id;
  return MGPU_OK;
}

static uint32_t cur_scope(const ir_builder *b) {
  return b->frames.n ? b->frames.v[b->frames.n - 1].scope : 0;
}

/* New value of type t in the current scope; 0 on allocation failure. */
static uint32_t new_value(ir_builder *b, const ir_type *t, int32_t def, uint16_t idx, uint16_t flags) {
  ir_kernel *k = b->k;
  uint32_t ty = ir_type_intern(k, t);
  if (!ty || !vec_reserve(k->alloc, &k->vals, 1) || !vec_reserve(k->alloc, &b->val_scope, 1)) return 0;
  k->vals.v[k->vals.n] = (ir_value){ ty, def, idx, flags };
  b->val_scope.v[b->val_scope.n++] = cur_scope(b);
  return k->vals.n++;
}

/* Every value's element count fits in 2^53 (shapes from Lua numbers, sizes
** in bytes and index math stay exact and cannot overflow int64). */
#define IR_MAXELEMS ((int64_t)1 << 53)
static mgpu_status check_numel(ir_builder *b, const char *op, const ir_type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] > IR_MAXELEMS / n) {
      char x[96];
      return failf(b, "%s: %s has more than 2^53 elements", op, TS(t, x));
    }
    n *= t->shape[i];
  }
  return MGPU_OK;
}

mgpu_status irb_param(ir_builder *b, int role, int dtype, const int64_t *shape, int rank, uint32_t *out) {
  if (b->finished) return diag_set(b->d, ERR_FINISHED, "");
  if (!dt_valid(dtype) || dtype == MGPU_PRED) return diag_set(b->d, ERR_BAD_DTYPE, LOC(b), "param", dtype);
  if (role != MGPU_PARAM_INPUT && role != MGPU_PARAM_OUTPUT && role != MGPU_PARAM_SCALAR)
    return diag_set(b->d, ERR_BAD_ARG, LOC(b), "param: role must be an mgpu_param_role");
  if (rank < 0 || rank > IR_MAXRANK)
    return diag_set(b->d, ERR_BAD_SHAPE, LOC(b), "param", "rank must be between 0 and 8");
  if (role == MGPU_PARAM_SCALAR && (rank != 0 || dtype == MGPU_F8E4M3 || dtype == MGPU_F8E5M2))
    return failf(b, "scalar parameters have rank 0 and a dtype other than pred and f8 (got %s, rank %d)", dt_name(dtype), rank);
  if (b->k->ops.n) return diag_set(b->d, ERR_STATE, LOC(b), "parameters must be declared before the first op");
  ir_type t = { MGPU_VALUE_REF, (uint8_t)dtype, MGPU_SPACE_GMEM, (uint8_t)rank, { 0 } };
  if (role == MGPU_PARAM_SCALAR) { t.kind = MGPU_VALUE_SCALAR; t.space = MGPU_SPACE_NONE; }
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 1) return diag_set(b->d, ERR_BAD_SHAPE, LOC(b), "param", "every dimension must be at least 1");
    t.shape[i] = shape[i];
  }
  mgpu_status s = check_numel(b, "param", &t);
  if (s) return s;
  ir_kernel *k = b->k;
  if (!vec_reserve(k->alloc, &k->params, 1)) return diag_set(b->d, ERR_NOMEM, "");
  uint32_t v = new_value(b, &t, -1, (uint16_t)k->params.n, IRV_PARAM);
  if (!v) return diag_set(b->d, ERR_NOMEM, "");
  k->params.v[k->params.n++] = (ir_param){ v, (uint8_t)role };
  *out = v;
  return MGPU_OK;
}

/* -- Operand checks ----------------------------------------------------------- */

static const char *kind_name(int kind) {
  switch (kind) {
  case MGPU_VALUE_SCALAR: return "a scalar";
  case MGPU_VALUE_ARRAY: return "an array";
  default: return "a ref";
  }
}

static mgpu_status check_value(ir_builder *b, const char *op, uint32_t v) {
  if (v == 0 || v >= b->k->vals.n) return diag_set(b->d, ERR_BAD_VALUE, LOC(b), op, (int)v);
  uint32_t s = b->val_scope.v[v];
  if (!b->scope_open.v[s]) return diag_set(b->d, ERR_VALUE_SCOPE, LOC(b), op, (int)v, ir_value_loc(b->k, v));
  return MGPU_OK;
}

/* Operand i must be a scalar or array (not a ref). */
static mgpu_status want_data(ir_builder *b, const char *op, const uint32_t *opds, int i) {
  const ir_type *t = ir_vtype(b->k, opds[i]);
  if (t->kind == MGPU_VALUE_REF) return diag_set(b->d, ERR_OPERAND_KIND, LOC(b), op, i + 1, "a scalar or an array (load the ref first)", "a ref");
  return MGPU_OK;
}

static mgpu_status want_kind(ir_builder *b, const char *op, const uint32_t *opds, int i, int kind) {
  const ir_type *t = ir_vtype(b->k, opds[i]);
  if (t->kind != kind) return diag_set(b->d, ERR_OPERAND_KIND, LOC(b), op, i + 1, kind_name(kind), kind_name(t->kind));
  return MGPU_OK;
}

static mgpu_status want_index(ir_builder *b, const char *op, const uint32_t *opds, int i) {
  const ir_type *t = ir_vtype(b->k, opds[i]);
  if (t->kind != MGPU_VALUE_SCALAR || (t->dtype != MGPU_I32 && t->dtype != MGPU_I64 && t->dtype != MGPU_U32)) {
    char buf[64];
    return diag_set(b->d, ERR_OPERAND_KIND, LOC(b), op, i + 1, "an i32 scalar index", TS(t, buf));
  }
  return MGPU_OK;
}

static mgpu_status want_count(ir_builder *b, const char *op, uint32_t n, uint32_t lo, uint32_t hi) {
  if (n >= lo && n <= hi) return MGPU_OK;
  char want[32];
  if (lo == hi) snprintf(want, sizeof want, "%u", lo);
  else if (hi == UINT32_MAX) snprintf(want, sizeof want, "at least %u", lo);
  else snprintf(want, sizeof want, "%u to %u", lo, hi);
  return diag_set(b->d, ERR_OPERANDS, LOC(b), op, want, (int)n);
}

/* Broadcast shape of elementwise operands: arrays must agree, scalars fit
** anything.  Writes the result type (dtype left to the caller). */
static mgpu_status ew_shape(ir_builder *b, const char *op, const uint32_t *opds, uint32_t n, ir_type *out) {
  const ir_type *arr = NULL;
  for (uint32_t i = 0; i < n; i++) {
    const ir_type *t = ir_vtype(b->k, opds[i]);
    if (t->kind != MGPU_VALUE_ARRAY) continue;
    if (arr && !ir_same_shape(arr, t)) {
      char x[96], y[96];
      return diag_set(b->d, ERR_SHAPE_MISMATCH, LOC(b), op, TS(arr, x), TS(t, y));
    }
    arr = t;
  }
  memset(out, 0, sizeof *out);
  if (arr) { *out = *arr; out->kind = MGPU_VALUE_ARRAY; }
  else out->kind = MGPU_VALUE_SCALAR;
  out->space = MGPU_SPACE_NONE;
  return MGPU_OK;
}

static mgpu_status same_dtype(ir_builder *b, const char *op, const uint32_t *opds, uint32_t n) {
  int d0 = ir_vtype(b->k, opds[0])->dtype;
  for (uint32_t i = 1; i < n; i++) {
    int di = ir_vtype(b->k, opds[i])->dtype;
    if (di != d0) return diag_set(b->d, ERR_DTYPE_MISMATCH, LOC(b), op, dt_name(d0), dt_name(di));
  }
  return MGPU_OK;
}

/* Which dtypes an elementwise op accepts. */
static bool op_accepts(int code, int dt) {
  bool fl = dt_isfloat(dt), in = dt_isint(dt), pr = dt == MGPU_PRED, sg = dt_issigned(dt);
  bool f8 = dt == MGPU_F8E4M3 || dt == MGPU_F8E5M2;
  switch (code) {
  case IR_neg: case IR_abs: return (fl && !f8) || sg;
  case IR_not: return in || pr;
  case IR_exp: case IR_exp2: case IR_log: case IR_log2: case IR_tanh:
  case IR_sin: case IR_cos: case IR_erf: case IR_logistic: case IR_expm1: case IR_log1p: case IR_pow:
  case IR_sqrt: case IR_rsqrt: case IR_floor: case IR_ceil: case IR_round: case IR_round_away: case IR_trunc:
    return fl && !f8;
  case IR_sign: return (fl && !f8) || in;
  case IR_clz: case IR_popcount: return in;
  case IR_add: case IR_sub: case IR_mul: case IR_div: case IR_rem: case IR_max: case IR_min:
  case IR_lt: case IR_le: case IR_gt: case IR_ge:
    return (fl && !f8) || in;
  case IR_eq: case IR_ne: return !f8;
  case IR_and: case IR_or: case IR_xor: return in || pr;
  case IR_shl: case IR_shr: return in;
  default: return true;
  }
}

/* A layout attribute must parse and fit the array it describes. */
static mgpu_status check_layout(ir_builder *b, const char *op, const char *text, const ir_type *t) {
  lay_layout l;
  lay_fit f;
  char why[200], x[96];
  if (!lay_parse(text, &l, why, sizeof why)) return failf(b, "%s: layout '%s': %s", op, text, why);
  if (t->kind != MGPU_VALUE_ARRAY) return failf(b, "%s: only arrays have layouts", op);
  mgpu_status s = check_numel(b, op, t);   /* fitting counts the elements */
  if (s) return s;
  if (!lay_fit_shape(&l, t->shape, t->rank, &f, why, sizeof why))
    return failf(b, "%s: layout %s does not fit %s: %s", op, text, TS(t, x), why);
  return MGPU_OK;
}

/* -- Regions --------------------------------------------------------------------- */

static mgpu_status open_region(ir_builder *b, uint32_t op, uint8_t region) {
  const mem_alloc *a = b->k->alloc;
  if (!vec_reserve(a, &b->frames, 1) || !vec_reserve(a, &b->scope_open, 1) || !vec_reserve(a, &b->scope_loc, 1))
    return diag_set(b->d, ERR_NOMEM, "");
  uint32_t scope = b->scope_open.n;
  b->scope_open.v[b->scope_open.n++] = 1;
  b->scope_loc.v[b->scope_loc.n++] = b->loc;
  bool one_warp = b->k->ops.v[op].code == IR_single_warp || (b->frames.n && b->frames.v[b->frames.n - 1].one_warp);
  b->frames.v[b->frames.n++] = (ir_frame){ op, b->k->ops.n, scope, region, one_warp };
  return MGPU_OK;
}

/* Append an op record (operands copied); returns its index or -1. */
static int32_t append_op(ir_builder *b, int code, const uint32_t *opds, uint32_t nopd,
                         const int64_t *ints, uint32_t nints, double num, uint32_t text) {
  ir_kernel *k = b->k;
  const mem_alloc *a = k->alloc;
  if (!vec_reserve(a, &k->ops, 1) || !vec_reserve(a, &k->opds, nopd) || !vec_reserve(a, &k->ints, nints)) return -1;
  ir_op *op = &k->ops.v[k->ops.n];
  memset(op, 0, sizeof *op);
  op->code = (uint16_t)code;
  op->loc = b->loc;
  op->opd = k->opds.n; op->nopd = nopd;
  if (nopd) memcpy(k->opds.v + k->opds.n, opds, nopd * sizeof *opds);
  k->opds.n += nopd;
  op->iat = k->ints.n; op->niat = nints;
  if (nints) memcpy(k->ints.v + k->ints.n, ints, nints * sizeof *ints);
  k->ints.n += nints;
  op->num = num;
  op->text = text;
  return (int32_t)k->ops.n++;
}

/* Give op `i` results of the given types (consecutive value ids). */
static mgpu_status add_results(ir_builder *b, int32_t i, const ir_type *types, uint32_t n) {
  for (uint32_t r = 0; r < n; r++) {
    mgpu_status s = check_numel(b, ir_optab[b->k->ops.v[i].code].name, &types[r]);
    if (s) return s;
  }
  for (uint32_t r = 0; r < n; r++) {
    uint32_t v = new_value(b, &types[r], i, (uint16_t)r, 0);
    if (!v) return diag_set(b->d, ERR_NOMEM, "");
    if (r == 0) b->k->ops.v[i].res = v;
  }
  b->k->ops.v[i].nres = (uint16_t)n;
  return MGPU_OK;
}

static mgpu_status check_yield_types(ir_builder *b, const char *what, const uint32_t *opds, uint32_t n,
                                     const ir_type *want, uint32_t nwant) {
  char x[96], y[96];
  if (n != nwant) return failf(b, "%s %u values but %u are expected", what, n, nwant);
  for (uint32_t i = 0; i < n; i++) {
    const ir_type *t = ir_vtype(b->k, opds[i]);
    const ir_type *w = &want[i];
    if (t->kind == MGPU_VALUE_REF) return failf(b, "%s a ref as value %u; refs cannot be carried", what, i + 1);
    if (t->kind != w->kind || t->dtype != w->dtype || !ir_same_shape(t, w))
      return failf(b, "%s %s as value %u, which must match %s", what, TS(t, x), i + 1, TS(w, y));
  }
  return MGPU_OK;
}

static void close_scope(ir_builder *b) {
  ir_frame *f = &b->frames.v[b->frames.n - 1];
  b->scope_open.v[f->scope] = 0;
}

/* The yield of a while's condition: one pred scalar.  Closes the condition
** and opens the body, where the carried values (the op's args) stay visible. */
static mgpu_status end_while_cond(ir_builder *b, const uint32_t *opds, uint32_t nopd, uint32_t *nres) {
  ir_kernel *k = b->k;
  ir_frame f = b->frames.v[b->frames.n - 1];
  char x[96];
  if (nopd != 1 || ir_vtype(k, opds[0])->kind != MGPU_VALUE_SCALAR || ir_vtype(k, opds[0])->dtype != MGPU_PRED)
    return failf(b, "while_loop: the condition must return one pred scalar (a comparison result), got %u value%s%s%s",
                 nopd, nopd == 1 ? "" : "s", nopd == 1 ? ": " : "", nopd == 1 ? TS(ir_vtype(k, opds[0]), x) : "");
  if (append_op(b, IR_yield, opds, nopd, NULL, 0, 0, 0) < 0) return diag_set(b->d, ERR_NOMEM, "");
  k->ops.v[f.op].body[0] = k->ops.n - f.start;
  close_scope(b);
  b->frames.n--;
  mgpu_status s = open_region(b, f.op, 1);
  if (s) return s;
  const ir_op *op = &k->ops.v[f.op];
  for (uint32_t i = 0; i < op->narg; i++) b->val_scope.v[op->arg + i] = cur_scope(b);
  *nres = 0;
  return MGPU_OK;
}

/* yield: close the innermost region. */
static mgpu_status do_yield(ir_builder *b, const uint32_t *opds, uint32_t nopd, uint32_t *res, uint32_t maxres, uint32_t *nres) {
  ir_kernel *k = b->k;
  if (!b->frames.n) return diag_set(b->d, ERR_REGION, LOC(b), "yield outside of a loop, branch or scope");
  ir_frame f = b->frames.v[b->frames.n - 1];
  ir_op *op = &k->ops.v[f.op];
  ir_type want[IR_MAXRES];
  memset(want, 0, sizeof want);
  uint32_t nwant = 0;
  mgpu_status s;
  if (op->code == IR_while && f.region == 0) return end_while_cond(b, opds, nopd, nres);
  if (op->code == IR_for || op->code == IR_while) {
    uint32_t first = op->code == IR_for;   /* a for's first arg is its induction variable */
    nwant = op->narg - first;
    for (uint32_t i = 0; i < nwant; i++) want[i] = *ir_vtype(k, op->arg + first + i);
    if ((s = check_yield_types(b, "loop body: yielded", opds, nopd, want, nwant))) return s;
  } else if (op->code == IR_scoped) {
    if (nopd > IR_MAXRES) return failf(b, "run_scoped can return at most %d values", IR_MAXRES);
    for (uint32_t i = 0; i < nopd; i++) {
      if (ir_vtype(k, opds[i])->kind == MGPU_VALUE_REF)
        return failf(b, "run_scoped: value %u is a ref; a scope can only return scalars and arrays (its SMEM ends with it)", i + 1);
      want[i] = *ir_vtype(k, opds[i]);
    }
    nwant = nopd;
  } else if (op->code == IR_single_warp) {
    if (nopd) return failf(b, "single_warp cannot return values (its region runs on one warp only)");
  } else if (f.region == 0) {
    if (nopd) return diag_set(b->d, ERR_REGION, LOC(b), "a branch without an else cannot produce values");
  } else {
    /* else region: must match the then-region's yield */
    uint32_t ty = f.op + 1 + op->body[0] - 1;    /* the then-yield */
    const ir_op *y = &k->ops.v[ty];
    nwant = y->nopd;
    for (uint32_t i = 0; i < nwant; i++) want[i] = *ir_vtype(k, ir_opds(k, y)[i]);
    if ((s = check_yield_types(b, "else branch: yielded", opds, nopd, want, nwant))) return s;
  }
  if (nwant > maxres) return diag_set(b->d, ERR_RESULTS, LOC(b), "yield", (int)nwant, (int)maxres);
  if (append_op(b, IR_yield, opds, nopd, NULL, 0, 0, 0) < 0) return diag_set(b->d, ERR_NOMEM, "");
  op = &k->ops.v[f.op];
  op->body[f.region] = k->ops.n - f.start;
  close_scope(b);
  b->frames.n--;
  *nres = 0;
  if (op->code == IR_for || op->code == IR_while) {
    for (uint32_t i = 0; i < op->nres; i++) res[i] = op->res + i;
    *nres = op->nres;
  } else if ((f.region == 1 || op->code == IR_scoped) && nwant) {
    if ((s = add_results(b, (int32_t)f.op, want, nwant))) return s;
    for (uint32_t i = 0; i < nwant; i++) res[i] = k->ops.v[f.op].res + i;
    *nres = nwant;
  }
  return MGPU_OK;
}

/* else: close an if's then-region (with its yielded values) and open the else. */
static mgpu_status do_else(ir_builder *b, const uint32_t *opds, uint32_t nopd) {
  ir_kernel *k = b->k;
  if (!b->frames.n || k->ops.v[b->frames.v[b->frames.n - 1].op].code != IR_if ||
      b->frames.v[b->frames.n - 1].region != 0)
    return diag_set(b->d, ERR_REGION, LOC(b), "else without an open if");
  for (uint32_t i = 0; i < nopd; i++) {
    const ir_type *t = ir_vtype(k, opds[i]);
    if (t->kind == MGPU_VALUE_REF) return diag_set(b->d, ERR_REGION, LOC(b), "a branch cannot produce a ref");
  }
  if (nopd > IR_MAXRES) return diag_set(b->d, ERR_REGION, LOC(b), "a branch can produce at most 64 values");
  ir_frame f = b->frames.v[b->frames.n - 1];
  if (append_op(b, IR_yield, opds, nopd, NULL, 0, 0, 0) < 0) return diag_set(b->d, ERR_NOMEM, "");
  k->ops.v[f.op].body[0] = k->ops.n - f.start;
  close_scope(b);
  b->frames.n--;
  return open_region(b, f.op, 1);
}

/* -- Views ------------------------------------------------------------------------- */

static mgpu_status view_type(ir_builder *b, const uint32_t *opds, uint32_t nopd, const int64_t *ints,
                             uint32_t nints, ir_type *out) {
  const ir_type *rt = ir_vtype(b->k, opds[0]);
  if (nints % 3) return diag_set(b->d, ERR_BAD_ATTR, LOC(b), "view", "indices must come as (kind, start, size) triples");
  uint32_t nidx = nints / 3, ndyn = 0;
  if (nidx > rt->rank) return diag_set(b->d, ERR_TOO_MANY_IDX, LOC(b), "at", (int)rt->rank, (int)nidx);
  *out = *rt;
  out->rank = 0;
  for (uint32_t i = 0; i < rt->rank; i++) {
    int64_t dim = rt->shape[i];
    if (i >= nidx) { out->shape[out->rank++] = dim; continue; }
    int64_t kind = ints[3 * i], start = ints[3 * i + 1], size = ints[3 * i + 2];
    if (start == IR_DYNAMIC) {
      if (1 + ndyn >= nopd) return diag_set(b->d, ERR_BAD_ATTR, LOC(b), "view", "missing operand for a dynamic start");
      mgpu_status s = want_index(b, "at", opds, (int)(1 + ndyn));
      if (s) return s;
      ndyn++;
    }
    switch (kind) {
    case IR_IDX_INT:
      if (start != IR_DYNAMIC && (start < 0 || start >= dim))
        return diag_set(b->d, ERR_INDEX_RANGE, LOC(b), "at", (long long)start, (int)i, (long long)dim);
      break;
    case IR_IDX_DS:
      /* a slice may run past the end of its dimension (elements there read
         as zero and are not written), but a static one must start inside */
      if (size < 1) return diag_set(b->d, ERR_SLICE_RANGE, LOC(b), "ds", (long long)size, (int)i, (long long)dim);
      if (start != IR_DYNAMIC && (start < 0 || start >= dim))
        return failf(b, "ds(%lld, %lld) starts outside dimension %u of size %lld",
                     (long long)start, (long long)size, i, (long long)dim);
      if (rt->space == MGPU_SPACE_SMEM && (size > dim || (start != IR_DYNAMIC && start + size > dim)))
        return failf(b, "ds(%lld, %lld) runs past dimension %u of size %lld (SMEM views must lie inside their buffer)",
                     start == IR_DYNAMIC ? 0LL : (long long)start, (long long)size, i, (long long)dim);
      out->shape[out->rank++] = size;
      break;
    case IR_IDX_ALL:
      out->shape[out->rank++] = dim;
      break;
    default:
      return diag_set(b->d, ERR_BAD_ATTR, LOC(b), "view", "unknown index kind");
    }
  }
  if (1 + ndyn != nopd) return diag_set(b->d, ERR_BAD_ATTR, LOC(b), "view", "more operands than dynamic starts");
  if (rt->space == MGPU_SPACE_TMEM) {   /* columns of whole lanes: tcgen05 addresses a lane range per warp */
    bool rows_whole = nidx < 1 || ints[0] == IR_IDX_ALL || (ints[0] == IR_IDX_DS && ints[1] == 0 && ints[2] == rt->shape[0]);
    if (out->rank != 2 || !rows_whole)
      return failf(b, "TMEM refs are sliced along columns only, keeping every row: use ref:at(mgpu.all, mgpu.ds(start, size))");
    if (nidx > 1 && ints[3] == IR_IDX_DS) {
      int64_t start = ints[4], size = ints[5], pack = 4 / dt_bytes(rt->dtype);
      if (size > rt->shape[1] || (start != IR_DYNAMIC && start + size > rt->shape[1]))
        return failf(b, "TMEM column slice ds(%lld, %lld) runs past the ref's %lld columns",
                     start == IR_DYNAMIC ? 0LL : (long long)start, (long long)size, (long long)rt->shape[1]);
      if (pack > 1 && ((start != IR_DYNAMIC && start % pack) || size % pack))
        return failf(b, "TMEM of %s packs %lld values to a 32-bit column: a column slice must start and end at multiples "
                     "of %lld, got ds(%lld, %lld)", dt_name(rt->dtype), (long long)pack, (long long)pack,
                     start == IR_DYNAMIC ? 0LL : (long long)start, (long long)size);
    }
  }
  if (rt->space == MGPU_SPACE_REGS) {   /* an accumulator slice: whole 64-row blocks and 8-column groups */
    static const int64_t unit[2] = { 64, 8 };
    static const char *const name[2] = { "M (rows)", "N (columns)" };
    if (out->rank != 2) return failf(b, "an accumulator slice keeps both dims: use ds(start, size) or mgpu.all, not an integer index");
    for (uint32_t i = 0; i < 2 && i < nidx; i++) {
      int64_t start = ints[3 * i + 1], size = ints[3 * i + 2];
      if (ints[3 * i] == IR_IDX_ALL) continue;
      if (start == IR_DYNAMIC) return failf(b, "an accumulator slice must start at a static offset (dim %u)", i);
      if (start % unit[i] || size % unit[i] || start + size > rt->shape[i])
        return failf(b, "accumulator slice ds(%lld, %lld) along %s: the WGMMA layout splits M into 64-row blocks and N "
                     "into 8-column groups, so a slice must start and end at multiples of %lld inside %lld",
                     (long long)start, (long long)size, name[i], (long long)unit[i], (long long)rt->shape[i]);
    }
  }
  return MGPU_OK;
}

/* -- Barriers, copies, wgmma ---------------------------------------------------------- */

static mgpu_status barrier_type(ir_builder *b, const int64_t *ints, uint32_t nints, ir_type *out) {
  if (nints != 3 && nints != 4) return failf(b, "Barrier: expected (num_barriers, num_arrivals, cluster axes[, orders tensor core])");
  if (nints == 4 && ints[3] != 0 && ints[3] != 1) return failf(b, "Barrier: orders_tensor_core must be 0 or 1");
  if (nints == 4 && ints[3] && !ir_blackwell(b->k))
    return failf(b, "Barrier: orders_tensor_core is Blackwell-only (tcgen05 fences) but this kernel's target is %s",
                 ir_target_name(b->k->opts.target));
  if (ints[0] < 1 || ints[0] > 32) return failf(b, "Barrier: num_barriers must be between 1 and 32, got %lld", (long long)ints[0]);
  if (ints[1] < 1 || ints[1] > 1024) return failf(b, "Barrier: num_arrivals must be between 1 and 1024, got %lld", (long long)ints[1]);
  if (ints[2] < 0 || ints[2] >= (1 << b->k->opts.cluster_rank))
    return failf(b, "ClusterBarrier: the collective axes must be cluster axes (the kernel's cluster has rank %d)", b->k->opts.cluster_rank);
  memset(out, 0, sizeof *out);
  out->kind = MGPU_VALUE_REF;
  out->dtype = MGPU_U64;
  out->space = MGPU_SPACE_BARRIER;
  out->rank = 1;
  out->shape[0] = ints[0];
  return MGPU_OK;
}

/* Operand i must name one barrier: a barrier ref of rank 0, or of one element. */
static mgpu_status want_barrier(ir_builder *b, const char *op, const uint32_t *opds, int i) {
  const ir_type *t = ir_vtype(b->k, opds[i]);
  char x[96];
  if (t->kind != MGPU_VALUE_REF || t->space != MGPU_SPACE_BARRIER)
    return diag_set(b->d, ERR_OPERAND_KIND, LOC(b), op, i + 1, "a barrier (mgpu.Barrier{...})", TS(t, x));
  if (t->rank > 1 || (t->rank == 1 && t->shape[0] != 1))
    return failf(b, "%s: operand %d holds %lld barriers; pick one with :at(i)", op, i + 1, (long long)ir_numel(t));
  return MGPU_OK;
}

static mgpu_status want_space(ir_builder *b, const char *op, const uint32_t *opds, int i, int space, const char *what) {
  const ir_type *t = ir_vtype(b->k, opds[i]);
  char x[96];
  if (t->kind != MGPU_VALUE_REF || t->space != space) return diag_set(b->d, ERR_OPERAND_KIND, LOC(b), op, i + 1, what, TS(t, x));
  return MGPU_OK;
}

/* Operand i is a ref holding data (GMEM, SMEM or an accumulator): barriers
** hold none, so loading from or storing to one is refused here. */
static mgpu_status want_data_ref(ir_builder *b, const char *op, const uint32_t *opds, int i) {
  mgpu_status s = want_kind(b, op, opds, i, MGPU_VALUE_REF);
  if (s) return s;
  if (ir_vtype(b->k, opds[i])->space == MGPU_SPACE_BARRIER)
    return failf(b, "%s: the ref is a barrier, which holds no data (use mgpu.barrier_arrive / mgpu.barrier_wait)", op);
  if (ir_vtype(b->k, opds[i])->space == MGPU_SPACE_TMEM)
    return failf(b, "%s: the ref is in tensor memory: use mgpu.async_load_tmem / mgpu.async_store_tmem", op);
  return MGPU_OK;
}

static mgpu_status want_pred(ir_builder *b, const char *op, const uint32_t *opds, int i) {
  const ir_type *t = ir_vtype(b->k, opds[i]);
  char x[96];
  if (t->kind != MGPU_VALUE_SCALAR || t->dtype != MGPU_PRED)
    return diag_set(b->d, ERR_OPERAND_KIND, LOC(b), op, i + 1, "a pred scalar (a comparison result)", TS(t, x));
  return MGPU_OK;
}

/* tma_load (gmem, smem, barrier[, pred]) and tma_store (smem, gmem[, pred]). */
static mgpu_status cta_group_check(ir_builder *b, const char *what, int group);

/* A load partitioned over the cluster pair (ints[3] = 1 + dim): the GMEM
** view is twice the SMEM ref along dim, each block of the pair loading its
** half into its own SMEM, the pair's first block's barrier counting both. */
static mgpu_status partition_check(ir_builder *b, const ir_type *g, const ir_type *m, const int64_t *ints) {
  const char *op = "copy_gmem_to_smem";
  char x[96], y[96];
  int64_t dim = ints[3] - 1;
  if (dim < 0 || dim >= m->rank) return failf(b, "%s: the partitioned dim %lld is not a dim of the SMEM ref", op, (long long)dim);
  if (ints[0]) return failf(b, "%s: a copy partitioned over the cluster pair cannot also multicast", op);
  bool ok = g->rank == m->rank;
  for (int i = 0; i < m->rank && ok; i++) ok = g->shape[i] == m->shape[i] * (i == dim ? 2 : 1);
  if (!ok)
    return failf(b, "%s: partitioned along dim %lld, the GMEM view %s must be twice the SMEM ref %s along it (each block of "
                 "the pair loads its half) and equal elsewhere", op, (long long)dim, TS(g, x), TS(m, y));
  return cta_group_check(b, "copy_gmem_to_smem (leader_tracked)", 2);
}

static mgpu_status copy_check(ir_builder *b, bool load, const uint32_t *opds, uint32_t nopd, const int64_t *ints, uint32_t nints) {
  const char *op = load ? "copy_gmem_to_smem" : "copy_smem_to_gmem";
  uint32_t fixed = load ? 3 : 2;
  mgpu_status s;
  if (nints != (load ? 2u : 3u) && !(load && (nints == 3 || nints == 4)))
    return failf(b, "%s: expected %d integer attributes", op, load ? 2 : 3);
  if (load && nints >= 3 && (ints[2] < 0 || ints[2] > 2)) return failf(b, "%s: unknown oob mode %lld", op, (long long)ints[2]);
  bool has_pred = ints[load ? 1 : 2] != 0;
  if ((s = want_count(b, op, nopd, fixed + has_pred, fixed + has_pred))) return s;
  int gi = load ? 0 : 1, si = load ? 1 : 0;
  if ((s = want_space(b, op, opds, gi, MGPU_SPACE_GMEM, load ? "a GMEM ref (the source)" : "a GMEM ref (the destination)"))) return s;
  if ((s = want_space(b, op, opds, si, MGPU_SPACE_SMEM, load ? "an SMEM ref (the destination)" : "an SMEM ref (the source)"))) return s;
  if (load && (s = want_barrier(b, op, opds, 2))) return s;
  if (has_pred && (s = want_pred(b, op, opds, (int)fixed))) return s;
  const ir_type *g = ir_vtype(b->k, opds[gi]), *m = ir_vtype(b->k, opds[si]);
  char x[96], y[96];
  if (g->dtype != m->dtype) return diag_set(b->d, ERR_DTYPE_MISMATCH, LOC(b), op, dt_name(g->dtype), dt_name(m->dtype));
  if (load && (ints[0] < 0 || ints[0] >= (1 << b->k->opts.cluster_rank)))
    return failf(b, "%s: collective_axes must name cluster axes (the kernel's cluster has rank %d)", op, b->k->opts.cluster_rank);
  if (load && nints == 4 && ints[3]) return partition_check(b, g, m, ints);
  if (!ir_same_shape(g, m)) return diag_set(b->d, ERR_SHAPE_MISMATCH, LOC(b), op, TS(g, x), TS(m, y));
  if (!load) {
    if (ints[1] < 0 || ints[1] > IR_RED_XOR) return failf(b, "%s: unknown reduction_op %lld", op, (long long)ints[1]);
    bool fl = dt_isfloat(g->dtype);
    if (ints[1] && (g->dtype == MGPU_PRED || g->dtype == MGPU_F8E4M3 || g->dtype == MGPU_F8E5M2 || g->dtype == MGPU_F64 ||
                    (fl && ints[1] != IR_RED_ADD && ints[1] != IR_RED_MIN && ints[1] != IR_RED_MAX) ||
                    (fl && g->dtype == MGPU_F32 && ints[1] != IR_RED_ADD)))
      return failf(b, "%s: reduction_op '%s' is not available for %s", op, ir_red_names[ints[1]], dt_name(g->dtype));
  }
  return MGPU_OK;
}

static mgpu_status sync_check(ir_builder *b, int code, const int64_t *ints, uint32_t nints) {
  const char *op = ir_optab[code].name;
  switch (code) {
  case IR_commit_smem: case IR_commit_group: case IR_tmem_wait_load: case IR_tmem_commit:
    if (nints) return failf(b, "%s takes no attributes", op);
    return MGPU_OK;
  case IR_wait_group:
    if (nints != 2 || ints[0] < 0 || ints[0] > 63) return failf(b, "wait_smem_to_gmem: n must be between 0 and 63");
    return MGPU_OK;
  case IR_wgmma_wait:
    if (nints != 1 || ints[0] < 0 || ints[0] > 7) return failf(b, "wgmma_wait: n must be between 0 and 7");
    return MGPU_OK;
  case IR_set_max_registers:
    if (nints != 2 || ints[0] < 24 || ints[0] > 256 || ints[0] % 8)
      return failf(b, "set_max_registers: n must be a multiple of 8 between 24 and 256, got %lld", nints ? (long long)ints[0] : 0LL);
    return MGPU_OK;
  default:
    mgpu_unreachable();
  }
}

static mgpu_status acc_type(ir_builder *b, const int64_t *ints, uint32_t nints, ir_type *out) {
  if (nints != 3) return failf(b, "ACC: expected (dtype, M, N)");
  int dt = (int)ints[0];
  if (dt != MGPU_F32 && dt != MGPU_F16 && dt != MGPU_I32) return failf(b, "ACC: the accumulator dtype must be f32, f16 or i32");
  if (ints[1] < 64 || ints[1] % 64 || ints[1] > 256)
    return failf(b, "ACC: M must be a multiple of 64 up to 256 (a warpgroup's wgmma covers 64 rows), got %lld", (long long)ints[1]);
  if (ints[2] < 8 || ints[2] % 8 || ints[2] > 256)
    return failf(b, "ACC: N must be a multiple of 8 between 8 and 256, got %lld", (long long)ints[2]);
  memset(out, 0, sizeof *out);
  out->kind = MGPU_VALUE_REF;
  out->dtype = (uint8_t)dt;
  out->space = MGPU_SPACE_REGS;
  out->rank = 2;
  out->shape[0] = ints[1];
  out->shape[1] = ints[2];
  return MGPU_OK;
}

static bool is_f8(int dt) { return dt == MGPU_F8E4M3 || dt == MGPU_F8E5M2; }
static bool is_i8(int dt) { return dt == MGPU_I8 || dt == MGPU_U8; }

/* atomic (ref, value[, new]) ints = op, sem, scope: one element of GMEM,
** a value of its dtype; compare-and-swap takes the expected and the new value. */
static mgpu_status atomic_check(ir_builder *b, const uint32_t *opds, uint32_t nopd, const int64_t *ints, uint32_t nints) {
  mgpu_status s;
  if (nints != 3 || ints[0] < IR_ATOM_ADD || ints[0] > IR_ATOM_XOR || ints[1] < IR_SEM_RELAXED || ints[1] > IR_SEM_ACQ_REL ||
      ints[2] < IR_SCOPE_CTA || ints[2] > IR_SCOPE_SYS)
    return failf(b, "atomic: expected (op, sem, scope) codes");
  const char *op = ir_atom_names[ints[0]];
  bool cas = ints[0] == IR_ATOM_CAS;
  if ((s = want_count(b, "atomic", nopd, cas ? 3 : 2, cas ? 3 : 2))) return s;
  if ((s = want_space(b, "atomic", opds, 0, MGPU_SPACE_GMEM, "a GMEM ref"))) return s;
  const ir_type *r = ir_vtype(b->k, opds[0]);
  char x[96];
  if (r->rank != 0) return failf(b, "atomic_%s: the ref must be one element (index every dim), not %s", op, TS(r, x));
  int dt = r->dtype;
  bool wide = dt == MGPU_I32 || dt == MGPU_U32 || dt == MGPU_I64 || dt == MGPU_U64;
  if (!wide && !(dt == MGPU_F32 && (ints[0] == IR_ATOM_ADD || ints[0] == IR_ATOM_EXCH)))
    return failf(b, "atomic_%s: %s is not supported (i32, u32, i64, u64; f32 for add and exchange)", op, dt_name(dt));
  for (uint32_t i = 1; i < nopd; i++) {
    const ir_type *v = ir_vtype(b->k, opds[i]);
    if (v->kind != MGPU_VALUE_SCALAR) return failf(b, "atomic_%s: operand %u must be a scalar, not %s", op, i + 1, TS(v, x));
    if (v->dtype != dt) return diag_set(b->d, ERR_DTYPE_MISMATCH, LOC(b), "atomic", dt_name(dt), dt_name(v->dtype));
  }
  return MGPU_OK;
}

/* Operand i is the launch's peer table (a GMEM i64 vector of 3 + devices). */
static mgpu_status want_peer_table(ir_builder *b, const char *name, const uint32_t *opds, int i) {
  const ir_type *t = ir_vtype(b->k, opds[i]);
  char x[96];
  if (t->kind != MGPU_VALUE_REF || t->space != MGPU_SPACE_GMEM || t->dtype != MGPU_I64 || t->rank != 1 || t->shape[0] < 4)
    return failf(b, "%s: operand %d must be the launch's peer table (a GMEM i64 vector), not %s", name, i + 1, TS(t, x));
  return MGPU_OK;
}

/* Operand i is an i32 scalar (`what` names it). */
static mgpu_status want_i32(ir_builder *b, const char *name, const uint32_t *opds, int i, const char *what) {
  const ir_type *v = ir_vtype(b->k, opds[i]);
  char x[96];
  if (v->kind != MGPU_VALUE_SCALAR || v->dtype != MGPU_I32)
    return failf(b, "%s: operand %d must be an i32 scalar (%s), not %s", name, i + 1, what, TS(v, x));
  return MGPU_OK;
}

/* store and multimem_store: operand 1 is data of the ref's dtype, a scalar or an array of its shape. */
static mgpu_status stored_value(ir_builder *b, const char *name, const uint32_t *opds) {
  mgpu_status s = want_data(b, name, opds, 1);
  if (s) return s;
  const ir_type *r = ir_vtype(b->k, opds[0]), *v = ir_vtype(b->k, opds[1]);
  char x[96], y[96];
  if (r->dtype != v->dtype) return diag_set(b->d, ERR_DTYPE_MISMATCH, LOC(b), name, dt_name(r->dtype), dt_name(v->dtype));
  if (v->kind == MGPU_VALUE_ARRAY && !ir_same_shape(r, v))
    return diag_set(b->d, ERR_SHAPE_MISMATCH, LOC(b), name, TS(r, x), TS(v, y));
  return MGPU_OK;
}

/* The kernel's cluster has other blocks, whose SMEM op `name` reaches. */
static mgpu_status want_cluster(ir_builder *b, const char *name) {
  if (ir_cluster_blocks(&b->k->opts) >= 2) return MGPU_OK;
  return failf(b, "%s: the kernel's cluster has one block, so there is no other block's SMEM to reach (give the kernel a "
               "cluster, e.g. cluster = {2})", name);
}

/* async_store_smem: (array, the block's own SMEM ref of its shape and dtype, one barrier, rank); a
** reduction only of 32-bit integers (red.async has no float forms), plain stores of f16, bf16 and
** 32- and 64-bit elements (st.async moves whole 32- or 64-bit words; 16-bit floats go in pairs). */
static mgpu_status async_smem_check(ir_builder *b, const uint32_t *opds, uint32_t nopd, const int64_t *ints, uint32_t nints) {
  static const char *const name = "async_store_smem";
  mgpu_status s;
  if ((s = want_count(b, name, nopd, 4, 4))) return s;
  if ((s = want_kind(b, name, opds, 0, MGPU_VALUE_ARRAY))) return s;
  if ((s = want_space(b, name, opds, 1, MGPU_SPACE_SMEM, "an SMEM ref"))) return s;
  if ((s = want_barrier(b, name, opds, 2))) return s;
  if ((s = want_i32(b, name, opds, 3, "the block's rank in the cluster"))) return s;
  const ir_type *v = ir_vtype(b->k, opds[0]), *r = ir_vtype(b->k, opds[1]);
  char x[96], y[96];
  if (r->dtype != v->dtype) return diag_set(b->d, ERR_DTYPE_MISMATCH, LOC(b), name, dt_name(r->dtype), dt_name(v->dtype));
  if (!ir_same_shape(r, v)) return diag_set(b->d, ERR_SHAPE_MISMATCH, LOC(b), name, TS(r, x), TS(v, y));
  if ((s = want_cluster(b, name))) return s;
  if (nints > 1) return failf(b, "async_store_smem: one int attribute at most (the reduction op)");
  int red = nints ? (int)ints[0] : IR_RED_NONE;
  if (red != IR_RED_NONE && red != IR_RED_ADD && red != IR_RED_MIN && red != IR_RED_MAX && red != IR_RED_AND &&
      red != IR_RED_OR && red != IR_RED_XOR)
    return failf(b, "async_store_smem: atomic must be add, min, max, and, or or xor");
  int bytes = dt_bytes(v->dtype);
  if (red != IR_RED_NONE && !(dt_isint(v->dtype) && bytes == 4))
    return failf(b, "async_store_smem: atomic %s of %s: the asynchronous reductions take 32-bit integers only (i32, u32)",
                 ir_red_names[red], dt_name(v->dtype));
  if (bytes == 1 || v->dtype == MGPU_PRED || (bytes == 2 && !dt_isfloat(v->dtype)))
    return failf(b, "async_store_smem: %s elements: st.async moves 32- and 64-bit words, so f16, bf16 (in pairs) and 32- "
                 "and 64-bit dtypes only", dt_name(v->dtype));
  return MGPU_OK;
}

/* multimem ops: operand 0 a GMEM ref of f32, i32 or u32, operand `table` the peer table. */
static mgpu_status multimem_check(ir_builder *b, const char *name, const uint32_t *opds, int table) {
  mgpu_status s = want_space(b, name, opds, 0, MGPU_SPACE_GMEM, "a GMEM ref");
  if (s) return s;
  int dt = ir_vtype(b->k, opds[0])->dtype;
  if (dt != MGPU_F32 && dt != MGPU_I32 && dt != MGPU_U32)
    return failf(b, "%s: %s is not supported (f32, i32, u32)", name, dt_name(dt));
  return want_peer_table(b, name, opds, table);
}

/* debug_print (values...) text=format: one {} per value; scalars, or one
** array alone (printed element by element); no refs, no f8. */
static mgpu_status print_check(ir_builder *b, const uint32_t *opds, uint32_t nopd, const char *text) {
  char why[200], x[96];
  int holes = ir_print_holes(text, why, sizeof why);
  if (holes < 0) return failf(b, "debug_print: %s", why);
  if ((uint32_t)holes != nopd)
    return failf(b, "debug_print: the format has %d placeholder%s ({}) but %u value%s given", holes, holes == 1 ? "" : "s",
                 nopd, nopd == 1 ? " was" : "s were");
  if (nopd > IR_MAXRES) return failf(b, "debug_print: at most %d values", IR_MAXRES);
  for (uint32_t i = 0; i < nopd; i++) {
    const ir_type *t = ir_vtype(b->k, opds[i]);
    if (t->kind == MGPU_VALUE_REF)
      return failf(b, "debug_print: value %u is a ref (%s); load it first (ref:load())", i + 1, TS(t, x));
    if (t->kind == MGPU_VALUE_ARRAY && nopd != 1)
      return failf(b, "debug_print: value %u is an array (%s); an array must be the only value printed", i + 1, TS(t, x));
    if (is_f8(t->dtype)) return failf(b, "debug_print: %s values cannot be printed (bitcast them to u8)", dt_name(t->dtype));
  }
  return MGPU_OK;
}

/* profile (buffer) ints=name id, end[, warps]: the buffer is a kernel
** parameter, u32[traces, 4 + 4*space] (a header, then 16-byte events);
** warps is 1 (a trace per warpgroup, the default) or 4 (a trace per warp). */
static mgpu_status profile_check(ir_builder *b, const uint32_t *opds, uint32_t nopd, const int64_t *ints, uint32_t nints) {
  mgpu_status s;
  char x[96];
  if ((s = want_count(b, "profile", nopd, 1, 1))) return s;
  if ((s = want_space(b, "profile", opds, 0, MGPU_SPACE_GMEM, "a GMEM ref"))) return s;
  const ir_type *t = ir_vtype(b->k, opds[0]);
  if (!(b->k->vals.v[opds[0]].flags & IRV_PARAM) || t->dtype != MGPU_U32 || t->rank != 2 || t->shape[1] < 8 || t->shape[1] % 4)
    return failf(b, "profile: the buffer must be a u32[traces, 4 + 4*space] kernel parameter, not %s", TS(t, x));
  if ((nints != 2 && nints != 3) || ints[0] < 0 || ints[0] > 0x7fffffff || (ints[1] != 0 && ints[1] != 1) ||
      (nints == 3 && ints[2] != 1 && ints[2] != 4))
    return failf(b, "profile: needs ints (name id, end 0/1[, warps 1/4])");
  return MGPU_OK;
}

/* tcgen05 work is per block (cta_group::1) or per cluster pair (::2) for the
** whole kernel (ptxas refuses a mix); a pair is the two blocks along cluster
** axis 0, which must have size 2. */
static mgpu_status cta_group_check(ir_builder *b, const char *what, int group) {
  const mgpu_kernel_options *o = &b->k->opts;
  if (group == 2 && (o->cluster_rank < 1 || o->cluster[0] != 2))
    return failf(b, "%s: collective (2-CTA) tensor-core work needs a cluster pair: the kernel's cluster must have size 2 "
                 "along its first axis (cluster = { 2 }), not %s", what,
                 o->cluster_rank ? "this one" : "none");
  if (b->cta_group && b->cta_group != group)
    return failf(b, "%s: a kernel's tcgen05 work is all collective (2-CTA) or all per block, but %s at %s is %s", what,
                 b->cta_group == 2 ? "the collective TMEM or MMA" : "the per-block TMEM or MMA", ir_str(b->k, b->cta_group_loc),
                 b->cta_group == 2 ? "collective" : "per block");
  if (!b->cta_group) { b->cta_group = (uint8_t)group; b->cta_group_loc = b->loc; }
  return MGPU_OK;
}

/* tmem_alloc ints = dtype, rows, cols, collective: 128 rows; 32-bit values,
** or 16- and 8-bit ones packed; a kernel's TMEM (and tcgen05 ops) are all
** collective (a cluster pair, cta_group::2) or none. */
static mgpu_status tmem_type(ir_builder *b, const int64_t *ints, uint32_t nints, ir_type *out) {
  if (nints != 4) return failf(b, "TMEM: expected (dtype, rows, columns, collective)");
  int dt = (int)ints[0];
  if (!dt_valid(dt) || dt == MGPU_PRED || dt_bytes(dt) > 4 || dt == MGPU_I16 || dt == MGPU_U16)
    return failf(b, "TMEM: dtype %s is not supported (f32, i32, u32; f16, bf16 packed 2 to a column; f8e4m3, f8e5m2, i8, "
                 "u8 packed 4)", dt_valid(dt) ? dt_name(dt) : "?");
  if (ints[1] != IR_TMEM_ROWS)
    return failf(b, "TMEM: the shape must have %d rows (the tensor memory's lanes; 64-row layouts are not supported yet), "
                 "got %lld", IR_TMEM_ROWS, (long long)ints[1]);
  int64_t pack = 4 / dt_bytes(dt);
  if (ints[2] < 1 || ints[2] % pack)
    return failf(b, "TMEM: %s packs %lld values to a 32-bit column, so the column count must be a positive multiple of "
                 "%lld, got %lld", dt_name(dt), (long long)pack, (long long)pack, (long long)ints[2]);
  if (ir_tmem_cols(dt, ints[2]) > IR_TMEM_COLS)
    return failf(b, "TMEM: %lld columns of %s need %lld 32-bit columns, but a block has %d", (long long)ints[2], dt_name(dt),
                 (long long)ir_tmem_cols(dt, ints[2]), IR_TMEM_COLS);
  if (ints[3] != 0 && ints[3] != 1) return failf(b, "TMEM: collective must be 0 or 1");
  mgpu_status s = cta_group_check(b, "TMEM", ints[3] ? 2 : 1);
  if (s) return s;
  memset(out, 0, sizeof *out);
  out->kind = MGPU_VALUE_REF;
  out->dtype = (uint8_t)dt;
  out->space = MGPU_SPACE_TMEM;
  out->rank = 2;
  out->shape[0] = ints[1];
  out->shape[1] = ints[2];
  return MGPU_OK;
}

/* tmem_load (ref) / tmem_store (ref, array): a TMEM ref and an array of its shape and dtype. */
static mgpu_status tmem_access_check(ir_builder *b, bool store, const uint32_t *opds, uint32_t nopd) {
  const char *op = store ? "async_store_tmem" : "async_load_tmem";
  mgpu_status s = want_count(b, op, nopd, store ? 2 : 1, store ? 2 : 1);
  if (s || (s = want_space(b, op, opds, 0, MGPU_SPACE_TMEM, "a TMEM ref (mgpu.TMEM)"))) return s;
  if (!store) return MGPU_OK;
  if ((s = want_kind(b, op, opds, 1, MGPU_VALUE_ARRAY))) return s;
  const ir_type *r = ir_vtype(b->k, opds[0]), *v = ir_vtype(b->k, opds[1]);
  char x[96], y[96];
  if (r->dtype != v->dtype) return diag_set(b->d, ERR_DTYPE_MISMATCH, LOC(b), op, dt_name(r->dtype), dt_name(v->dtype));
  if (!ir_same_shape(r, v)) return diag_set(b->d, ERR_SHAPE_MISMATCH, LOC(b), op, TS(r, x), TS(v, y));
  return MGPU_OK;
}

/* The MMA kind of operand dtypes da x db into an accumulator of dtype dc
** (kind::f16, ::tf32, ::f8f6f4, ::i8), or NULL + why; ptx_tcgen05.c asks too. */
const char *ir_mma_kind(int da, int db, int dc, const char **why) {
  *why = NULL;
  if (is_i8(da) || is_i8(db) || dc == MGPU_I32) {
    if (is_i8(da) && is_i8(db) && dc == MGPU_I32) return "i8";
    *why = "8-bit integer operands (i8, u8) go with an i32 accumulator, and only they";
    return NULL;
  }
  bool ok = (is_f8(da) && is_f8(db)) || (da == db && (da == MGPU_F16 || da == MGPU_BF16 || da == MGPU_F32));
  if (!ok) {
    *why = "operand dtypes must be bf16, f16, f32 (as tf32) or 8-bit integers alike, or f8e4m3 / f8e5m2 in any mix";
    return NULL;
  }
  if (dc != MGPU_F32) {   /* f16 accumulators take unpacked TMEM columns, which mgpu.TMEM does not make */
    *why = "floating-point operands accumulate into f32 (f16 accumulators are not supported yet)";
    return NULL;
  }
  return is_f8(da) ? "f8f6f4" : da == MGPU_F32 ? "tf32" : "f16";
}

/* tcgen05_mma (acc, a, b[, accumulate]) ints = accumulate, collective: per
** block acc (128, N) += a (128, K) @ b (K, N); collective (a cluster pair's
** 2-CTA MMA) each block holds 128 rows of A and acc and half of B's N
** columns: acc (128, N) += a (128, K) @ [b of block 0 | b of block 1]. */
static mgpu_status tcmma_check(ir_builder *b, const uint32_t *opds, uint32_t nopd, const int64_t *ints, uint32_t nints) {
  const char *op = "tcgen05_mma";
  mgpu_status s;
  char x[96], y[96], z[96];
  if (nints != 2 || ints[0] < 0 || ints[0] > 2 || (ints[1] != 0 && ints[1] != 1))
    return failf(b, "%s: expected (accumulate 0/1/2, collective 0/1)", op);
  if ((s = want_count(b, op, nopd, ints[0] == 2 ? 4 : 3, ints[0] == 2 ? 4 : 3))) return s;
  if ((s = want_space(b, op, opds, 0, MGPU_SPACE_TMEM, "a TMEM ref (the accumulator, mgpu.TMEM)"))) return s;
  const ir_type *acc = ir_vtype(b->k, opds[0]), *a = ir_vtype(b->k, opds[1]), *bt = ir_vtype(b->k, opds[2]);
  if (a->kind != MGPU_VALUE_REF || (a->space != MGPU_SPACE_SMEM && a->space != MGPU_SPACE_TMEM))
    return diag_set(b->d, ERR_OPERAND_KIND, LOC(b), op, 2, "an SMEM or TMEM ref", TS(a, x));
  if ((s = want_space(b, op, opds, 2, MGPU_SPACE_SMEM, "an SMEM ref"))) return s;
  if (ints[0] == 2 && (s = want_pred(b, op, opds, 3))) return s;
  bool pair = ints[1] != 0;
  int64_t N = acc->shape[1], K = a->rank == 2 ? a->shape[1] : 0;
  if (a->rank != 2 || bt->rank != 2 || a->shape[0] != acc->shape[0] || bt->shape[0] != K || bt->shape[1] * (pair ? 2 : 1) != N)
    return failf(b, "%s: shapes do not chain: acc %s += a %s @ b %s (need (M, N) += (M, K) @ (K, N)%s)", op, TS(acc, x),
                 TS(a, y), TS(bt, z), pair ? ", b holding N/2 columns in each block of the pair" : "");
  const char *why;
  const char *kind = ir_mma_kind(a->dtype, bt->dtype, acc->dtype, &why);
  if (!kind) return failf(b, "%s: %s x %s into %s: %s", op, dt_name(a->dtype), dt_name(bt->dtype), dt_name(acc->dtype), why);
  int64_t most = pair ? 256 : 512;   /* N per instruction: 16..256; one block's wider N in several */
  if (N % 16 || N > most)
    return failf(b, "%s: N = %lld is not an MMA shape for M = %d%s: N must be a multiple of 16 up to %lld%s", op, (long long)N,
                 pair ? 256 : 128, pair ? " (a 2-CTA MMA)" : "", (long long)most,
                 pair ? " (each block's B holds half)" : " (256 per instruction)");
  int kin = 32 / dt_bytes(a->dtype);
  if (K % kin)
    return failf(b, "%s: K = %lld must be a multiple of %d for %s operands (each instruction takes 32 bytes of K)", op,
                 (long long)K, kin, dt_name(a->dtype));
  return cta_group_check(b, op, pair ? 2 : 1);
}

/* Operand i is the 16-byte SMEM ref a cluster-cancel answer lands in. */
static mgpu_status want_cancel_result(ir_builder *b, const char *op, const uint32_t *opds, int i) {
  mgpu_status s = want_space(b, op, opds, i, MGPU_SPACE_SMEM, "an SMEM ref of 16 bytes (mgpu.TryClusterCancelResult)");
  if (s) return s;
  const ir_type *t = ir_vtype(b->k, opds[i]);
  char x[96];
  if (ir_numel(t) * dt_bytes(t->dtype) != 16)
    return failf(b, "%s: the result must be 16 bytes of SMEM (mgpu.TryClusterCancelResult(n):at(i)), not %s", op, TS(t, x));
  return MGPU_OK;
}

/* wgmma (acc, a, b): acc (M, N) += a (M, K) @ b (K, N). */
static mgpu_status wgmma_check(ir_builder *b, const uint32_t *opds) {
  const char *op = "wgmma";
  mgpu_status s;
  char x[96], y[96], z[96];
  if ((s = want_space(b, op, opds, 0, MGPU_SPACE_REGS, "an accumulator (mgpu.ACC)"))) return s;
  const ir_type *acc = ir_vtype(b->k, opds[0]), *a = ir_vtype(b->k, opds[1]), *bt = ir_vtype(b->k, opds[2]);
  bool areg = a->kind == MGPU_VALUE_ARRAY;
  if (!areg && (a->kind != MGPU_VALUE_REF || a->space != MGPU_SPACE_SMEM))
    return diag_set(b->d, ERR_OPERAND_KIND, LOC(b), op, 2, "an SMEM ref or a register array", TS(a, x));
  if ((s = want_space(b, op, opds, 2, MGPU_SPACE_SMEM, "an SMEM ref"))) return s;
  if (a->rank != 2 || bt->rank != 2 || a->shape[0] != acc->shape[0] || bt->shape[1] != acc->shape[1] || a->shape[1] != bt->shape[0])
    return failf(b, "wgmma: shapes do not chain: acc %s += a %s @ b %s (need (M, N) += (M, K) @ (K, N))",
                 TS(acc, x), TS(a, y), TS(bt, z));
  int da = a->dtype, db = bt->dtype, dc = acc->dtype;
  int64_t N = acc->shape[1], K = a->shape[1];
  if (is_i8(da) || is_i8(db) || dc == MGPU_I32) {   /* s32 += s8/u8 x s8/u8 */
    if (!is_i8(da))
      return failf(b, "wgmma: an i32 accumulator needs i8 or u8 operands (s32 += s8/u8 x s8/u8), not A %s", dt_name(da));
    if (!is_i8(db) || dc != MGPU_I32)
      return failf(b, "wgmma: an %s A needs an i8 or u8 B and an i32 accumulator, not B %s and a %s accumulator",
                   dt_name(da), dt_name(db), dt_name(dc));
    if (N % 16 && N != 8 && N != 24)
      return failf(b, "wgmma: N = %lld is not a width wgmma has for 8-bit integer operands: N must be 8, 24 or a multiple "
                   "of 16 up to 256", (long long)N);
  } else {
    bool ok = (da == db && (da == MGPU_BF16 || da == MGPU_F16 || da == MGPU_F32)) || (is_f8(da) && is_f8(db));
    if (!ok)
      return failf(b, "wgmma: operand dtypes %s and %s are not supported (bf16, f16, f32 as tf32, f8e4m3/f8e5m2 in any "
                   "mix, or i8/u8 with an i32 accumulator)", dt_name(da), dt_name(db));
    if (dc == MGPU_F16 && (da == MGPU_BF16 || da == MGPU_F32))
      return failf(b, "wgmma: an f16 accumulator needs f16 or f8 operands, not %s", dt_name(da));
  }
  if (areg && dt_bytes(da) == 4) return failf(b, "wgmma: A from registers must be 16- or 8-bit, not %s (load f32 A from SMEM)", dt_name(da));
  int kin = 32 / dt_bytes(da);
  if (K % kin)
    return failf(b, "wgmma: K = %lld must be a multiple of %d for %s operands (each instruction takes 32 bytes of K)",
                 (long long)K, kin, dt_name(da));
  return MGPU_OK;
}

/* -- The op entry point --------------------------------------------------------------- */

/* The names users call the Blackwell ops by. */
static const char *tmem_op_name(int code) {
  switch (code) {
  case IR_tmem_alloc: return "TMEM";
  case IR_tmem_load: return "async_load_tmem";
  case IR_tmem_store: return "async_store_tmem";
  case IR_tmem_wait_load: return "wait_load_tmem";
  case IR_tcgen05_mma: return "tcgen05_mma";
  case IR_tcgen05_commit: return "tcgen05_commit_arrive";
  case IR_cluster_cancel: return "try_cluster_cancel";
  case IR_cancel_query: return "query_cluster_cancel";
  default: return "commit_tmem";
  }
}

/* Ops of one architecture: wgmma is Hopper's (sm_90a code does not run on
** Blackwell), tcgen05 and its tensor memory Blackwell's. */
static mgpu_status target_check(ir_builder *b, int code) {
  bool hopper = b->k->opts.target == MGPU_TARGET_SM90A;
  const char *what;
  switch (code) {
  case IR_wgmma: what = "wgmma"; break;
  case IR_wgmma_wait: what = "wgmma_wait"; break;
  case IR_acc_alloc: what = "ACC (a wgmma accumulator)"; break;
  case IR_tmem_alloc: case IR_tmem_load: case IR_tmem_store: case IR_tmem_wait_load: case IR_tmem_commit:
  case IR_tcgen05_mma: case IR_tcgen05_commit: case IR_cluster_cancel: case IR_cancel_query:
    if (!hopper) return MGPU_OK;
    return failf(b, "%s is Blackwell-only (sm_100a tensor memory, tcgen05 and cluster launch control) but this kernel's target is sm_90a: compile for sm_100a "
                 "(mgpu.configure{ target = \"sm_100a\" }, MGPU_TARGET or --target); on Hopper use mgpu.ACC or mgpu.SMEM",
                 tmem_op_name(code));
  default: return MGPU_OK;
  }
  if (hopper) return MGPU_OK;
  return failf(b, "%s is Hopper-only (sm_90a) but this kernel's target is %s: on Blackwell use mgpu.tcgen05_mma into an "
               "mgpu.TMEM accumulator (or compile for sm_90a: mgpu.configure{ target = \"sm_90a\" }, MGPU_TARGET, --target)",
               what, ir_target_name(b->k->opts.target));
}

/* Another block's SMEM (a cluster_ref) is read and written with generic
** loads and stores (ld/st.shared::cluster); the asynchronous units and
** reshapes take only the block's own SMEM. */
static mgpu_status cluster_ref_check(ir_builder *b, int code, const char *name, const uint32_t *opds, uint32_t nopd) {
  if (ir_cluster_blocks(&b->k->opts) < 2) return MGPU_OK;   /* (no cluster_ref without a cluster: every op traced) */
  if (code == IR_view || code == IR_transpose_ref || code == IR_cluster_ref || code == IR_load || code == IR_store) return MGPU_OK;
  for (uint32_t i = 0; i < nopd; i++) {
    const ir_type *t = ir_vtype(b->k, opds[i]);
    if (t->kind == MGPU_VALUE_REF && t->space == MGPU_SPACE_SMEM && ir_ref_in_cluster(b->k, opds[i]))
      return failf(b, "%s: operand %u views another block's SMEM (cluster_ref), which only loads, stores and views "
                   "take; pass the block's own SMEM ref", name, i + 1);
  }
  return MGPU_OK;
}

/* Inside a single_warp region only the warpgroup's first warp runs: refuse
** what needs all four warps -- register arrays (spread over the
** warpgroup), wgmma, setmaxnreg, and what the lowering synchronises with
** a warpgroup barrier (SMEM stores and commits, arrivals, atomics, copy
** waits) -- and SMEM or barrier allocations.  Every barrier_wait, inside
** or not, records which kind of region waits on its barrier: each thread
** follows the phases it waited for, so a barrier may be waited on in one
** kind only. */
static mgpu_status single_warp_check(ir_builder *b, int code, const uint32_t *opds, uint32_t nopd,
                                     const ir_type *rt, uint32_t nrt) {
  bool inside = b->frames.n && b->frames.v[b->frames.n - 1].one_warp;
  if (code == IR_barrier_wait) {   /* each thread tracks the phases it waited for: one kind of region per barrier */
    uint32_t root = ir_ref_base(b->k, opds[0]);
    uint32_t i = 0, bit = inside ? 1 : 2;
    while (i < b->bar_waits.n && b->bar_waits.v[i] >> 2 != root) i++;
    if (i == b->bar_waits.n) {
      if (!vec_reserve(b->alloc, &b->bar_waits, 1)) return diag_set(b->d, ERR_NOMEM, "");
      b->bar_waits.v[b->bar_waits.n++] = root << 2;
    }
    b->bar_waits.v[i] |= bit;
    if ((b->bar_waits.v[i] & 3) == 3)
      return failf(b, "barrier_wait: this barrier is waited on both inside and outside single_warp; only the "
                      "first warp follows its phases inside, so wait on each barrier in one kind of region");
  }
  if (!inside) return MGPU_OK;
  const char *name = ir_optab[code].name, *why = NULL;
  for (uint32_t i = 0; i < nopd && !why; i++)
    if (ir_vtype(b->k, opds[i])->kind == MGPU_VALUE_ARRAY) why = "an array operand (arrays live in all four warps)";
  for (uint32_t r = 0; r < nrt && !why; r++)
    if (rt[r].kind == MGPU_VALUE_ARRAY) why = "an array result (arrays live in all four warps)";
  switch (code) {
  case IR_wgmma: case IR_wgmma_wait: case IR_acc_alloc: case IR_set_max_registers:
    why = "a warpgroup instruction"; break;
  case IR_commit_smem: case IR_wait_group: case IR_barrier_arrive: case IR_atomic: case IR_sem_wait:
  case IR_tmem_wait_load: case IR_tmem_commit: case IR_cluster_cancel:
    why = "a warpgroup barrier in its lowering"; break;
  case IR_smem_alloc: case IR_barrier_alloc: case IR_profile: case IR_tmem_alloc:
    why = "an allocation for the whole warpgroup"; break;
  case IR_store:
    if (ir_vtype(b->k, opds[0])->space == MGPU_SPACE_SMEM) why = "a warpgroup barrier in its lowering (SMEM stores)";
    break;
  default: break;
  }
  if (!why) return MGPU_OK;
  return failf(b, "%s cannot run inside single_warp: it needs %s; move it out of the single_warp region", name, why);
}

mgpu_status irb_op(ir_builder *b, const char *name, const uint32_t *opds, uint32_t nopd,
                   const int64_t *ints, uint32_t nints, double num, const char *text,
                   uint32_t *res, uint32_t maxres, uint32_t *nres) {
  ir_kernel *k = b->k;
  mgpu_status s;
  char x[96];
  *nres = 0;
  if (b->finished) return diag_set(b->d, ERR_FINISHED, "");
  if (!name) return diag_set(b->d, ERR_NULL_ARG, LOC(b), "op");
  for (uint32_t i = 0; i < nopd; i++)
    if ((s = check_value(b, name, opds[i]))) return s;
  if (strcmp(name, "else") == 0) return do_else(b, opds, nopd);
  int code = ir_op_lookup(name);
  if (code < 0) return diag_set(b->d, ERR_UNKNOWN_OP, LOC(b), name);
  if (code == IR_yield) return do_yield(b, opds, nopd, res, maxres, nres);

  if ((s = target_check(b, code))) return s;
  if ((s = cluster_ref_check(b, code, name, opds, nopd))) return s;
  const ir_opinfo *info = &ir_optab[code];
  ir_type rt[IR_MAXRES];
  uint32_t nrt = 1;
  memset(&rt[0], 0, sizeof rt[0]);
  switch (info->cls) {
  case IRC_CONST: {
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    if (nints < 1 || !dt_valid(ints[0])) return diag_set(b->d, ERR_BAD_ATTR, LOC(b), name, "ints[0] must be a dtype");
    int dt = (int)ints[0];
    if (dt_isint(dt) || dt == MGPU_PRED) {
      if (num != trunc(num) || isnan(num))
        return failf(b, "constant %.17g is not an integer, but the dtype is %s", num, dt_name(dt));
      /* integer constants wrap to their dtype, from 64 bits: the value must have them */
      if (num < -9223372036854775808.0 || num >= (dt == MGPU_U64 ? 18446744073709551616.0 : 9223372036854775808.0))
        return failf(b, "constant %.17g is outside the 64-bit range of %s", num, dt_name(dt));
    }
    rt[0].kind = MGPU_VALUE_SCALAR; rt[0].dtype = (uint8_t)dt;
    break;
  }
  case IRC_GRIDIDX:
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    if (nints < 1 || ints[0] < 0 || ints[0] >= k->opts.grid_rank)
      return failf(b, "%s: axis %lld is out of range for a grid of rank %d", name,
                   nints ? (long long)ints[0] : -1LL, k->opts.grid_rank);
    rt[0].kind = MGPU_VALUE_SCALAR; rt[0].dtype = MGPU_I32;
    break;
  case IRC_THREADIDX:
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    rt[0].kind = MGPU_VALUE_SCALAR; rt[0].dtype = MGPU_I32;
    break;
  case IRC_UNARY:
  case IRC_BINARY:
  case IRC_COMPARE: {
    uint32_t want = info->cls == IRC_UNARY ? 1 : 2;
    if ((s = want_count(b, name, nopd, want, want))) return s;
    for (uint32_t i = 0; i < nopd; i++) if ((s = want_data(b, name, opds, (int)i))) return s;
    if ((s = same_dtype(b, name, opds, nopd))) return s;
    int dt = ir_vtype(k, opds[0])->dtype;
    if (!op_accepts(code, dt)) return diag_set(b->d, ERR_DTYPE_CLASS, LOC(b), name, dt_name(dt));
    if ((s = ew_shape(b, name, opds, nopd, &rt[0]))) return s;
    rt[0].dtype = (uint8_t)(info->cls == IRC_COMPARE ? MGPU_PRED : dt);
    break;
  }
  case IRC_SELECT: {
    if ((s = want_count(b, name, nopd, 3, 3))) return s;
    for (uint32_t i = 0; i < 3; i++) if ((s = want_data(b, name, opds, (int)i))) return s;
    if (ir_vtype(k, opds[0])->dtype != MGPU_PRED)
      return diag_set(b->d, ERR_OPERAND_KIND, LOC(b), name, 1, "a pred (a comparison result)", TS(ir_vtype(k, opds[0]), x));
    if ((s = same_dtype(b, name, opds + 1, 2))) return s;
    if ((s = ew_shape(b, name, opds, 3, &rt[0]))) return s;
    rt[0].dtype = ir_vtype(k, opds[1])->dtype;
    break;
  }
  case IRC_CONVERT: {
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_data(b, name, opds, 0))) return s;
    if (nints < 1 || !dt_valid(ints[0])) return diag_set(b->d, ERR_BAD_ATTR, LOC(b), name, "ints[0] must be a dtype");
    const ir_type *t = ir_vtype(k, opds[0]);
    int to = (int)ints[0];
    if (code == IR_bitcast && (dt_table[to].bits != dt_table[t->dtype].bits || to == MGPU_PRED))
      return failf(b, "bitcast from %s to %s: the widths differ", dt_name(t->dtype), dt_name(to));
    bool f8 = to == MGPU_F8E4M3 || to == MGPU_F8E5M2 || t->dtype == MGPU_F8E4M3 || t->dtype == MGPU_F8E5M2;
    if (code == IR_astype && f8 && to != t->dtype)
      return failf(b, "astype between %s and %s: f8 conversions are not supported yet (bitcast to u8 works)",
                   dt_name(t->dtype), dt_name(to));
    rt[0] = *t;
    rt[0].dtype = (uint8_t)to;
    break;
  }
  case IRC_BROADCAST: {
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_kind(b, name, opds, 0, MGPU_VALUE_SCALAR))) return s;
    if (nints < 1 || nints > IR_MAXRANK) return diag_set(b->d, ERR_BAD_SHAPE, LOC(b), name, "shape must have rank 1 to 8");
    rt[0].kind = MGPU_VALUE_ARRAY;
    rt[0].dtype = ir_vtype(k, opds[0])->dtype;
    rt[0].rank = (uint8_t)nints;
    for (uint32_t i = 0; i < nints; i++) {
      if (ints[i] < 1) return diag_set(b->d, ERR_BAD_SHAPE, LOC(b), name, "every dimension must be at least 1");
      rt[0].shape[i] = ints[i];
    }
    break;
  }
  case IRC_BCASTDIM: {
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_data(b, name, opds, 0))) return s;
    const ir_type *t = ir_vtype(k, opds[0]);
    int64_t R = nints ? ints[0] : -1;
    if (R < 1 || R > IR_MAXRANK || nints != (uint32_t)(1 + R + t->rank))
      return failf(b, "%s: expected the target rank, its shape and one target dim per operand dim", name);
    rt[0].kind = MGPU_VALUE_ARRAY;
    rt[0].dtype = t->dtype;
    rt[0].rank = (uint8_t)R;
    for (int64_t i = 0; i < R; i++) {
      if (ints[1 + i] < 1) return failf(b, "%s: every dimension must be at least 1", name);
      rt[0].shape[i] = ints[1 + i];
    }
    for (int i = 0; i < t->rank; i++) {
      int64_t d = ints[1 + R + i];
      if (d < 0 || d >= R || (i > 0 && d <= ints[1 + R + i - 1]))
        return failf(b, "%s: target dims must be increasing and below the target rank %lld", name, (long long)R);
      if (t->shape[i] != rt[0].shape[d])
        return failf(b, "%s: operand dim %d has size %lld but target dim %lld has size %lld", name, i,
                     (long long)t->shape[i], (long long)d, (long long)rt[0].shape[d]);
    }
    break;
  }
  case IRC_RESHAPE: {
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_kind(b, name, opds, 0, MGPU_VALUE_ARRAY))) return s;
    const ir_type *t = ir_vtype(k, opds[0]);
    if (nints < 1 || nints > IR_MAXRANK) return diag_set(b->d, ERR_BAD_SHAPE, LOC(b), name, "shape must have rank 1 to 8");
    rt[0] = *t;
    rt[0].rank = (uint8_t)nints;
    int64_t n = 1;
    for (uint32_t i = 0; i < nints; i++) {
      if (ints[i] < 1) return diag_set(b->d, ERR_BAD_SHAPE, LOC(b), name, "every dimension must be at least 1");
      rt[0].shape[i] = ints[i];
      n *= ints[i];
    }
    if (n != ir_numel(t)) return failf(b, "%s: %s has %lld elements, the new shape %lld", name, TS(t, x),
                                       (long long)ir_numel(t), (long long)n);
    break;
  }
  case IRC_IOTA: {
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    if (nints < 3 || nints > 2 + IR_MAXRANK || !dt_valid(ints[0]) || ints[0] == MGPU_PRED)
      return diag_set(b->d, ERR_BAD_ATTR, LOC(b), name, "ints = dtype, dim, shape...");
    rt[0].kind = MGPU_VALUE_ARRAY;
    rt[0].dtype = (uint8_t)ints[0];
    rt[0].rank = (uint8_t)(nints - 2);
    if (ints[1] < 0 || ints[1] >= rt[0].rank)
      return failf(b, "%s: dimension %lld is out of range for rank %d", name, (long long)ints[1], rt[0].rank);
    for (uint32_t i = 2; i < nints; i++) {
      if (ints[i] < 1) return diag_set(b->d, ERR_BAD_SHAPE, LOC(b), name, "every dimension must be at least 1");
      rt[0].shape[i - 2] = ints[i];
    }
    if (text && *text && (s = check_layout(b, name, text, &rt[0]))) return s;
    break;
  }
  case IRC_LAYOUTCAST:
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_kind(b, name, opds, 0, MGPU_VALUE_ARRAY))) return s;
    rt[0] = *ir_vtype(k, opds[0]);
    if (!text || !*text) return failf(b, "%s: a layout is required", name);
    if ((s = check_layout(b, name, text, &rt[0]))) return s;
    break;
  case IRC_REDUCE: {
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_kind(b, name, opds, 0, MGPU_VALUE_ARRAY))) return s;
    const ir_type *t = ir_vtype(k, opds[0]);
    if (t->dtype == MGPU_PRED || t->dtype == MGPU_F8E4M3 || t->dtype == MGPU_F8E5M2)
      return diag_set(b->d, ERR_DTYPE_CLASS, LOC(b), name, dt_name(t->dtype));
    if (nints < 1) return failf(b, "%s: at least one axis is required", name);
    bool gone[IR_MAXRANK] = { false };
    for (uint32_t i = 0; i < nints; i++) {
      if (ints[i] < 0 || ints[i] >= t->rank)
        return failf(b, "%s: axis %lld does not exist in %s (rank %d)", name, (long long)ints[i], TS(t, x), t->rank);
      if (gone[ints[i]]) return failf(b, "%s: axis %lld is listed twice", name, (long long)ints[i]);
      gone[ints[i]] = true;
    }
    rt[0] = *t;
    rt[0].rank = 0;
    for (int i = 0; i < t->rank; i++) if (!gone[i]) rt[0].shape[rt[0].rank++] = t->shape[i];
    if (rt[0].rank == 0) rt[0].kind = MGPU_VALUE_SCALAR;
    break;
  }
  case IRC_VIEW:
    if ((s = want_count(b, name, nopd, 1, UINT32_MAX))) return s;
    if ((s = want_kind(b, name, opds, 0, MGPU_VALUE_REF))) return s;
    if ((s = view_type(b, opds, nopd, ints, nints, &rt[0]))) return s;
    break;
  case IRC_LOAD: {
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_data_ref(b, name, opds, 0))) return s;
    const ir_type *t = ir_vtype(k, opds[0]);
    rt[0] = *t;
    rt[0].space = MGPU_SPACE_NONE;
    rt[0].kind = t->rank ? MGPU_VALUE_ARRAY : MGPU_VALUE_SCALAR;
    if (text && *text && (s = check_layout(b, name, text, &rt[0]))) return s;
    break;
  }
  case IRC_STORE: {
    if ((s = want_count(b, name, nopd, 2, 2))) return s;
    if ((s = want_data_ref(b, name, opds, 0))) return s;
    if ((s = stored_value(b, name, opds))) return s;
    nrt = 0;
    break;
  }
  case IRC_CLUSTERREF:   /* (SMEM ref, rank) */
    if ((s = want_count(b, name, nopd, 2, 2))) return s;
    if ((s = want_space(b, name, opds, 0, MGPU_SPACE_SMEM, "an SMEM ref"))) return s;
    if ((s = want_i32(b, name, opds, 1, "the block's rank in the cluster"))) return s;
    if ((s = want_cluster(b, name))) return s;
    rt[0] = *ir_vtype(k, opds[0]);
    break;
  case IRC_VIEWPERM: {
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_kind(b, name, opds, 0, MGPU_VALUE_REF))) return s;
    const ir_type *t = ir_vtype(k, opds[0]);
    bool seen[IR_MAXRANK] = { false };
    if (t->space == MGPU_SPACE_TMEM) return failf(b, "transpose_ref: TMEM refs cannot be transposed (rows are lanes)");
    if (nints != t->rank) return failf(b, "%s: the permutation has %u axes but the ref has rank %d", name, nints, t->rank);
    rt[0] = *t;
    for (uint32_t i = 0; i < nints; i++) {
      if (ints[i] < 0 || ints[i] >= t->rank || seen[ints[i]])
        return failf(b, "%s: the axes must be a permutation of 0..%d", name, t->rank - 1);
      seen[ints[i]] = true;
      rt[0].shape[i] = t->shape[ints[i]];
    }
    break;
  }
  case IRC_VIEWRESHAPE: {
    char why[400];
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_kind(b, name, opds, 0, MGPU_VALUE_REF))) return s;
    if (nints > IR_MAXRANK) return failf(b, "reshape: rank %u is more than %d", nints, IR_MAXRANK);
    if (!ir_reshape_check(k, opds[0], ints, (int)nints, why, sizeof why)) return failf(b, "reshape: %s", why);
    rt[0] = *ir_vtype(k, opds[0]);
    rt[0].rank = (uint8_t)nints;
    memcpy(rt[0].shape, ints, sizeof(int64_t) * nints);
    break;
  }
  case IRC_ALLOC: {
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    if (nints < 1 || !dt_valid((int)ints[0]) || ints[0] == MGPU_PRED)
      return failf(b, "SMEM: the dtype must be a numeric dtype");
    if (nints - 1 > IR_MAXRANK) return failf(b, "SMEM: rank %u is more than %d", nints - 1, IR_MAXRANK);
    memset(&rt[0], 0, sizeof rt[0]);
    rt[0].kind = MGPU_VALUE_REF;
    rt[0].dtype = (uint8_t)ints[0];
    rt[0].space = MGPU_SPACE_SMEM;
    rt[0].rank = (uint8_t)(nints - 1);
    for (uint32_t i = 1; i < nints; i++) {
      if (ints[i] < 1 || ints[i] > (INT64_C(1) << 24)) return failf(b, "SMEM: dimension %u has size %lld", i - 1, (long long)ints[i]);
      rt[0].shape[i - 1] = ints[i];
    }
    xf_chain c;
    xf_map m;
    char why[300];
    if (!xf_parse(text, &c, why, sizeof why)) return failf(b, "SMEM transforms: %s", why);
    if (!xf_apply(&c, rt[0].shape, rt[0].rank, dt_bytes(rt[0].dtype), &m, why, sizeof why)) {
      ir_type shown = rt[0];
      shown.kind = MGPU_VALUE_ARRAY;
      return failf(b, "SMEM %s with transforms %s: %s", TS(&shown, x), text, why);
    }
    break;
  }
  case IRC_SCOPED:
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    nrt = 0;
    break;
  case IRC_CLUSTERIDX:
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    if (nints < 1 || ints[0] < 0 || ints[0] >= k->opts.cluster_rank)
      return failf(b, "%s: axis %lld is out of range for a cluster of rank %d", name,
                   nints ? (long long)ints[0] : -1LL, k->opts.cluster_rank);
    rt[0].kind = MGPU_VALUE_SCALAR; rt[0].dtype = MGPU_I32;
    break;
  case IRC_BARALLOC:
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    if ((s = barrier_type(b, ints, nints, &rt[0]))) return s;
    break;
  case IRC_BARRIER:
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_barrier(b, name, opds, 0))) return s;
    nrt = 0;
    break;
  case IRC_TMALOAD: case IRC_TMASTORE:
    if ((s = copy_check(b, info->cls == IRC_TMALOAD, opds, nopd, ints, nints))) return s;
    nrt = 0;
    break;
  case IRC_ASYNCSMEM:
    if ((s = async_smem_check(b, opds, nopd, ints, nints))) return s;
    nrt = 0;
    break;
  case IRC_SYNC:
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    if ((s = sync_check(b, code, ints, nints))) return s;
    nrt = 0;
    break;
  case IRC_ACCALLOC:
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    if ((s = acc_type(b, ints, nints, &rt[0]))) return s;
    break;
  case IRC_TMEMALLOC:
    if ((s = want_count(b, name, nopd, 0, 0))) return s;
    if ((s = tmem_type(b, ints, nints, &rt[0]))) return s;
    break;
  case IRC_TMEMLOAD:
    if ((s = tmem_access_check(b, false, opds, nopd))) return s;
    rt[0] = *ir_vtype(k, opds[0]);
    rt[0].kind = MGPU_VALUE_ARRAY;
    rt[0].space = MGPU_SPACE_NONE;
    if (text && *text && (s = check_layout(b, "async_load_tmem", text, &rt[0]))) return s;
    break;
  case IRC_TMEMSTORE:
    if ((s = tmem_access_check(b, true, opds, nopd))) return s;
    nrt = 0;
    break;
  case IRC_TCMMA:
    if ((s = tcmma_check(b, opds, nopd, ints, nints))) return s;
    nrt = 0;
    break;
  case IRC_CANCEL:
    if ((s = want_count(b, "try_cluster_cancel", nopd, 2, 2))) return s;
    if ((s = want_cancel_result(b, "try_cluster_cancel", opds, 0))) return s;
    if ((s = want_barrier(b, "try_cluster_cancel", opds, 1))) return s;
    nrt = 0;
    break;
  case IRC_CANCELQ:
    if ((s = want_count(b, "query_cluster_cancel", nopd, 1, 1))) return s;
    if ((s = want_cancel_result(b, "query_cluster_cancel", opds, 0))) return s;
    nrt = (uint32_t)k->opts.grid_rank + 1;
    for (uint32_t r = 0; r < nrt; r++) {
      memset(&rt[r], 0, sizeof rt[r]);
      rt[r].kind = MGPU_VALUE_SCALAR;
      rt[r].dtype = r + 1 < nrt ? MGPU_I32 : MGPU_PRED;
    }
    break;
  case IRC_TCCOMMIT:
    if ((s = want_count(b, "tcgen05_commit_arrive", nopd, 1, 1))) return s;
    if ((s = want_barrier(b, "tcgen05_commit_arrive", opds, 0))) return s;
    if (nints != 1 || (ints[0] != 0 && ints[0] != 1)) return failf(b, "tcgen05_commit_arrive: expected (collective 0/1)");
    if (!ir_barrier_orders_tc(k, ir_ref_base(k, opds[0])))
      return failf(b, "tcgen05_commit_arrive: the barrier must be made with orders_tensor_core = true (its waiters go on to "
                   "read what the tensor core wrote)");
    if ((s = cta_group_check(b, "tcgen05_commit_arrive", ints[0] ? 2 : 1))) return s;
    nrt = 0;
    break;
  case IRC_WGMMA:
    if ((s = want_count(b, name, nopd, 3, 3))) return s;
    if ((s = wgmma_check(b, opds))) return s;
    nrt = 0;
    break;
  case IRC_PRINT:
    if ((s = print_check(b, opds, nopd, text))) return s;
    nrt = 0;
    break;
  case IRC_PROF:
    if ((s = profile_check(b, opds, nopd, ints, nints))) return s;
    nrt = 0;
    break;
  case IRC_ATOMIC:
    if ((s = atomic_check(b, opds, nopd, ints, nints))) return s;
    memset(&rt[0], 0, sizeof rt[0]);
    rt[0].kind = MGPU_VALUE_SCALAR;
    rt[0].dtype = ir_vtype(k, opds[0])->dtype;
    break;
  case IRC_MMSTORE: {
    if ((s = want_count(b, name, nopd, 3, 3))) return s;
    if ((s = multimem_check(b, name, opds, 2))) return s;
    if ((s = stored_value(b, name, opds))) return s;
    nrt = 0;
    break;
  }
  case IRC_MMLOAD: {
    if ((s = want_count(b, name, nopd, 2, 2))) return s;
    if ((s = multimem_check(b, name, opds, 1))) return s;
    const ir_type *t = ir_vtype(k, opds[0]);
    if (nints != 1 || ints[0] < 0 || ints[0] > 2) return failf(b, "%s: the reduction must be add, min or max", name);
    if (t->dtype == MGPU_F32 && ints[0] != 0) return failf(b, "%s: f32 reduces only with add (min and max: i32, u32)", name);
    rt[0] = *t;
    rt[0].space = MGPU_SPACE_NONE;
    rt[0].kind = t->rank ? MGPU_VALUE_ARRAY : MGPU_VALUE_SCALAR;
    break;
  }
  case IRC_REMOTE:   /* (GMEM ref, device, peer table) */
    if ((s = want_count(b, name, nopd, 3, 3))) return s;
    if ((s = want_space(b, name, opds, 0, MGPU_SPACE_GMEM, "a GMEM ref"))) return s;
    if ((s = want_i32(b, name, opds, 1, "the device id"))) return s;
    if ((s = want_peer_table(b, name, opds, 2))) return s;
    rt[0] = *ir_vtype(k, opds[0]);
    break;
  case IRC_SEMWAIT: {   /* (one i32 element of GMEM, value) */
    if ((s = want_count(b, name, nopd, 2, 2))) return s;
    if ((s = want_space(b, name, opds, 0, MGPU_SPACE_GMEM, "a GMEM ref"))) return s;
    const ir_type *r = ir_vtype(k, opds[0]);
    if (r->rank != 0 || r->dtype != MGPU_I32)
      return failf(b, "semaphore_wait: the semaphore must be one i32 element (index every dim), not %s", TS(r, x));
    if ((s = want_i32(b, "semaphore_wait", opds, 1, "the value"))) return s;
    nrt = 0;
    break;
  }
  case IRC_FOR: {
    if ((s = want_count(b, name, nopd, 3, 3 + IR_MAXRES - 1))) return s;
    for (int i = 0; i < 3; i++) if ((s = want_index(b, name, opds, i))) return s;
    if ((s = same_dtype(b, name, opds, 3))) return s;
    for (uint32_t i = 3; i < nopd; i++) {
      if ((s = want_data(b, name, opds, (int)i))) return s;
      rt[i - 3] = *ir_vtype(k, opds[i]);
    }
    nrt = nopd - 3;
    break;
  }
  case IRC_WHILE:
    if ((s = want_count(b, name, nopd, 0, IR_MAXRES))) return s;
    for (uint32_t i = 0; i < nopd; i++) {
      if ((s = want_data(b, name, opds, (int)i))) return s;
      rt[i] = *ir_vtype(k, opds[i]);
    }
    nrt = nopd;
    break;
  case IRC_IF:
    if ((s = want_count(b, name, nopd, 1, 1))) return s;
    if ((s = want_kind(b, name, opds, 0, MGPU_VALUE_SCALAR))) return s;
    if (ir_vtype(k, opds[0])->dtype != MGPU_PRED)
      return diag_set(b->d, ERR_OPERAND_KIND, LOC(b), name, 1, "a pred scalar (a comparison result)", TS(ir_vtype(k, opds[0]), x));
    nrt = 0;
    break;
  default:
    mgpu_unreachable();
  }

  for (uint32_t r = 0; r < nrt; r++)   /* before the op is appended: a failed op adds nothing */
    if ((s = check_numel(b, name, &rt[r]))) return s;
  if ((s = single_warp_check(b, code, opds, nopd, rt, nrt))) return s;
  uint32_t tid = ir_str_intern(k, text);
  if (text && *text && !tid) return diag_set(b->d, ERR_NOMEM, "");
  int32_t i = append_op(b, code, opds, nopd, ints, nints, num, tid);
  if (i < 0) return diag_set(b->d, ERR_NOMEM, "");
  if (info->cls == IRC_FOR) {
    /* results belong to the enclosing scope; the iv and carried args to the body */
    if ((s = add_results(b, i, rt, nrt))) return s;
    if ((s = open_region(b, (uint32_t)i, 0))) return s;
    ir_type iv = *ir_vtype(k, opds[0]);
    uint32_t v = new_value(b, &iv, i, 0, IRV_ARG);
    if (!v) return diag_set(b->d, ERR_NOMEM, "");
    k->ops.v[i].arg = v;
    for (uint32_t r = 0; r < nrt; r++)
      if (!new_value(b, &rt[r], i, (uint16_t)(r + 1), IRV_ARG)) return diag_set(b->d, ERR_NOMEM, "");
    k->ops.v[i].narg = 1 + nrt;
    if (1 + nrt > maxres) return diag_set(b->d, ERR_RESULTS, LOC(b), name, (int)(1 + nrt), (int)maxres);
    for (uint32_t r = 0; r <= nrt; r++) res[r] = v + r;
    *nres = 1 + nrt;
    return MGPU_OK;
  }
  if (info->cls == IRC_WHILE) {
    /* results belong to the enclosing scope; the carried args to both regions */
    if ((s = add_results(b, i, rt, nrt))) return s;
    if ((s = open_region(b, (uint32_t)i, 0))) return s;
    for (uint32_t r = 0; r < nrt; r++) {
      uint32_t v = new_value(b, &rt[r], i, (uint16_t)r, IRV_ARG);
      if (!v) return diag_set(b->d, ERR_NOMEM, "");
      if (r == 0) k->ops.v[i].arg = v;
    }
    k->ops.v[i].narg = nrt;
    if (nrt > maxres) return diag_set(b->d, ERR_RESULTS, LOC(b), name, (int)nrt, (int)maxres);
    for (uint32_t r = 0; r < nrt; r++) res[r] = k->ops.v[i].arg + r;
    *nres = nrt;
    return MGPU_OK;
  }
  if (info->cls == IRC_IF || info->cls == IRC_SCOPED) return open_region(b, (uint32_t)i, 0);
  if (nrt > maxres) return diag_set(b->d, ERR_RESULTS, LOC(b), name, (int)nrt, (int)maxres);
  if ((s = add_results(b, i, rt, nrt))) return s;
  for (uint32_t r = 0; r < nrt; r++) res[r] = k->ops.v[i].res + r;
  *nres = nrt;
  return MGPU_OK;
}

mgpu_status irb_finish(ir_builder *b, ir_kernel **out) {
  if (b->finished) return diag_set(b->d, ERR_FINISHED, "");
  if (b->frames.n) {
    const ir_frame *f = &b->frames.v[b->frames.n - 1];
    return diag_set(b->d, ERR_UNCLOSED, ir_loc(b->k, &b->k->ops.v[f->op]), ir_optab[b->k->ops.v[f->op].code].name);
  }
  if (!ir_verify(b->k, b->d)) return b->d->status;
  b->finished = true;
  *out = b->k;
  b->k = NULL;
  return MGPU_OK;
}
