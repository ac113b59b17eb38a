/*
** host.c -- f64 arrays in host memory for references and result checks:
** elementwise maps with NumPy broadcasting, reductions, row slices, the
** transpose of a matrix, matmul and the relative error ||a - ref|| / ||ref||.  Plain loops: this is the
** independent yardstick kernels are measured against, not a fast path.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../api/api.h"

#define MAGIC_HOST 0x6d686f73
#define HOST_MAXRANK 8

struct mgpu_host {
  uint32_t magic;
  mgpu_ctx *ctx;
  int32_t rank;
  int64_t shape[HOST_MAXRANK];
  int64_t n;
  double *v;
};

static int64_t count(const int64_t *shape, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  return n;
}

/* "[3,4]": the shape of `h` (or of rank/shape) in `buf`; always terminated. */
static const char *shape_text(char *buf, size_t cap, const int64_t *shape, int rank) {
  size_t n = 0;
  buf[n++] = '[';
  for (int i = 0; i < rank && n + 24 < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, i ? ",%lld" : "%lld", (long long)shape[i]);
  snprintf(buf + n, cap - n, "]");
  return buf;
}
#define SHAPE_TEXT(buf, h) shape_text(buf, sizeof buf, (h)->shape, (h)->rank)

static mgpu_status make(mgpu_ctx *ctx, const int64_t *shape, int rank, mgpu_host **out) {
  if (rank < 0 || rank > HOST_MAXRANK) {
    char msg[96];
    snprintf(msg, sizeof msg, "host array: rank must be 0 to %d, got %d", HOST_MAXRANK, rank);
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  for (int i = 0; i < rank; i++)
    if (shape[i] < 0) {
      char msg[320], st[256];
      snprintf(msg, sizeof msg, "host array: dimension %d of shape %s is negative", i, shape_text(st, sizeof st, shape, rank));
      return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
    }
  mgpu_host *h = mem_calloc(&ctx->alloc, sizeof *h);
  int64_t n = count(shape, rank);
  if (!h || (n && !(h->v = mem_calloc(&ctx->alloc, sizeof(double) * (size_t)n)))) {
    mem_free(&ctx->alloc, h, sizeof *h);
    return diag_set(&ctx->d, ERR_NOMEM, "");
  }
  h->magic = MAGIC_HOST;
  h->ctx = ctx;
  h->rank = rank;
  memcpy(h->shape, shape, sizeof(int64_t) * (size_t)rank);
  h->n = n;
  api_ref(ctx);
  *out = h;
  return MGPU_OK;
}

#define HOST_CHECK(h) do { if (!(h) || (h)->magic != MAGIC_HOST) return MGPU_ERR_ARG; } while (0)

mgpu_status mgpu_host_create(mgpu_ctx *ctx, const int64_t *shape, int32_t rank, mgpu_host **out) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!out || (rank && !shape)) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_host_create(shape, out)");
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status st = make(ctx, shape, rank, out);
  api_leave(ctx);
  return st;
}

void mgpu_host_release(mgpu_host *h) {
  if (!h || h->magic != MAGIC_HOST) return;
  mgpu_ctx *ctx = h->ctx;
  mem_free(&ctx->alloc, h->v, sizeof(double) * (size_t)h->n);
  h->magic = 0;
  mem_free(&ctx->alloc, h, sizeof *h);
  api_unref(ctx);
}

double *mgpu_host_data(mgpu_host *h) { return h && h->magic == MAGIC_HOST ? h->v : NULL; }
int32_t mgpu_host_rank(const mgpu_host *h) { return h && h->magic == MAGIC_HOST ? h->rank : -1; }
int64_t mgpu_host_dim(const mgpu_host *h, int32_t axis) {
  if (!h || h->magic != MAGIC_HOST || axis < 0 || axis >= h->rank) return -1;
  return h->shape[axis];
}

mgpu_status mgpu_host_download(mgpu_host *h, mgpu_buffer *src, int32_t dtype) {
  HOST_CHECK(h);
  return mgpu_buffer_get_f64(src, dtype, 0, (uint64_t)h->n, h->v);
}

mgpu_status mgpu_host_upload(const mgpu_host *h, mgpu_buffer *dst, int32_t dtype) {
  HOST_CHECK(h);
  return mgpu_buffer_set_f64(dst, dtype, 0, (uint64_t)h->n, h->v);
}

static double apply(int op, double x, double y) {
  switch (op) {
  case MGPU_HOST_ADD: return x + y;
  case MGPU_HOST_SUB: return x - y;
  case MGPU_HOST_MUL: return x * y;
  case MGPU_HOST_DIV: return x / y;
  case MGPU_HOST_MAX: return (isnan(x) || isnan(y)) ? NAN : fmax(x, y);
  case MGPU_HOST_MIN: return (isnan(x) || isnan(y)) ? NAN : fmin(x, y);
  case MGPU_HOST_NEG: return -x;
  case MGPU_HOST_ABS: return fabs(x);
  case MGPU_HOST_EXP: return exp(x);
  case MGPU_HOST_LOG: return log(x);
  case MGPU_HOST_SQRT: return sqrt(x);
  case MGPU_HOST_TANH: return tanh(x);
  default: return dt_round((int)y, x);   /* MGPU_HOST_ROUND */
  }
}

static mgpu_status host_map_(int32_t op, const mgpu_host *a, const mgpu_host *b, double s, mgpu_host **out) {
  mgpu_ctx *ctx = a->ctx;
  if (!out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_host_map(out)");
  if (op < MGPU_HOST_ADD || op > MGPU_HOST_ROUND) return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_host_map: not an elementwise op");
  if (op == MGPU_HOST_ROUND && (!dt_valid((int)s) || s != floor(s)))
    return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_host_map: ROUND needs a dtype code as the scalar");
  bool unary = op >= MGPU_HOST_NEG;
  if (unary || !b) b = NULL;
  else if (b->magic != MAGIC_HOST) return diag_set(&ctx->d, ERR_BAD_ARG, "", "host arrays: the second operand is not a host array");
  /* broadcast shape over the trailing dimensions */
  int rank = b && b->rank > a->rank ? b->rank : a->rank;
  int64_t shape[HOST_MAXRANK], sa[HOST_MAXRANK], sb[HOST_MAXRANK];
  int64_t stra = 1, strb = 1;
  for (int i = rank - 1; i >= 0; i--) {
    int ia = i - (rank - a->rank), ib = b ? i - (rank - b->rank) : -1;
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char msg[640], s1[256], s2[256];
      snprintf(msg, sizeof msg, "host arrays: shapes %s and %s do not broadcast (dimension %d: %lld and %lld)",
               SHAPE_TEXT(s1, a), SHAPE_TEXT(s2, b), i, (long long)da, (long long)db);
      return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
    }
    shape[i] = da > db ? da : db;
    if (da == 1 && db == 0) shape[i] = 0;
    sa[i] = da == 1 ? 0 : stra;
    sb[i] = db == 1 ? 0 : strb;
    if (ia >= 0) stra *= da;
    if (ib >= 0) strb *= db;
  }
  mgpu_status st = make(ctx, shape, rank, out);
  if (st) return st;
  mgpu_host *o = *out;
  int64_t idx[HOST_MAXRANK] = { 0 }, pa = 0, pb = 0;
  for (int64_t e = 0; e < o->n; e++) {
    o->v[e] = apply(op, a->v[pa], op == MGPU_HOST_ROUND ? s : b ? b->v[pb] : s);
    for (int i = rank - 1; i >= 0; i--) {   /* odometer */
      pa += sa[i]; pb += sb[i];
      if (++idx[i] < shape[i]) break;
      pa -= sa[i] * shape[i]; pb -= sb[i] * shape[i];
      idx[i] = 0;
    }
  }
  return MGPU_OK;
}

static mgpu_status host_reduce_(int32_t op, const mgpu_host *a, int32_t axis, int32_t keepdims, mgpu_host **out) {
  mgpu_ctx *ctx = a->ctx;
  if (!out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_host_reduce(out)");
  if (op != MGPU_HOST_SUM && op != MGPU_HOST_MEAN && op != MGPU_HOST_MAX && op != MGPU_HOST_MIN)
    return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_host_reduce: op must be SUM, MEAN, MAX or MIN");
  int32_t given = axis;
  if (axis < 0) axis += a->rank;
  if (axis < 0 || axis >= a->rank) {
    char msg[384], s1[256];
    snprintf(msg, sizeof msg, "host array reduction: axis %d is out of range for shape %s", given, SHAPE_TEXT(s1, a));
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  int64_t shape[HOST_MAXRANK];
  int rank = 0;
  for (int i = 0; i < a->rank; i++) {
    if (i != axis) shape[rank++] = a->shape[i];
    else if (keepdims) shape[rank++] = 1;
  }
  mgpu_status st = make(ctx, shape, rank, out);
  if (st) return st;
  int64_t outer = count(a->shape, axis), len = a->shape[axis], inner = count(a->shape + axis + 1, a->rank - axis - 1);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      double acc = op == MGPU_HOST_MAX ? -INFINITY : op == MGPU_HOST_MIN ? INFINITY : 0;
      for (int64_t j = 0; j < len; j++) {
        double x = a->v[(o * len + j) * inner + in];
        if (op == MGPU_HOST_SUM || op == MGPU_HOST_MEAN) acc += x;
        else acc = apply(op == MGPU_HOST_MAX ? MGPU_HOST_MAX : MGPU_HOST_MIN, acc, x);
      }
      (*out)->v[o * inner + in] = op == MGPU_HOST_MEAN ? acc / (double)len : acc;
    }
  return MGPU_OK;
}

static mgpu_status host_slice_(const mgpu_host *a, int64_t start, int64_t size, mgpu_host **out) {
  mgpu_ctx *ctx = a->ctx;
  if (!out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_host_slice(out)");
  if (a->rank < 1 || start < 0 || size < 0 || start + size > a->shape[0]) {
    char msg[384], s1[256];
    snprintf(msg, sizeof msg, "host array rows: rows [%lld, %lld) are out of range for shape %s", (long long)start,
             (long long)(start + size), SHAPE_TEXT(s1, a));
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  int64_t shape[HOST_MAXRANK];
  memcpy(shape, a->shape, sizeof shape);
  shape[0] = size;
  mgpu_status st = make(ctx, shape, a->rank, out);
  if (st) return st;
  int64_t row = count(a->shape + 1, a->rank - 1);
  if (size > 0 && row > 0) memcpy((*out)->v, a->v + start * row, sizeof(double) * (size_t)(size * row));
  return MGPU_OK;
}

static mgpu_status host_transpose_(const mgpu_host *a, mgpu_host **out) {
  mgpu_ctx *ctx = a->ctx;
  if (!out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_host_transpose(out)");
  if (a->rank != 2) {
    char msg[320], s1[256];
    snprintf(msg, sizeof msg, "host transpose: needs a 2-D array, got shape %s", SHAPE_TEXT(s1, a));
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  int64_t R = a->shape[0], C = a->shape[1], shape[2] = { C, R };
  mgpu_status st = make(ctx, shape, 2, out);
  if (st) return st;
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) (*out)->v[j * R + i] = a->v[i * C + j];
  return MGPU_OK;
}

static mgpu_status host_matmul_(const mgpu_host *a, const mgpu_host *b, mgpu_host **out) {
  mgpu_ctx *ctx = a->ctx;
  if (!b || b->magic != MAGIC_HOST) return diag_set(&ctx->d, ERR_BAD_ARG, "", "host matmul: the second operand is not a host array");
  if (!out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_host_matmul(out)");
  if (a->rank != 2 || b->rank != 2 || a->shape[1] != b->shape[0]) {
    char msg[640], s1[256], s2[256];
    snprintf(msg, sizeof msg, "host matmul: needs (M, K) and (K, N) arrays, got shapes %s and %s", SHAPE_TEXT(s1, a),
             SHAPE_TEXT(s2, b));
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  int64_t M = a->shape[0], K = a->shape[1], N = b->shape[1], shape[2] = { M, N };
  mgpu_status st = make(ctx, shape, 2, out);
  if (st) return st;
  double *c = (*out)->v;
  for (int64_t i = 0; i < M; i++)
    for (int64_t k = 0; k < K; k++) {
      double x = a->v[i * K + k];
      const double *br = b->v + k * N;
      double *cr = c + i * N;
      for (int64_t j = 0; j < N; j++) cr[j] += x * br[j];
    }
  return MGPU_OK;
}

static mgpu_status host_relerr_(const mgpu_host *a, const mgpu_host *ref, double *out) {
  if (!ref || ref->magic != MAGIC_HOST) return diag_set(&a->ctx->d, ERR_BAD_ARG, "", "relerr: the reference is not a host array");
  if (!out) return diag_set(&a->ctx->d, ERR_NULL_ARG, "", "mgpu_host_relerr(out)");
  if (a->rank != ref->rank || memcmp(a->shape, ref->shape, sizeof(int64_t) * (size_t)a->rank) != 0) {
    char msg[640], s1[256], s2[256];
    *out = NAN;
    snprintf(msg, sizeof msg, "relerr: shapes %s and %s differ", SHAPE_TEXT(s1, a), SHAPE_TEXT(s2, ref));
    return diag_set(&a->ctx->d, ERR_BAD_ARG, "", msg);
  }
  double num = 0, den = 0;
  for (int64_t i = 0; i < a->n; i++) {
    double d = a->v[i] - ref->v[i];
    num += d * d;
    den += ref->v[i] * ref->v[i];
  }
  *out = den > 0 ? sqrt(num / den) : sqrt(num);
  return MGPU_OK;
}

mgpu_status mgpu_host_map(int32_t op, const mgpu_host *a, const mgpu_host *b, double s, mgpu_host **out) {
  HOST_CHECK(a);
  if (!api_enter(a->ctx)) return MGPU_ERR_THREAD;
  mgpu_status st = host_map_(op, a, b, s, out);
  api_leave(a->ctx);
  return st;
}

mgpu_status mgpu_host_reduce(int32_t op, const mgpu_host *a, int32_t axis, int32_t keepdims, mgpu_host **out) {
  HOST_CHECK(a);
  if (!api_enter(a->ctx)) return MGPU_ERR_THREAD;
  mgpu_status st = host_reduce_(op, a, axis, keepdims, out);
  api_leave(a->ctx);
  return st;
}

mgpu_status mgpu_host_slice(const mgpu_host *a, int64_t start, int64_t size, mgpu_host **out) {
  HOST_CHECK(a);
  if (!api_enter(a->ctx)) return MGPU_ERR_THREAD;
  mgpu_status st = host_slice_(a, start, size, out);
  api_leave(a->ctx);
  return st;
}

mgpu_status mgpu_host_transpose(const mgpu_host *a, mgpu_host **out) {
  HOST_CHECK(a);
  if (!api_enter(a->ctx)) return MGPU_ERR_THREAD;
  mgpu_status st = host_transpose_(a, out);
  api_leave(a->ctx);
  return st;
}

mgpu_status mgpu_host_matmul(const mgpu_host *a, const mgpu_host *b, mgpu_host **out) {
  HOST_CHECK(a);
  if (!api_enter(a->ctx)) return MGPU_ERR_THREAD;
  mgpu_status st = host_matmul_(a, b, out);
  api_leave(a->ctx);
  return st;
}

mgpu_status mgpu_host_relerr(const mgpu_host *a, const mgpu_host *ref, double *out) {
  HOST_CHECK(a);
  if (!api_enter(a->ctx)) return MGPU_ERR_THREAD;
  mgpu_status st = host_relerr_(a, ref, out);
  api_leave(a->ctx);
  return st;
}
