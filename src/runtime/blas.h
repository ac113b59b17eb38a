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

/* c (m x n) = a (m x k) @ b (k x n): row-major, dtype MGPU_BF16 or
** MGPU_F16 for all three, f32 accumulation, enqueued on stream with the
** heuristic's best algorithm (planned once per shape, dtype and alignment). */
mgpu_status blas_matmul(blas *bl, diag *d, int dtype, int64_t m, int64_t n, int64_t k, CUdeviceptr a,
                        CUdeviceptr b, CUdeviceptr c, CUstream stream);

#endif
