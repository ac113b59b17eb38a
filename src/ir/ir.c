/*
** ir.c -- the op table, the kernel container, type and string interning.
*/
#include <stdio.h>
#include <string.h>

#include "ir.h"

const char *const ir_red_names[IR_RED_XOR + 1] = { "none", "add", "min", "max", "inc", "dec", "and", "or", "xor" };
const char *const ir_atom_names[IR_ATOM_XOR + 1] = { "add", "exch", "cas", "max", "min", "and", "or", "xor" };
const char *const ir_sem_names[IR_SEM_ACQ_REL + 1] = { "relaxed", "acquire", "release", "acq_rel" };
const char *const ir_scope_names[IR_SCOPE_SYS + 1] = { "cta", "cluster", "gpu", "sys" };

const ir_opinfo ir_optab[IR__COUNT] = {
#define IR_INFO(name, cls, fl) { #name, IRC_##cls, IRF_##fl },
  IR_OPS(IR_INFO)
#undef IR_INFO
};

int ir_op_lookup(const char *name) {
  for (int i = 0; i < IR__COUNT; i++)
    if (strcmp(ir_optab[i].name, name) == 0) return i;
  return -1;
}

ir_kernel *ir_kernel_new(const mem_alloc *a, const mgpu_kernel_options *opts) {
  ir_kernel *k = mem_calloc(a, sizeof *k);
  if (!k) return NULL;
  k->alloc = a;
  k->opts = *opts;
  if (!k->opts.target) k->opts.target = MGPU_TARGET_SM90A;
  const char *nm = opts->name ? opts->name : "kernel";
  size_t n = strlen(nm) + 1;
  k->name = mem_realloc(a, NULL, 0, n);
  /* opds and ints get storage too, so ir_opds and ir_ints never offset a NULL pointer */
  if (!k->name || !vec_reserve(a, &k->vals, 1) || !vec_reserve(a, &k->strs, 1) ||
      !vec_reserve(a, &k->types, 1) || !vec_reserve(a, &k->opds, 1) || !vec_reserve(a, &k->ints, 1)) {
    ir_kernel_free(k);
    return NULL;
  }
  memcpy(k->name, nm, n);
  k->opts.name = k->name;
  k->vals.v[k->vals.n++] = (ir_value){ 0, -1, 0, 0 };
  k->strs.v[k->strs.n++] = NULL;
  k->types.v[k->types.n++] = (ir_type){ 0 };
  return k;
}

void ir_kernel_free(ir_kernel *k) {
  if (!k) return;
  const mem_alloc *a = k->alloc;
  for (uint32_t i = 1; i < k->strs.n; i++) mem_free(a, k->strs.v[i], strlen(k->strs.v[i]) + 1);
  if (k->name) mem_free(a, k->name, strlen(k->name) + 1);
  vec_free(a, &k->ops);
  vec_free(a, &k->vals);
  vec_free(a, &k->types);
  vec_free(a, &k->opds);
  vec_free(a, &k->ints);
  vec_free(a, &k->strs);
  vec_free(a, &k->params);
  vec_free(a, &k->type_hash);
  mem_free(a, k, sizeof *k);
}

/* -- Interning ------------------------------------------------------------ */

static uint64_t type_hash(const ir_type *t) {
  ir_type c;
  memset(&c, 0, sizeof c);
  c.kind = t->kind; c.dtype = t->dtype; c.space = t->space; c.rank = t->rank;
  memcpy(c.shape, t->shape, sizeof(int64_t) * t->rank);
  return hash_bytes(&c, sizeof c, 0);
}

static bool type_eq(const ir_type *a, const ir_type *b) {
  return a->kind == b->kind && a->dtype == b->dtype && a->space == b->space && a->rank == b->rank &&
         memcmp(a->shape, b->shape, sizeof(int64_t) * a->rank) == 0;
}

static bool type_rehash(ir_kernel *k, uint32_t cap) {
  VEC(uint32_t) h = { 0 };
  if (!vec_reserve(k->alloc, &h, cap)) return false;
  memset(h.v, 0, sizeof(uint32_t) * cap);
  h.n = cap;
  for (uint32_t id = 1; id < k->types.n; id++) {
    uint32_t i = (uint32_t)type_hash(&k->types.v[id]) & (cap - 1);
    while (h.v[i]) i = (i + 1) & (cap - 1);
    h.v[i] = id;
  }
  vec_free(k->alloc, &k->type_hash);
  k->type_hash.v = h.v; k->type_hash.n = h.n; k->type_hash.cap = h.cap;
  return true;
}

uint32_t ir_type_intern(ir_kernel *k, const ir_type *t) {
  if (k->type_hash.n < 2 * k->types.n + 16 && !type_rehash(k, k->type_hash.n ? k->type_hash.n * 4 : 64)) return 0;
  uint32_t cap = k->type_hash.n;
  uint32_t i = (uint32_t)type_hash(t) & (cap - 1);
  while (k->type_hash.v[i]) {
    uint32_t id = k->type_hash.v[i];
    if (type_eq(&k->types.v[id], t)) return id;
    i = (i + 1) & (cap - 1);
  }
  if (!vec_reserve(k->alloc, &k->types, 1)) return 0;
  uint32_t id = k->types.n++;
  ir_type *nt = &k->types.v[id];
  memset(nt, 0, sizeof *nt);
  nt->kind = t->kind; nt->dtype = t->dtype; nt->space = t->space; nt->rank = t->rank;
  memcpy(nt->shape, t->shape, sizeof(int64_t) * t->rank);
  k->type_hash.v[i] = id;
  return id;
}

uint32_t ir_str_intern(ir_kernel *k, const char *s) {
  if (!s || !*s) return 0;
  for (uint32_t i = k->strs.n; i-- > 1;)   /* recent strings first: locations repeat */
    if (strcmp(k->strs.v[i], s) == 0) return i;
  size_t n = strlen(s) + 1;
  char *p = mem_realloc(k->alloc, NULL, 0, n);
  if (!p || !vec_reserve(k->alloc, &k->strs, 1)) { mem_free(k->alloc, p, n); return 0; }
  memcpy(p, s, n);
  k->strs.v[k->strs.n] = p;
  return k->strs.n++;
}

const char *ir_str(const ir_kernel *k, uint32_t id) { return id ? k->strs.v[id] : ""; }

static void parents_rec(const ir_kernel *k, int32_t *par, uint8_t *reg, uint32_t i, uint32_t end,
                        int32_t parent, uint8_t region) {
  while (i < end) {
    const ir_op *op = &k->ops.v[i];
    par[i] = parent;
    if (reg) reg[i] = region;
    if (ir_optab[op->code].flags & IRF_R) {
      uint32_t b0 = i + 1, b1 = b0 + op->body[0];
      parents_rec(k, par, reg, b0, b1, (int32_t)i, 0);
      parents_rec(k, par, reg, b1, b1 + op->body[1], (int32_t)i, 1);
    }
    i += ir_extent(k, i);
  }
}

int32_t *ir_parents(const ir_kernel *k, uint8_t **region) {
  size_t n = k->ops.n ? k->ops.n : 1;
  int32_t *par = mem_realloc(k->alloc, NULL, 0, sizeof(int32_t) * n);
  uint8_t *reg = region ? mem_realloc(k->alloc, NULL, 0, n) : NULL;
  if (!par || (region && !reg)) {
    mem_free(k->alloc, par, sizeof(int32_t) * n);
    mem_free(k->alloc, reg, n);
    return NULL;
  }
  parents_rec(k, par, reg, 0, k->ops.n, -1, 0);
  if (region) *region = reg;
  return par;
}

/* -- Type helpers ----------------------------------------------------------- */

int64_t ir_numel(const ir_type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

bool ir_same_shape(const ir_type *a, const ir_type *b) {
  return a->rank == b->rank && memcmp(a->shape, b->shape, sizeof(int64_t) * a->rank) == 0;
}

const char *ir_type_str(const ir_type *t, char *buf, size_t n) {
  static const char *spaces[] = { "", "gmem ", "smem ", "regs ", "", "tmem " };   /* ORDER mgpu_space (barriers: none) */
  size_t len = 0;
  if (t->kind == MGPU_VALUE_REF) len = (size_t)snprintf(buf, n, "&%s", t->space <= MGPU_SPACE_TMEM ? spaces[t->space] : "");
  else buf[0] = 0;
  if (len >= n) return buf;
  len += (size_t)snprintf(buf + len, n - len, "%s", dt_name(t->dtype));
  if (t->kind == MGPU_VALUE_SCALAR || len >= n) return buf;
  len += (size_t)snprintf(buf + len, n - len, "[");
  for (int i = 0; i < t->rank && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, i ? ",%lld" : "%lld", (long long)t->shape[i]);
  if (len < n) snprintf(buf + len, n - len, "]");
  return buf;
}

const char *ir_value_loc(const ir_kernel *k, uint32_t v) {
  const ir_value *val = &k->vals.v[v];
  if (val->def < 0) return "";
  return ir_loc(k, &k->ops.v[val->def]);
}

/* -- debug_print formats ------------------------------------------------------ */

/* Walk fmt: literal text to lit (braces unescaped), each {} to hole.
** Returns the number of holes, or -1 with a reason in why. */
static int print_walk(const char *fmt, strbuf *out, const char *const *convs, char *why, size_t n) {
  int holes = 0;
  for (const char *p = fmt; *p; p++) {
    if (p[0] == '{' && p[1] == '{') { if (out) sb_putc(out, '{'); p++; continue; }
    if (p[0] == '}' && p[1] == '}') { if (out) sb_putc(out, '}'); p++; continue; }
    if (p[0] == '{' && p[1] == '}') { if (out) sb_puts(out, convs[holes]); holes++; p++; continue; }
    if (p[0] == '{') {
      if (why) snprintf(why, n, "only {} placeholders are supported (no field names, positions or format specs; {{ and }} are braces)");
      return -1;
    }
    if (p[0] == '}') {
      if (why) snprintf(why, n, "single '}' in the format ({{ and }} are braces)");
      return -1;
    }
    if (out) { if (*p == '%') sb_puts(out, "%%"); else sb_putc(out, *p); }
  }
  return holes;
}

int ir_print_holes(const char *fmt, char *why, size_t n) { return print_walk(fmt ? fmt : "", NULL, NULL, why, n); }

const char *ir_print_conv(int dtype) {
  if (dt_isfloat(dtype)) return "%f";
  if (dtype == MGPU_I64) return "%lld";
  if (dtype == MGPU_U64) return "%llu";
  if (dtype == MGPU_PRED || dt_table[dtype].cls == DT_UINT) return "%u";
  return "%d";
}

void ir_print_format(const ir_kernel *k, const ir_op *op, strbuf *out) {
  const uint32_t *o = ir_opds(k, op);
  const char *convs[IR_MAXRES];
  char arr[16 + 4 * IR_MAXRANK + 8];
  for (uint32_t i = 0; i < op->nopd && i < IR_MAXRES; i++) {
    const ir_type *t = ir_vtype(k, o[i]);
    convs[i] = ir_print_conv(t->dtype);
    if (t->kind != MGPU_VALUE_ARRAY) continue;
    size_t len = 0;
    arr[len++] = '[';
    for (int d = 0; d < t->rank; d++) len += (size_t)snprintf(arr + len, sizeof arr - len, d ? ", %%u" : "%%u");
    snprintf(arr + len, sizeof arr - len, "]: %s", convs[i]);
    convs[i] = arr;   /* an array is the only operand */
  }
  print_walk(ir_str(k, op->text), out, convs, NULL, 0);
  sb_putc(out, '\n');
}
