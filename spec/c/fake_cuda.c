/*
** fake_cuda.c -- a stand-in for libcuda.so.1 that runs no kernels, for the
** tests of what mgpu does when a GPU kernel faults or never ends
** (spec/gpu_faults_spec.lua loads it with MGPU_LIBCUDA).  It models one
** H100-like device whose memory is host memory, and:
**   FAKE_CUDA_FAULT=name  a launch of kernel `name` faults: from then on
**                         every call but the context reset answers 700
**                         (illegal address), as the driver's sticky errors do;
**   FAKE_CUDA_HANG=name   a launch of kernel `name` never completes: event
**                         queries answer 600 (not ready), and a blocking wait
**                         aborts the process (mgpu must poll under a timeout).
**   FAKE_CUDA_NO_PDL=1    a launch that allows programmatic dependent launch
**                         is refused (invalid value), as by a driver without it;
**   FAKE_CUDA_TRACE=1     each launch (and refusal) is written to stderr, with
**                         whether it allowed programmatic dependent launch;
**   FAKE_CUDA_STICKY=1    a fault stays with the process, as the real driver
**                         keeps 700 and 715: retaining the context again
**                         answers the fault's error;
** cuDevicePrimaryCtxReset clears both and frees every allocation and
** handle; using freed memory, a module or an event of an older context
** aborts, so the tests also check that mgpu forgets them.  Kernels compute
** nothing; memory is host memory.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/runtime/drv.h"   /* the types and constants mgpu passes (cuLaunchKernelEx's configuration) */

#pragma GCC diagnostic ignored "-Wmissing-prototypes"   /* the driver's entry points: no header declares them */

enum { OK = 0, INVALID_VALUE = 1, NOT_READY = 600, ILLEGAL_ADDRESS = 700, NOT_SUPPORTED = 801 };

typedef struct handle { unsigned gen; char name[64]; } handle;   /* modules, functions, events */

static struct {
  unsigned gen;          /* bumped by each reset */
  int faulted, hung, was_faulted;   /* was_faulted: a fault happened in this process (FAKE_CUDA_STICKY) */
  void *mem[1024];       /* live allocations and their sizes */
  size_t size[1024];
  handle *h[1024];       /* every handle made (reachable, so leak checkers stay quiet) */
} dev = { 1, 0, 0, 0, { 0 }, { 0 }, { 0 } };

static void die(const char *what) {
  fprintf(stderr, "fake_cuda: %s\n", what);
  abort();
}

static handle *new_handle(const char *name) {
  for (int i = 0; i < 1024; i++)
    if (!dev.h[i]) {
      if (!(dev.h[i] = calloc(1, sizeof *dev.h[i]))) die("out of memory");
      dev.h[i]->gen = dev.gen;
      snprintf(dev.h[i]->name, sizeof dev.h[i]->name, "%s", name);
      return dev.h[i];
    }
  die("too many handles");
  return NULL;
}

static void free_handle(handle *h) {
  for (int i = 0; i < 1024; i++)
    if (dev.h[i] == h) free(h), dev.h[i] = NULL;
}

static void check_handle(const void *p, const char *what) {
  if (!p || ((const handle *)p)->gen != dev.gen) die(what);
}

/* The sticky error, once a kernel has faulted. */
#define STICKY() do { if (dev.faulted) return ILLEGAL_ADDRESS; } while (0)

static int find_mem(CUdeviceptr p) {
  for (int i = 0; i < 1024; i++)
    if (dev.mem[i] && (CUdeviceptr)(size_t)dev.mem[i] == p) return i;
  return -1;
}

/* [p, p + n) lies in a live allocation. */
static void check_mem(CUdeviceptr p, size_t n, const char *what) {
  for (int i = 0; i < 1024; i++) {
    CUdeviceptr b = (CUdeviceptr)(size_t)dev.mem[i];
    if (dev.mem[i] && p >= b && p - b <= dev.size[i] && n <= dev.size[i] - (p - b)) return;
  }
  die(what);
}

static int matches(const char *var, const char *name) {
  const char *v = getenv(var);
  return v && *v && strcmp(v, name) == 0;
}

CUresult cuInit(unsigned flags) { (void)flags; return OK; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }

CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == ILLEGAL_ADDRESS ? "an illegal memory access was encountered"
     : r == NOT_READY ? "device not ready" : r == NOT_SUPPORTED ? "operation not supported" : "invalid argument";
  return OK;
}

CUresult cuDeviceGetCount(int *n) { *n = 1; return OK; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? OK : INVALID_VALUE; }
CUresult cuDeviceGetName(char *s, int n, int d) { (void)d; snprintf(s, (size_t)n, "fake H100 (fake_cuda)"); return OK; }

CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  switch (attr) {
  case 1: *v = 1024; break;                 /* threads per block */
  case 13: *v = 1980000; break;             /* clock, kHz */
  case 16: *v = 132; break;                 /* SMs */
  case 38: *v = 50 << 20; break;            /* L2 */
  case 75: *v = 9; break;                   /* compute capability */
  case 76: *v = 0; break;
  case 97: *v = 232448; break;              /* SMEM opt-in */
  case 115: *v = !getenv("FAKE_CUDA_NO_POOLS"); break;   /* stream-ordered pools */
  default: *v = 0;
  }
  return OK;
}

CUresult cuDeviceTotalMem_v2(size_t *b, int d) { (void)d; *b = (size_t)80 << 30; return OK; }
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) {
  (void)d;
  static int sticky = -1;
  if (sticky < 0) { const char *v = getenv("FAKE_CUDA_STICKY"); sticky = v && *v == '1'; }
  if (sticky && dev.was_faulted) return ILLEGAL_ADDRESS;
  *ctx = &dev;
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return OK; }

CUresult cuDevicePrimaryCtxReset_v2(int d) {
  (void)d;
  for (int i = 0; i < 1024; i++) {
    free(dev.mem[i]);
    dev.mem[i] = NULL;
    if (dev.h[i]) free(dev.h[i]), dev.h[i] = NULL;
  }
  dev.faulted = dev.hung = 0;
  dev.gen++;
  return OK;
}

CUresult cuCtxSetCurrent(void *ctx) { (void)ctx; return OK; }

CUresult cuCtxSynchronize(void) {
  STICKY();
  if (dev.hung) die("cuCtxSynchronize waits for a kernel that never ends");
  return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  STICKY();
  for (int i = 0; i < 1024; i++)
    if (!dev.mem[i]) {
      if (!(dev.mem[i] = aligned_alloc(256, (n + 255) / 256 * 256))) return 2;
      dev.size[i] = n;
      *p = (CUdeviceptr)(size_t)dev.mem[i];
      return OK;
    }
  return 2;
}

CUresult cuMemGetInfo_v2(size_t *fr, size_t *tot) { *fr = *tot = (size_t)80 << 30; return OK; }

CUresult cuMemFree_v2(CUdeviceptr p) {
  int i = find_mem(p);
  if (i < 0) die("cuMemFree of memory that is not allocated (freed, or from before a reset)");
  free(dev.mem[i]);
  dev.mem[i] = NULL;
  return OK;
}

/* The stream-ordered pool: blocks as cuMemAlloc's, counted so that tests can
** tell which allocator the engine used (FAKE_CUDA_POOL_REPORT prints the
** counts at exit). */
static int pool_allocs, pool_frees, pool_trims;
static void pool_report(void) {
  fprintf(stderr, "fake_cuda pool: %d allocs, %d frees, %d trims\n", pool_allocs, pool_frees, pool_trims);
}
CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, void *stream) {
  (void)stream;
  static int reg;
  if (!reg++ && getenv("FAKE_CUDA_POOL_REPORT")) atexit(pool_report);
  pool_allocs++;
  return cuMemAlloc_v2(p, n);
}
CUresult cuMemFreeAsync(CUdeviceptr p, void *stream) { (void)stream; pool_frees++; return cuMemFree_v2(p); }
CUresult cuDeviceGetDefaultMemPool(void **pool, int d) { (void)d; *pool = &dev; return OK; }
CUresult cuMemPoolSetAttribute(void *pool, int attr, void *v) { (void)pool; (void)attr; (void)v; return OK; }
CUresult cuMemPoolTrimTo(void *pool, size_t keep) { (void)pool; (void)keep; pool_trims++; return OK; }

static CUresult blocking(void) {
  STICKY();
  if (dev.hung) die("a blocking copy waits for a kernel that never ends");
  return OK;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  CUresult r = blocking();
  if (r) return r;
  check_mem(d, n, "cuMemcpyHtoD into memory that is not allocated");
  memcpy((void *)(size_t)d, s, n);
  return OK;
}

CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  CUresult r = blocking();
  if (r) return r;
  check_mem(s, n, "cuMemcpyDtoH from memory that is not allocated");
  memcpy(d, (const void *)(size_t)s, n);
  return OK;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  CUresult r = blocking();
  if (r) return r;
  check_mem(d, n, "cuMemcpyDtoD into memory that is not allocated");
  check_mem(s, n, "cuMemcpyDtoD from memory that is not allocated");
  memmove((void *)(size_t)d, (const void *)(size_t)s, n);
  return OK;
}

CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  CUresult r = blocking();
  if (r) return r;
  check_mem(d, n, "cuMemsetD8 of memory that is not allocated");
  memset((void *)(size_t)d, v, n);
  return OK;
}

/* FAKE_CUDA_MODULE_REPORT: each loaded image's first comment line that says
** something (mgpu's PTX opens with "// Generated by mgpu ..."), on stderr. */
CUresult cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *k, void **v) {
  (void)n; (void)k; (void)v;
  STICKY();
  if (getenv("FAKE_CUDA_MODULE_REPORT")) {
    const char *s = strstr((const char *)img, "// ");
    size_t len = s ? strcspn(s, "\n") : 0;
    fprintf(stderr, "fake_cuda module: %.*s\n", (int)len, s ? s : "");
  }
  *m = new_handle("module");
  return OK;
}

CUresult cuModuleUnload(void *m) {
  check_handle(m, "cuModuleUnload of a module from before a reset");
  free_handle(m);
  return OK;
}

/* No linker: mgpu then loads the PTX itself. */

CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  STICKY();
  check_handle(m, "cuModuleGetFunction in a module from before a reset");
  *f = new_handle(name);
  return OK;
}

CUresult cuFuncGetAttribute(int *v, int attr, void *f) { (void)attr; (void)f; *v = 0; return OK; }
CUresult cuFuncSetAttribute(void *f, int attr, int v) { (void)attr; (void)v; STICKY(); check_handle(f, "stale function"); return OK; }

CUresult cuLaunchKernelEx(const void *cfg, void *f, void **params, void **extra) {
  (void)params; (void)extra;
  STICKY();
  check_handle(f, "cuLaunchKernelEx of a function from before a reset");
  const char *name = ((handle *)f)->name;
  const CUlaunchConfig *c = cfg;
  int pdl = 0;
  for (unsigned i = 0; i < c->numAttrs; i++) pdl |= c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  if (pdl && getenv("FAKE_CUDA_NO_PDL")) {   /* a driver without it */
    if (getenv("FAKE_CUDA_TRACE")) fprintf(stderr, "fake_cuda: refused launch %s (pdl)\n", name);
    return INVALID_VALUE;
  }
  if (getenv("FAKE_CUDA_TRACE")) fprintf(stderr, "fake_cuda: launch %s pdl=%d\n", name, pdl);
  if (matches("FAKE_CUDA_FAULT", name)) dev.faulted = dev.was_faulted = 1;
  if (matches("FAKE_CUDA_HANG", name)) dev.hung = 1;
  return OK;
}

CUresult cuEventCreate(void **e, unsigned flags) { (void)flags; STICKY(); *e = new_handle("event"); return OK; }
CUresult cuEventDestroy_v2(void *e) {
  check_handle(e, "cuEventDestroy of an event from before a reset");
  free_handle(e);
  return OK;
}
CUresult cuEventRecord(void *e, void *stream) { (void)stream; STICKY(); check_handle(e, "cuEventRecord of a stale event"); return OK; }

CUresult cuEventQuery(void *e) {
  STICKY();
  check_handle(e, "cuEventQuery of a stale event");
  return dev.hung ? NOT_READY : OK;
}

CUresult cuEventSynchronize(void *e) {
  STICKY();
  check_handle(e, "cuEventSynchronize of a stale event");
  if (dev.hung) die("cuEventSynchronize waits for a kernel that never ends");
  return OK;
}

CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { (void)a; (void)b; STICKY(); *ms = 0.001f; return OK; }
CUresult cuStreamSynchronize(void *s) { (void)s; return cuCtxSynchronize(); }

CUresult cuTensorMapEncodeTiled(void *map, int dt, unsigned rank, void *addr, const unsigned long long *dims,
                                const unsigned long long *strides, const unsigned *box, const unsigned *es, int il,
                                int sw, int l2, int oob) {
  (void)dt; (void)rank; (void)dims; (void)strides; (void)box; (void)es; (void)il; (void)sw; (void)l2; (void)oob;
  check_mem((CUdeviceptr)(size_t)addr, 1, "a tensor map over memory that is not allocated");
  memset(map, 0, 128);
  return OK;
}
