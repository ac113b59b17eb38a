/*
** blas.c -- cublasLt loaded with dlopen: C = A @ B for row-major 16-bit
** matrices with f32 accumulation, and FP8's C = a_scale * b_scale *
** (A @ B^T) with bf16 C, the cuBLAS references of benchmarks.
**
** cublasLt is column-major.  A row-major (r x c) matrix is the
** column-major (c x r) matrix of its transpose, so row-major C = A @ B is
** column-major C^T = B^T @ A^T with no transposes: cublasLt's "A" is our B
** (n x k, ld n), its "B" is our A (k x m, ld k), and its C and D are our C
** (n x m, ld n).  This is what torch does for `a @ b` (the same cuBLAS
** kernels), and it keeps every algorithm of the default column order.
**
** FP8 kernels take only cublasLt's "TN" form (A transposed, B not): our B,
** row-major (n x k), is the column-major (k x n) matrix (ld k) that
** cublasLt's A = transpose of it reads as n x k; our A, row-major (m x k),
** is its B, column-major (k x m, ld k); C^T = B @ A^T as before.  So
** cublasLt's A scale is our b_scale and its B scale our a_scale.  Fast
** accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM) keeps the sum in the
** tensor cores' FP8 accumulator over all of K, never promoted to a
** separate f32 sum, as examples/matmul.lua's wgmma accumulator does.
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
  CUDA_R_8F_E4M3 = 28, CUDA_R_8F_E5M2 = 29,
  CUBLAS_COMPUTE_32F = 68,                                      /* cublasComputeType_t */
  CUBLAS_OP_T = 1,                                              /* cublasOperation_t */
  CUBLASLT_MATMUL_DESC_TRANSA = 3,                              /* int32_t (cublasOperation_t) */
  CUBLASLT_MATMUL_DESC_A_SCALE_POINTER = 17,                    /* const void *, one f32 on the device */
  CUBLASLT_MATMUL_DESC_B_SCALE_POINTER = 18,
  CUBLASLT_MATMUL_DESC_FAST_ACCUM = 25,                         /* int8_t */
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
  _(DescSet,       "cublasLtMatmulDescSetAttribute",       (cublasLtMatmulDesc_t, int, const void *, size_t)) \
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
  int a_dtype, b_dtype;           /* 16-bit: one dtype for A, B and C; FP8: A's and B's, bf16 C */
  int64_t m, n, k;
  uint32_t align;                 /* the smallest alignment of the three pointers, at most 256 */
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  size_t ws;
  CUdeviceptr a_scale, b_scale;   /* FP8: the scale pointers the descriptor holds */
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

static bool is_f8(int dtype) { return dtype == MGPU_F8E4M3 || dtype == MGPU_F8E5M2; }

static int cuda_type(int dtype) {
  switch (dtype) {
    case MGPU_BF16: return CUDA_R_16BF;
    case MGPU_F16: return CUDA_R_16F;
    case MGPU_F8E4M3: return CUDA_R_8F_E4M3;
    default: return CUDA_R_8F_E5M2;
  }
}

/* Point an FP8 plan's descriptor at the scales (cublasLt's A is our B, see the top of the file). */
static mgpu_status plan_scales(blas *bl, diag *d, blas_plan *p, CUdeviceptr a_scale, CUdeviceptr b_scale) {
  if (p->a_scale == a_scale && p->b_scale == b_scale) return MGPU_OK;
  const void *sa = (const void *)(uintptr_t)b_scale, *sb = (const void *)(uintptr_t)a_scale;
  cublasStatus_t s = bl->DescSet(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
  if (!s) s = bl->DescSet(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
  if (s) return lt_fail(bl, d, "cublasLtMatmulDescSetAttribute (scale pointers)", s);
  p->a_scale = a_scale;
  p->b_scale = b_scale;
  return MGPU_OK;
}

/* The plan for one problem: descriptors and the heuristic's first algorithm (FP8: asked with
** the scale pointers and fast accumulation set, as the calls run). */
static mgpu_status plan_make(blas *bl, diag *d, blas_plan *p, CUdeviceptr a_scale, CUdeviceptr b_scale) {
  bool f8 = is_f8(p->a_dtype);
  int at = cuda_type(p->a_dtype), bt = cuda_type(p->b_dtype), ct = f8 ? CUDA_R_16BF : at;
  cublasStatus_t s;
  if ((s = bl->DescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F)))
    return lt_fail(bl, d, "cublasLtMatmulDescCreate", s);
  if (f8) {   /* column-major C^T (n x m) = (B stored k x n)^T @ A^T (k x m) */
    int32_t trans = CUBLAS_OP_T;
    int8_t fast = 1;
    if ((s = bl->DescSet(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans)) ||
        (s = bl->DescSet(p->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast)))
      return lt_fail(bl, d, "cublasLtMatmulDescSetAttribute", s);
    mgpu_status st = plan_scales(bl, d, p, a_scale, b_scale);
    if (st) return st;
    s = bl->LayoutCreate(&p->la, bt, (uint64_t)p->k, (uint64_t)p->n, p->k);
  } else {    /* column-major C^T (n x m) = B^T (n x k) @ A^T (k x m) */
    s = bl->LayoutCreate(&p->la, bt, (uint64_t)p->n, (uint64_t)p->k, p->n);
  }
  if (s || (s = bl->LayoutCreate(&p->lb, at, (uint64_t)p->k, (uint64_t)p->m, p->k)) ||
      (s = bl->LayoutCreate(&p->lc, ct, (uint64_t)p->n, (uint64_t)p->m, p->n)))
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
    char msg[256], dts[64];
    if (p->a_dtype == p->b_dtype) snprintf(dts, sizeof dts, "%s", dt_name(p->a_dtype));
    else snprintf(dts, sizeof dts, "%s x %s", dt_name(p->a_dtype), dt_name(p->b_dtype));
    snprintf(msg, sizeof msg, "cuBLAS has no algorithm for a %s matmul %lldx%lldx%lld (pointers aligned to %u bytes)",
             dts, (long long)p->m, (long long)p->n, (long long)p->k, p->align);
    return diag_set(d, ERR_LAUNCH, "", msg);
  }
  p->algo = res.algo;
  p->ws = res.workspaceSize;
  p->used = true;
  return MGPU_OK;
}

/* The plan for a problem, found or made in the slot used longest ago. */
static mgpu_status plan_for(blas *bl, diag *d, const blas_matmul_args *x, blas_plan **out) {
  uint32_t al = align_of(x->a);
  if (align_of(x->b) < al) al = align_of(x->b);
  if (align_of(x->c) < al) al = align_of(x->c);
  for (int i = 0; i < BLAS_PLANS; i++) {
    blas_plan *q = &bl->plans[i];
    if (q->used && q->a_dtype == x->a_dtype && q->b_dtype == x->b_dtype && q->m == x->m && q->n == x->n &&
        q->k == x->k && q->align == al) {
      *out = q;
      return MGPU_OK;
    }
  }
  blas_plan *p = &bl->plans[bl->next];
  bl->next = (bl->next + 1) % BLAS_PLANS;
  plan_free(bl, p);
  p->a_dtype = x->a_dtype;
  p->b_dtype = x->b_dtype;
  p->m = x->m; p->n = x->n; p->k = x->k;
  p->align = al;
  mgpu_status st = plan_make(bl, d, p, x->a_scale, x->b_scale);
  if (st) { plan_free(bl, p); return st; }
  *out = p;
  return MGPU_OK;
}

mgpu_status blas_matmul(blas *bl, diag *d, const blas_matmul_args *x, CUstream stream) {
  blas_plan *p = NULL;
  mgpu_status st = plan_for(bl, d, x, &p);
  if (!st && is_f8(x->a_dtype)) st = plan_scales(bl, d, p, x->a_scale, x->b_scale);
  if (st) return st;
  CUdeviceptr a = x->a, b = x->b, c = x->c;
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t s = bl->Matmul(bl->h, p->op, &one, (const void *)(uintptr_t)b, p->la, (const void *)(uintptr_t)a,
                                p->lb, &zero, (const void *)(uintptr_t)c, p->lc, (void *)(uintptr_t)c, p->lc, &p->algo,
                                (void *)(uintptr_t)bl->ws, p->ws, stream);
  if (s) return lt_fail(bl, d, "cublasLtMatmul", s);
  return MGPU_OK;
}
