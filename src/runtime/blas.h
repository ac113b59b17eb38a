/*
** blas.h -- cuBLAS through cublasLt, loaded with dlopen on first use, as
** the reference that benchmarks compare kernels against in the same
** process.  Like drv.h, the build needs no CUDA headers: the few cublasLt
** types and constants used are declared in blas.c (values from the cuBLAS
** documentation).
*/
#ifndef MGPU_BLAS_H
#define MGPU_BLAS_H

#include "drv.h"

typedef struct blas blas;

/* Load cublasLt (MGPU_CUBLASLT names the library file; otherwise
** libcublasLt.so.13, .so.12 and .so in the loader's search path), create a
** handle and a workspace on dr's context.  On failure records why in d
** (MGPU_ERR_STATE: the library is missing or unusable) and sets *out to NULL. */
mgpu_status blas_open(const mem_alloc *a, drv *dr, diag *d, blas **out);
/* Frees the plans, handle and workspace (dr's context must still exist). */
void blas_close(const mem_alloc *a, blas *bl);

/* One matmul, row-major: 16-bit (a_dtype == b_dtype, MGPU_BF16 or MGPU_F16,
** also c's): c (m x n) = a (m x k) @ b (k x n); FP8 (MGPU_F8E4M3 / MGPU_F8E5M2,
** bf16 c): c = *a_scale * *b_scale * (a (m x k) @ b^T), b (n x k), the scales
** one f32 each on the device. */
typedef struct blas_matmul_args {
  int a_dtype, b_dtype;
  int64_t m, n, k;
  CUdeviceptr a, b, c, a_scale, b_scale;
} blas_matmul_args;

/* Enqueue x on stream with f32 accumulation (FP8 in cublasLt's fast-accumulation
** mode) and the heuristic's best algorithm, planned once per shape, dtypes and
** alignment. */
mgpu_status blas_matmul(blas *bl, diag *d, const blas_matmul_args *x, CUstream stream);

#endif
