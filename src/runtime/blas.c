/*
** blas.c -- cublasLt loaded with dlopen: C = A @ B for row-major 16-bit
** matrices with f32 accumulation, the cuBLAS reference of benchmarks.
**
** cublasLt is column-major.  A row-major (r x c) matrix is the
** column-major (c x r) matrix of its transpose, so row-major C = A @ B is
** column-major C^T = B^T @ A^T with no transposes: cublasLt's "A" is our B
** (n x k, ld n), its "B" is our A (k x m, ld k), and its C and D are our C
** (n x m, ld n).  This is what torch does for `a @ b` (the same cuBLAS
** kernels), and it keeps every algorithm of the default column order.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"

/* -- The cublasLt API used (cublasLt.h, library_types.h) --------------------------- */

typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cublasLtMatmulDescOpaque *cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutOpaque *cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceOpaque *cublasLtMatmulPreference_t;
typedef int cublasStatus_t;

typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;

typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14,            /* cudaDataType_t */
  CUBLAS_COMPUTE_32F = 68,                                      /* cublasComputeType_t */
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,                 /* uint64_t */
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,               /* uint32_t, and B, C, D after it */
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8
};

/* field, symbol, parameters (enums are passed as int, as the C ABI does) */
#define LT_FUNCS(_) \
  _(Create,        "cublasLtCreate",                       (cublasLtHandle_t *)) \
  _(Destroy,       "cublasLtDestroy",                      (cublasLtHandle_t)) \
  _(DescCreate,    "cublasLtMatmulDescCreate",             (cublasLtMatmulDesc_t *, int, int)) \
  _(DescDestroy,   "cublasLtMatmulDescDestroy",            (cublasLtMatmulDesc_t)) \
  _(LayoutCreate,  "cublasLtMatrixLayoutCreate",           (cublasLtMatrixLayout_t *, int, uint64_t, uint64_t, int64_t)) \
  _(LayoutDestroy, "cublasLtMatrixLayoutDestroy",          (cublasLtMatrixLayout_t)) \
  _(PrefCreate,    "cublasLtMatmulPreferenceCreate",       (cublasLtMatmulPreference_t *)) \
  _(PrefDestroy,   "cublasLtMatmulPreferenceDestroy",      (cublasLtMatmulPreference_t)) \
  _(PrefSet,       "cublasLtMatmulPreferenceSetAttribute", (cublasLtMatmulPreference_t, int, const void *, size_t)) \
  _(Heuristic,     "cublasLtMatmulAlgoGetHeuristic",       (cublasLtHandle_t, cublasLtMatmulDesc_t, \
                                                            cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, \
                                                            cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, \
                                                            cublasLtMatmulPreference_t, int, \
                                                            cublasLtMatmulHeuristicResult_t *, int *)) \
  _(Matmul,        "cublasLtMatmul",                       (cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, \
                                                            const void *, cublasLtMatrixLayout_t, const void *, \
                                                            cublasLtMatrixLayout_t, const void *, const void *, \
                                                            cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t, \
                                                            const cublasLtMatmulAlgo_t *, void *, size_t, CUstream))

enum { BLAS_PLANS = 16 };
#define BLAS_WORKSPACE ((size_t)32 << 20)   /* 32 MiB, what torch gives cuBLAS on Hopper */

typedef struct blas_plan {
  bool used;
  int dtype;
  int64_t m, n, k;
  uint32_t align;                 /* the smallest alignment of the three pointers, at most 256 */
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  size_t ws;
} blas_plan;

struct blas {
  void *lib;
#define LT_FIELD(f, sym, args) cublasStatus_t (*f) args;
  LT_FUNCS(LT_FIELD)
#undef LT_FIELD
  const char *(*StatusString)(cublasStatus_t);   /* optional (cuBLAS 11.4+) */
  drv *dr;
  cublasLtHandle_t h;
  CUdeviceptr ws;
  blas_plan plans[BLAS_PLANS];
  unsigned next;                  /* the plan slot replaced when all are used */
};

static const struct { const char *sym; size_t off; } lt_syms[] = {
#define LT_SYM(f, sym, args) { sym, offsetof(blas, f) },
  LT_FUNCS(LT_SYM)
#undef LT_SYM
};

static const char *status_str(const blas *bl, cublasStatus_t s) {
  const char *str = bl->StatusString ? bl->StatusString(s) : NULL;
  if (str) return str;
  switch (s) {
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cuBLAS error";
  }
}

static mgpu_status lt_fail(const blas *bl, diag *d, const char *what, cublasStatus_t s) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s failed: %s (cuBLAS status %d)", what, status_str(bl, s), s);
  return diag_set(d, ERR_LAUNCH, "", msg);
}

/* dlopen one candidate and resolve every symbol; false with why in reason. */
static bool lt_load(blas *bl, const char *path, char *reason, size_t n) {
  bl->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!bl->lib) {
    const char *e = dlerror();
    snprintf(reason, n, "%s", e ? e : path);
    return false;
  }
  for (size_t i = 0; i < MGPU_COUNTOF(lt_syms); i++) {
    void *f = dlsym(bl->lib, lt_syms[i].sym);
    if (!f) {
      snprintf(reason, n, "%s lacks %s (cuBLAS too old?)", path, lt_syms[i].sym);
      dlclose(bl->lib);
      bl->lib = NULL;
      return false;
    }
    memcpy((char *)bl + lt_syms[i].off, &f, sizeof f);
  }
  void *f = dlsym(bl->lib, "cublasLtGetStatusString");
  memcpy(&bl->StatusString, &f, sizeof f);
  return true;
}

mgpu_status blas_open(const mem_alloc *a, drv *dr, diag *d, blas **out) {
  *out = NULL;
  blas *bl = mem_calloc(a, sizeof *bl);
  if (!bl) return diag_set(d, ERR_NOMEM, "");
  bl->dr = dr;
  char msg[1024], why[512] = "";
  const char *env = getenv("MGPU_CUBLASLT");
  if (env && *env) {
    if (!lt_load(bl, env, why, sizeof why)) {
      snprintf(msg, sizeof msg, "cuBLAS is not available: MGPU_CUBLASLT=%s could not be loaded (%s)", env, why);
      mem_free(a, bl, sizeof *bl);
      return diag_set(d, ERR_STATE, "", msg);
    }
  } else {
    static const char *const names[] = { "libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so" };
    for (size_t i = 0; i < MGPU_COUNTOF(names) && !bl->lib; i++) lt_load(bl, names[i], why, sizeof why);
    if (!bl->lib) {
      snprintf(msg, sizeof msg,
               "cuBLAS is not available: libcublasLt.so.13, .so.12 or .so was not found (%s); set MGPU_CUBLASLT "
               "to the library's path (pip's wheels put it under site-packages/nvidia/cublas/lib/)", why);
      mem_free(a, bl, sizeof *bl);
      return diag_set(d, ERR_STATE, "", msg);
    }
  }
  /* the library stays loaded from here on: its CUDA runtime is not meant to be unloaded */
  cublasStatus_t s = bl->Create(&bl->h);
  if (s != CUBLAS_STATUS_SUCCESS) {
    snprintf(msg, sizeof msg, "cuBLAS is not available: cublasLtCreate failed: %s (cuBLAS status %d; a cuBLAS "
             "newer than the driver?)", status_str(bl, s), s);
    mem_free(a, bl, sizeof *bl);
    return diag_set(d, ERR_STATE, "", msg);
  }
  CUresult r = dr->MemAlloc(&bl->ws, BLAS_WORKSPACE);
  if (r) {
    bl->Destroy(bl->h);
    mem_free(a, bl, sizeof *bl);
    return drv_fail(dr, d, "cuMemAlloc (cuBLAS workspace)", r);
  }
  *out = bl;
  return MGPU_OK;
}

static void plan_free(blas *bl, blas_plan *p) {
  if (p->op) bl->DescDestroy(p->op);
  if (p->la) bl->LayoutDestroy(p->la);
  if (p->lb) bl->LayoutDestroy(p->lb);
  if (p->lc) bl->LayoutDestroy(p->lc);
  memset(p, 0, sizeof *p);
}

void blas_close(const mem_alloc *a, blas *bl) {
  if (!bl) return;
  drv_bind(bl->dr);
  for (int i = 0; i < BLAS_PLANS; i++) plan_free(bl, &bl->plans[i]);
  bl->Destroy(bl->h);
  if (bl->ws) bl->dr->MemFree(bl->ws);
  mem_free(a, bl, sizeof *bl);
}

static uint32_t align_of(CUdeviceptr p) {
  uint32_t al = 256;
  while (al > 1 && p % al) al /= 2;
  return al;
}

/* The plan for one problem: descriptors and the heuristic's first algorithm. */
static mgpu_status plan_make(blas *bl, diag *d, blas_plan *p) {
  int dt = p->dtype == MGPU_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  cublasStatus_t s;
  /* column-major C^T (n x m) = B^T (n x k) @ A^T (k x m), see the top of the file */
  if ((s = bl->DescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F)))
    return lt_fail(bl, d, "cublasLtMatmulDescCreate", s);
  if ((s = bl->LayoutCreate(&p->la, dt, (uint64_t)p->n, (uint64_t)p->k, p->n)) ||
      (s = bl->LayoutCreate(&p->lb, dt, (uint64_t)p->k, (uint64_t)p->m, p->k)) ||
      (s = bl->LayoutCreate(&p->lc, dt, (uint64_t)p->n, (uint64_t)p->m, p->n)))
    return lt_fail(bl, d, "cublasLtMatrixLayoutCreate", s);
  cublasLtMatmulPreference_t pref = NULL;
  if ((s = bl->PrefCreate(&pref))) return lt_fail(bl, d, "cublasLtMatmulPreferenceCreate", s);
  uint64_t wsb = BLAS_WORKSPACE;
  s = bl->PrefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
  for (int attr = CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES; !s && attr <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES; attr++)
    s = bl->PrefSet(pref, attr, &p->align, sizeof p->align);
  cublasLtMatmulHeuristicResult_t res;
  memset(&res, 0, sizeof res);
  int count = 0;
  if (s) {
    bl->PrefDestroy(pref);
    return lt_fail(bl, d, "cublasLtMatmulPreferenceSetAttribute", s);
  }
  s = bl->Heuristic(bl->h, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &count);
  bl->PrefDestroy(pref);
  if (s) return lt_fail(bl, d, "cublasLtMatmulAlgoGetHeuristic", s);
  if (count < 1 || res.state != CUBLAS_STATUS_SUCCESS) {
    char msg[256];
    snprintf(msg, sizeof msg, "cuBLAS has no algorithm for a %s matmul %lldx%lldx%lld (pointers aligned to %u bytes)",
             dt_name(p->dtype), (long long)p->m, (long long)p->n, (long long)p->k, p->align);
    return diag_set(d, ERR_LAUNCH, "", msg);
  }
  p->algo = res.algo;
  p->ws = res.workspaceSize;
  p->used = true;
  return MGPU_OK;
}

mgpu_status blas_matmul(blas *bl, diag *d, int dtype, int64_t m, int64_t n, int64_t k, CUdeviceptr a,
                        CUdeviceptr b, CUdeviceptr c, CUstream stream) {
  uint32_t al = align_of(a);
  if (align_of(b) < al) al = align_of(b);
  if (align_of(c) < al) al = align_of(c);
  blas_plan *p = NULL;
  for (int i = 0; i < BLAS_PLANS && !p; i++) {
    blas_plan *q = &bl->plans[i];
    if (q->used && q->dtype == dtype && q->m == m && q->n == n && q->k == k && q->align == al) p = q;
  }
  if (!p) {
    p = &bl->plans[bl->next];
    bl->next = (bl->next + 1) % BLAS_PLANS;
    plan_free(bl, p);
    p->dtype = dtype;
    p->m = m; p->n = n; p->k = k;
    p->align = al;
    mgpu_status st = plan_make(bl, d, p);
    if (st) { plan_free(bl, p); return st; }
  }
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t s = bl->Matmul(bl->h, p->op, &one, (const void *)(uintptr_t)b, p->la, (const void *)(uintptr_t)a,
                                p->lb, &zero, (const void *)(uintptr_t)c, p->lc, (void *)(uintptr_t)c, p->lc, &p->algo,
                                (void *)(uintptr_t)bl->ws, p->ws, stream);
  if (s) return lt_fail(bl, d, "cublasLtMatmul", s);
  return MGPU_OK;
}
