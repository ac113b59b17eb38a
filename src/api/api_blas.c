/*
** api_blas.c -- mgpu_blas_matmul and mgpu_blas_matmul_f8: cuBLAS on the
** context's GPU and stream, the reference that benchmarks time our kernels
** against in the same process (src/runtime/blas.c loads cublasLt).
*/
#include <stdio.h>

#include "api.h"
#include "../runtime/blas.h"

void api_blas_close(mgpu_ctx *ctx) {
  if (ctx->blas) blas_close(&ctx->alloc, ctx->blas);
  ctx->blas = NULL;
}

/* Whether buf holds a rows x cols matrix of `bytes`-byte elements. */
static bool holds(const mgpu_buffer *buf, int64_t rows, int64_t cols, int bytes) {
  return (uint64_t)rows <= (UINT64_MAX / 8) / (uint64_t)cols &&
         (uint64_t)rows * (uint64_t)cols * (uint64_t)bytes <= buf->size;
}

static bool is_f8(int32_t dtype) { return dtype == MGPU_F8E4M3 || dtype == MGPU_F8E5M2; }

static const char *dtype_text(int32_t dtype) { return dt_valid(dtype) ? dt_name(dtype) : "an unknown dtype"; }

/* The checks both entry points share, then the call: x's extents, its n buffers (a, b, c, and
** FP8's a_scale and b_scale, whose addresses go into x) and the context's GPU; fn names the entry
** point in errors. */
static mgpu_status blas_call(mgpu_ctx *ctx, const char *fn, blas_matmul_args *x, mgpu_buffer **bufs, int n,
                             uint64_t stream) {
  char msg[512];
  if (x->m < 1 || x->n < 1 || x->k < 1) {
    snprintf(msg, sizeof msg, "%s: m, n and k must be at least 1, got %lld, %lld, %lld", fn, (long long)x->m,
             (long long)x->n, (long long)x->k);
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  for (int i = 0; i < n; i++)
    if (!bufs[i] || bufs[i]->magic != MAGIC_BUF || bufs[i]->ctx != ctx) {
      snprintf(msg, sizeof msg, "%s: %s must be buffers of this context", fn,
               n == 3 ? "a, b and c" : "a, b, c, a_scale and b_scale");
      return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
    }
  bool f8 = is_f8(x->a_dtype);
  int ab = dt_bytes(x->a_dtype), bb = dt_bytes(x->b_dtype);
  unsigned long long sa = bufs[0]->size, sb = bufs[1]->size, sc = bufs[2]->size;
  long long m = x->m, nn = x->n, k = x->k;
  if (!f8 && (!holds(bufs[0], m, k, ab) || !holds(bufs[1], k, nn, bb) || !holds(bufs[2], m, nn, 2))) {
    snprintf(msg, sizeof msg, "%s: buffers of %llu, %llu and %llu bytes cannot hold a %lldx%lld, b %lldx%lld and c "
             "%lldx%lld of %s", fn, sa, sb, sc, m, k, k, nn, m, nn, dt_name(x->a_dtype));
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  if (f8 && (!holds(bufs[0], m, k, ab) || !holds(bufs[1], nn, k, bb) || !holds(bufs[2], m, nn, 2) ||
             bufs[3]->size < 4 || bufs[4]->size < 4)) {
    snprintf(msg, sizeof msg, "%s: buffers of %llu, %llu, %llu, %llu and %llu bytes cannot hold a %lldx%lld of %s, b "
             "%lldx%lld of %s, c %lldx%lld of bf16 and one f32 scale each", fn, sa, sb, sc,
             (unsigned long long)bufs[3]->size, (unsigned long long)bufs[4]->size, m, k, dt_name(x->a_dtype), nn, k,
             dt_name(x->b_dtype), m, nn);
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  if (!api_gpu(ctx)) {
    snprintf(msg, sizeof msg, "cuBLAS runs only on a GPU, and this context %s%s%s",
             ctx->info.mode == MGPU_MODE_COMPILE_ONLY ? "only compiles" : "runs kernels in the interpreter",
             ctx->info.reason[0] ? ": " : "", ctx->info.reason);
    return diag_set(&ctx->d, ERR_NO_DEVICE, "", msg);
  }
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  for (int i = 0; i < n && !s; i++) s = api_buffer_live(bufs[i]);
  x->a = bufs[0]->addr;
  x->b = bufs[1]->addr;
  x->c = bufs[2]->addr;
  if (f8) { x->a_scale = bufs[3]->addr; x->b_scale = bufs[4]->addr; }
  if (!s && !ctx->blas) s = blas_open(&ctx->alloc, ctx->drv, &ctx->d, &ctx->blas);
  if (!s) s = blas_matmul(ctx->blas, &ctx->d, x, (CUstream)(uintptr_t)stream);
  api_leave(ctx);
  return s;
}

mgpu_status mgpu_blas_matmul(mgpu_ctx *ctx, int32_t dtype, int64_t m, int64_t n, int64_t k,
                             mgpu_buffer *a, mgpu_buffer *b, mgpu_buffer *c, uint64_t stream) {
  API_CHECK(ctx, MAGIC_CTX);
  if (dtype != MGPU_BF16 && dtype != MGPU_F16) {
    char msg[160];
    snprintf(msg, sizeof msg, "mgpu_blas_matmul: dtype must be bf16 or f16, not %s", dtype_text(dtype));
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  blas_matmul_args x = { dtype, dtype, m, n, k, 0, 0, 0, 0, 0 };
  mgpu_buffer *bufs[3] = { a, b, c };
  return blas_call(ctx, "mgpu_blas_matmul", &x, bufs, 3, stream);
}

mgpu_status mgpu_blas_matmul_f8(mgpu_ctx *ctx, int32_t a_dtype, int32_t b_dtype, int64_t m, int64_t n, int64_t k,
                                mgpu_buffer *a, mgpu_buffer *b, mgpu_buffer *c, mgpu_buffer *a_scale,
                                mgpu_buffer *b_scale, uint64_t stream) {
  API_CHECK(ctx, MAGIC_CTX);
  char msg[200];
  if (!is_f8(a_dtype) || !is_f8(b_dtype)) {
    snprintf(msg, sizeof msg, "mgpu_blas_matmul_f8: a_dtype and b_dtype must be f8e4m3 or f8e5m2, not %s and %s",
             dtype_text(a_dtype), dtype_text(b_dtype));
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  if (a_dtype == MGPU_F8E5M2 && b_dtype == MGPU_F8E5M2)
    return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_blas_matmul_f8: cublasLt has no f8e5m2 x f8e5m2 matmul "
                    "(e4m3 x e4m3, e4m3 x e5m2 and e5m2 x e4m3)");
  blas_matmul_args x = { a_dtype, b_dtype, m, n, k, 0, 0, 0, 0, 0 };
  mgpu_buffer *bufs[5] = { a, b, c, a_scale, b_scale };
  return blas_call(ctx, "mgpu_blas_matmul_f8", &x, bufs, 5, stream);
}
