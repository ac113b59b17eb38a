/*
** api_dlpack.c -- DLPack export and import of buffers (no copies).
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "api.h"

/* The exported tensor and what keeps its memory alive.  A record whose
** deleter ran is kept (buf NULL) among the last RELEASED_KEPT of its
** context, so that a second free or an import of it is an error that says so
** instead of a double free or a read of freed memory. */
typedef struct export_rec {
  DLManagedTensor t;
  int64_t shape[8];
  mgpu_buffer *buf;           /* NULL once the deleter ran */
  mgpu_ctx *ctx;
  struct export_rec *next;    /* in the context's released list, oldest first */
} export_rec;

enum { RELEASED_KEPT = 256 };

/* The refusal of a free or an import of an export whose deleter ran. */
#define FREED_ALREADY "the tensor was freed already (its deleter ran: a free, a consumer, or the release of the array " \
                      "imported from it)"

/* Every export record that exists (live, or released and kept), in every
** context of the process, and the tensors imported and not yet released:
** a DLManagedTensor is consumed by its first import (its deleter runs once),
** so a second import of a live one is refused instead of running the deleter
** twice. */
typedef struct ptr_set {
  void **p;
  size_t n, cap;
} ptr_set;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static ptr_set exports, imports;

/* Adds p to s (the lock held); false when memory ran out. */
static bool set_add(ptr_set *s, void *p) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    void **grown = realloc(s->p, cap * sizeof *grown);
    if (!grown) return false;
    s->p = grown, s->cap = cap;
  }
  s->p[s->n++] = p;
  return true;
}

static bool set_has(const ptr_set *s, const void *p) {
  for (size_t i = 0; i < s->n; i++)
    if (s->p[i] == p) return true;
  return false;
}

static void set_remove(ptr_set *s, const void *p) {
  for (size_t i = 0; i < s->n; i++)
    if (s->p[i] == p) { s->p[i] = s->p[--s->n]; break; }
  if (!s->n) free(s->p), s->p = NULL, s->cap = 0;
}

/* t is an mgpu export whose deleter ran (the lock held). */
static bool released(const DLManagedTensor *t) {
  return set_has(&exports, t) && !((const export_rec *)t)->buf;
}

static bool to_dl(int dt, DLDataType *out) {
  out->lanes = 1;
  out->bits = (uint8_t)dt_table[dt].bits;
  switch (dt_table[dt].cls) {
  case DT_PRED: out->code = kDLUInt; out->bits = 8; return true;   /* DLPack 0.6 has no bool */
  case DT_SINT: out->code = kDLInt; return true;
  case DT_UINT: out->code = kDLUInt; return true;
  default:
    if (dt == MGPU_BF16) { out->code = kDLBfloat; return true; }
    if (dt == MGPU_F16 || dt == MGPU_F32 || dt == MGPU_F64) { out->code = kDLFloat; return true; }
    return false;   /* f8 */
  }
}

static int from_dl(DLDataType t) {
  if (t.lanes != 1) return -1;
  for (int dt = 0; dt < MGPU_DTYPE_COUNT; dt++) {
    DLDataType d;
    if (dt != MGPU_PRED && to_dl(dt, &d) && d.code == t.code && d.bits == t.bits) return dt;
  }
  return -1;
}

/* Releases the export's buffer; a second call while the record is kept (a
** consumer's mistake) does nothing.  The record joins its context's released
** list; the oldest past RELEASED_KEPT is freed. */
static void export_deleter(DLManagedTensor *t) {
  export_rec *r = t->manager_ctx;
  pthread_mutex_lock(&reg_mu);
  mgpu_buffer *b = r->buf;
  if (!b) {
    pthread_mutex_unlock(&reg_mu);
    return;
  }
  r->buf = NULL;
  mgpu_ctx *ctx = r->ctx;
  if (ctx->dl_released.tail) ctx->dl_released.tail->next = r;
  else ctx->dl_released.head = r;
  ctx->dl_released.tail = r;
  export_rec *old = NULL;
  if (++ctx->dl_released.n > RELEASED_KEPT) {
    old = ctx->dl_released.head;
    ctx->dl_released.head = old->next;
    ctx->dl_released.n--;
    set_remove(&exports, old);
  }
  pthread_mutex_unlock(&reg_mu);
  if (old) mem_free(&ctx->alloc, old, sizeof *old);
  mgpu_buffer_release(b);   /* may destroy ctx, which frees its released list */
}

void api_dlpack_close(mgpu_ctx *ctx) {
  pthread_mutex_lock(&reg_mu);
  export_rec *r = ctx->dl_released.head;
  for (export_rec *q = r; q; q = q->next) set_remove(&exports, q);
  pthread_mutex_unlock(&reg_mu);
  while (r) {
    export_rec *next = r->next;
    mem_free(&ctx->alloc, r, sizeof *r);
    r = next;
  }
  ctx->dl_released.head = ctx->dl_released.tail = NULL;
  ctx->dl_released.n = 0;
}

mgpu_status mgpu_dlpack_export(mgpu_buffer *buf, int32_t dtype, const int64_t *shape, int32_t rank, void **out) {
  API_CHECK(buf, MAGIC_BUF);
  mgpu_ctx *ctx = buf->ctx;
  if (!out || (rank > 0 && !shape)) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_dlpack_export(shape, out)");
  *out = NULL;
  if (!dt_valid(dtype)) return diag_set(&ctx->d, ERR_BAD_DTYPE, "", "mgpu_dlpack_export", dtype);
  DLDataType dl;
  if (!to_dl(dtype, &dl)) return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_dlpack_export: DLPack has no type for f8");
  if (rank < 0 || rank > 8) return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_dlpack_export: rank must be 0 to 8");
  uint64_t n = dt_bytes(dtype);
  bool over = false, empty = false;   /* over: the product passed 2^64, more than any buffer holds */
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_dlpack_export: negative dimension");
    empty |= shape[i] == 0;
    over |= shape[i] && n > UINT64_MAX / (uint64_t)shape[i];
    n *= (uint64_t)shape[i];
  }
  if (!empty && (over || n > buf->size)) return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_dlpack_export: the shape needs more bytes than the buffer holds");
  export_rec *r = mem_calloc(&ctx->alloc, sizeof *r);
  if (!r) return diag_set(&ctx->d, ERR_NOMEM, "");
  if (rank) memcpy(r->shape, shape, sizeof(int64_t) * (size_t)rank);   /* shape may be NULL at rank 0 */
  r->buf = buf;
  r->ctx = ctx;
  pthread_mutex_lock(&reg_mu);
  bool added = set_add(&exports, r);
  pthread_mutex_unlock(&reg_mu);
  if (!added) {
    mem_free(&ctx->alloc, r, sizeof *r);
    return diag_set(&ctx->d, ERR_NOMEM, "");
  }
  mgpu_buffer_retain(buf);
  DLTensor *t = &r->t.dl_tensor;
  t->data = (void *)(uintptr_t)buf->addr;
  t->device.device_type = api_gpu(ctx) ? kDLCUDA : kDLCPU;
  t->device.device_id = api_gpu(ctx) ? ctx->info.device : 0;
  t->ndim = rank;
  t->dtype = dl;
  t->shape = r->shape;
  t->strides = NULL;
  t->byte_offset = 0;
  r->t.manager_ctx = r;
  r->t.deleter = export_deleter;
  *out = &r->t;
  return MGPU_OK;
}

mgpu_status mgpu_dlpack_free(mgpu_ctx *ctx, void *tensor) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!tensor) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_dlpack_free(tensor)");
  DLManagedTensor *t = tensor;
  pthread_mutex_lock(&reg_mu);
  bool gone = released(t), held = set_has(&imports, t);
  pthread_mutex_unlock(&reg_mu);
  if (gone) return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_dlpack_free: " FREED_ALREADY);
  if (held)
    return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_dlpack_free: an import holds this tensor (releasing its array "
                    "runs the deleter)");
  if (t->deleter) t->deleter(t);
  return MGPU_OK;
}

/* Takes tensor t for an import before anything of it is read: NULL, or
** why it cannot be ("" when memory ran out). */
static const char *import_claim(DLManagedTensor *t) {
  const char *why = NULL;
  pthread_mutex_lock(&reg_mu);
  if (released(t)) why = "mgpu_dlpack_import: " FREED_ALREADY;
  else if (set_has(&imports, t))
    why = "mgpu_dlpack_import: the tensor is imported already (its first import consumed it; export the array "
          "again for another view)";
  else if (!set_add(&imports, t)) why = "";
  pthread_mutex_unlock(&reg_mu);
  return why;
}

static void import_unclaim(DLManagedTensor *t) {
  pthread_mutex_lock(&reg_mu);
  set_remove(&imports, t);
  pthread_mutex_unlock(&reg_mu);
}

static void import_release(void *arg) {
  DLManagedTensor *t = arg;
  import_unclaim(t);
  if (t->deleter) t->deleter(t);
}

/* The bytes tensor t of dtype dt spans, or why mgpu cannot use it: rank 0
** to 8, a shape array when the rank is not 0, no negative dimension,
** strides (when given) those of C order along every dimension longer than
** 1 (any, when a dimension is 0), at most 2^63 - 1 bytes, data present
** when there are bytes, and data + byte_offset not wrapping around. */
static const char *import_extent(const DLTensor *t, int dt, uint64_t *bytes) {
  if (t->ndim < 0 || t->ndim > 8) return "mgpu_dlpack_import: rank must be 0 to 8";
  if (t->ndim > 0 && !t->shape) return "mgpu_dlpack_import: the tensor has no shape array";
  bool empty = false;
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] < 0) return "mgpu_dlpack_import: negative dimension";
    empty |= t->shape[i] == 0;
  }
  uint64_t n = empty ? 0 : dt_bytes(dt);
  int64_t stride = 1;   /* elements: at most n, so it cannot overflow */
  for (int i = t->ndim - 1; i >= 0 && !empty; i--) {
    int64_t d = t->shape[i];
    if (t->strides && d > 1 && t->strides[i] != stride) return "mgpu_dlpack_import: the tensor is not C-contiguous";
    if (n > (uint64_t)INT64_MAX / (uint64_t)d) return "mgpu_dlpack_import: the tensor holds more than 2^63 - 1 bytes";
    stride *= d;
    n *= (uint64_t)d;
  }
  if (n && !t->data) return "mgpu_dlpack_import: the tensor's data pointer is NULL";
  if ((uint64_t)(uintptr_t)t->data + t->byte_offset < (uint64_t)(uintptr_t)t->data)
    return "mgpu_dlpack_import: data + byte_offset wraps around the address space";
  *bytes = n;
  return NULL;
}

/* Why tensor t (claimed) cannot be imported into ctx, or NULL with its dtype and bytes. */
static const char *import_refusal(mgpu_ctx *ctx, const DLTensor *t, int *dt, uint64_t *n) {
  int want = api_gpu(ctx) ? kDLCUDA : kDLCPU;
  if ((int)t->device.device_type != want)
    return api_gpu(ctx) ? "mgpu_dlpack_import: the tensor is not in CUDA memory"
                        : "mgpu_dlpack_import: the tensor is not in CPU memory (no GPU: interpret mode)";
  if (api_gpu(ctx) && t->device.device_id != ctx->info.device) return "mgpu_dlpack_import: the tensor is on another GPU";
  *dt = from_dl(t->dtype);
  if (*dt < 0) return "mgpu_dlpack_import: unsupported DLPack dtype (or lanes != 1)";
  return import_extent(t, *dt, n);
}

mgpu_status mgpu_dlpack_import(mgpu_ctx *ctx, void *tensor, mgpu_buffer **out, mgpu_value_info *info) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!tensor || !out || !info) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_dlpack_import(tensor, out, info)");
  *out = NULL;
  DLManagedTensor *mt = tensor;
  const DLTensor *t = &mt->dl_tensor;
  const char *why = import_claim(mt);
  if (why) return *why ? diag_set(&ctx->d, ERR_BAD_ARG, "", why) : diag_set(&ctx->d, ERR_NOMEM, "");
  int dt = -1;
  uint64_t n = 0;
  why = import_refusal(ctx, t, &dt, &n);
  if (why) {
    import_unclaim(mt);
    return diag_set(&ctx->d, ERR_BAD_ARG, "", why);
  }
  if (!api_enter(ctx)) {
    import_unclaim(mt);
    return MGPU_ERR_THREAD;
  }
  mgpu_status s = api_buffer_new(ctx, n, (uint64_t)(uintptr_t)t->data + t->byte_offset, false, out);
  if (s) import_unclaim(mt);
  else {
    (*out)->on_release = import_release;
    (*out)->on_release_arg = mt;
    memset(info, 0, sizeof *info);
    info->kind = MGPU_VALUE_REF;
    info->dtype = dt;
    info->space = MGPU_SPACE_GMEM;
    info->rank = t->ndim;
    for (int i = 0; i < t->ndim; i++) info->shape[i] = t->shape[i];
  }
  api_leave(ctx);
  return s;
}
