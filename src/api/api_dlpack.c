/*
** api_dlpack.c -- DLPack export and import of buffers (no copies).
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "api.h"

/* The exported tensor and what keeps its memory alive. */
typedef struct export_rec {
  DLManagedTensor t;
  int64_t shape[8];
  mgpu_buffer *buf;
} export_rec;

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

static void export_deleter(DLManagedTensor *t) {
  export_rec *r = t->manager_ctx;
  mgpu_buffer *b = r->buf;
  mem_alloc a = b->ctx->alloc;
  mem_free(&a, r, sizeof *r);
  mgpu_buffer_release(b);
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

/* The tensors imported and not yet released, in every context of the process:
** a DLManagedTensor is consumed by its first import (its deleter runs once), so
** a second import of a live one is refused instead of running the deleter twice. */
static struct {
  pthread_mutex_t mu;
  DLManagedTensor **t;
  size_t n, cap;
} live = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 };

/* Adds t to the live imports; false when it is there already or memory ran out
** (*dup tells which). */
static bool live_add(DLManagedTensor *t, bool *dup) {
  bool ok = true;
  *dup = false;
  pthread_mutex_lock(&live.mu);
  for (size_t i = 0; i < live.n && ok; i++) ok = !(*dup = live.t[i] == t);
  if (ok && live.n == live.cap) {
    size_t cap = live.cap ? 2 * live.cap : 16;
    DLManagedTensor **grown = realloc(live.t, cap * sizeof *grown);
    if (grown) live.t = grown, live.cap = cap;
    else ok = false;
  }
  if (ok) live.t[live.n++] = t;
  pthread_mutex_unlock(&live.mu);
  return ok;
}

static void live_remove(DLManagedTensor *t) {
  pthread_mutex_lock(&live.mu);
  for (size_t i = 0; i < live.n; i++)
    if (live.t[i] == t) { live.t[i] = live.t[--live.n]; break; }
  if (!live.n) free(live.t), live.t = NULL, live.cap = 0;
  pthread_mutex_unlock(&live.mu);
}

static bool live_has(DLManagedTensor *t) {
  bool has = false;
  pthread_mutex_lock(&live.mu);
  for (size_t i = 0; i < live.n && !has; i++) has = live.t[i] == t;
  pthread_mutex_unlock(&live.mu);
  return has;
}

mgpu_status mgpu_dlpack_free(mgpu_ctx *ctx, void *tensor) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!tensor) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_dlpack_free(tensor)");
  DLManagedTensor *t = tensor;
  if (live_has(t))
    return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_dlpack_free: an import holds this tensor (releasing its array "
                    "runs the deleter)");
  if (t->deleter) t->deleter(t);
  return MGPU_OK;
}

static void import_release(void *arg) {
  DLManagedTensor *t = arg;
  live_remove(t);
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

mgpu_status mgpu_dlpack_import(mgpu_ctx *ctx, void *tensor, mgpu_buffer **out, mgpu_value_info *info) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!tensor || !out || !info) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_dlpack_import(tensor, out, info)");
  *out = NULL;
  DLManagedTensor *mt = tensor;
  const DLTensor *t = &mt->dl_tensor;
  int want = api_gpu(ctx) ? kDLCUDA : kDLCPU;
  if ((int)t->device.device_type != want)
    return diag_set(&ctx->d, ERR_BAD_ARG, "", api_gpu(ctx) ? "mgpu_dlpack_import: the tensor is not in CUDA memory"
                                                             : "mgpu_dlpack_import: the tensor is not in CPU memory (no GPU: interpret mode)");
  if (api_gpu(ctx) && t->device.device_id != ctx->info.device)
    return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_dlpack_import: the tensor is on another GPU");
  int dt = from_dl(t->dtype);
  if (dt < 0) return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_dlpack_import: unsupported DLPack dtype (or lanes != 1)");
  uint64_t n = 0;
  const char *why = import_extent(t, dt, &n);
  if (why) return diag_set(&ctx->d, ERR_BAD_ARG, "", why);
  bool dup;
  if (!live_add(mt, &dup))
    return dup ? diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_dlpack_import: the tensor is imported already (its first "
                                                      "import consumed it; export the array again for another view)")
               : diag_set(&ctx->d, ERR_NOMEM, "", "mgpu_dlpack_import");
  if (!api_enter(ctx)) {
    live_remove(mt);
    return MGPU_ERR_THREAD;
  }
  mgpu_status s = api_buffer_new(ctx, n, (uint64_t)(uintptr_t)t->data + t->byte_offset, false, out);
  if (s) live_remove(mt);
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
