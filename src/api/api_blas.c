/*
** api_blas.c -- mgpu_blas_matmul: cuBLAS on the context's GPU and stream,
** the reference that benchmarks time our kernels against in the same
** process (src/runtime/blas.c loads cublasLt).
*/
#include <stdio.h>

#include "api.h"
#include "../runtime/blas.h"

void api_blas_close(mgpu_ctx *ctx) {
  if (ctx->blas) blas_close(&ctx->alloc, ctx->blas);
  ctx->blas = NULL;
}

/* Whether buf holds a rows x cols matrix of 2-byte elements. */
static bool holds(const mgpu_buffer *buf, int64_t rows, int64_t cols) {
  return (uint64_t)rows <= (UINT64_MAX / 2) / (uint64_t)cols && (uint64_t)rows * (uint64_t)cols * 2 <= buf->size;
}

mgpu_status mgpu_blas_matmul(mgpu_ctx *ctx, int32_t dtype, int64_t m, int64_t n, int64_t k,
                             mgpu_buffer *a, mgpu_buffer *b, mgpu_buffer *c, uint64_t stream) {
  API_CHECK(ctx, MAGIC_CTX);
  char msg[512];
  if (dtype != MGPU_BF16 && dtype != MGPU_F16) {
    snprintf(msg, sizeof msg, "mgpu_blas_matmul: dtype must be bf16 or f16, not %s",
             dt_valid(dtype) ? dt_name(dtype) : "an unknown dtype");
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  if (m < 1 || n < 1 || k < 1) {
    snprintf(msg, sizeof msg, "mgpu_blas_matmul: m, n and k must be at least 1, got %lld, %lld, %lld",
             (long long)m, (long long)n, (long long)k);
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  mgpu_buffer *bufs[3] = { a, b, c };
  for (int i = 0; i < 3; i++)
    if (!bufs[i] || bufs[i]->magic != MAGIC_BUF || bufs[i]->ctx != ctx)
      return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_blas_matmul: a, b and c must be buffers of this context");
  if (!holds(a, m, k) || !holds(b, k, n) || !holds(c, m, n)) {
    snprintf(msg, sizeof msg, "mgpu_blas_matmul: buffers of %llu, %llu and %llu bytes cannot hold a %lldx%lld, b "
             "%lldx%lld and c %lldx%lld of %s", (unsigned long long)a->size, (unsigned long long)b->size,
             (unsigned long long)c->size, (long long)m, (long long)k, (long long)k, (long long)n, (long long)m,
             (long long)n, dt_name(dtype));
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  if (!api_gpu(ctx)) {
    snprintf(msg, sizeof msg, "cuBLAS runs only on a GPU, and this context %s%s%s",
             ctx->info.mode == MGPU_MODE_COMPILE_ONLY ? "only compiles" : "runs kernels in the interpreter",
             ctx->info.reason[0] ? ": " : "", ctx->info.reason);
    return diag_set(&ctx->d, ERR_NO_DEVICE, "", msg);
  }
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = api_buffer_live(a);
  if (!s) s = api_buffer_live(b);
  if (!s) s = api_buffer_live(c);
  if (!s && !ctx->blas) s = blas_open(&ctx->alloc, ctx->drv, &ctx->d, &ctx->blas);
  if (!s) s = blas_matmul(ctx->blas, &ctx->d, dtype, m, n, k, a->addr, b->addr, c->addr, (CUstream)(uintptr_t)stream);
  api_leave(ctx);
  return s;
}
