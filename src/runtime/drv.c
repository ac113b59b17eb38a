/*
** drv.c -- loading libcuda.so.1 and the primary context.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv.h"

/* Every entry point: symbol ("a|b": the first one the driver has), field,
** and whether a driver without it still works (the pool's: NULL then). */
static const struct { const char *sym; size_t off; bool optional; } drv_syms[] = {
#define DRV_SYM(f, sym, args) { sym, offsetof(drv, f), false },
  DRV_FUNCS(DRV_SYM)
#undef DRV_SYM
#define DRV_SYM(f, sym, args) { sym, offsetof(drv, f), true },
  DRV_POOL_FUNCS(DRV_SYM)
#undef DRV_SYM
};

/* The pool functions if the driver has them all, the device supports pools
** and MGPU_POOL is not "off" or "0"; its release threshold raised so that a
** synchronise does not hand freed memory back to the device. */
static void pool_setup(drv *dr) {
  dr->pool = NULL;
  const char *env = getenv("MGPU_POOL");
  if (env && (!strcmp(env, "off") || !strcmp(env, "0"))) return;
  for (size_t i = 0; i < MGPU_COUNTOF(drv_syms); i++) {
    void *f = NULL;
    memcpy(&f, (char *)dr + drv_syms[i].off, sizeof f);
    if (!f) return;   /* only optional ones can be missing */
  }
  int ok = 0;
  CUmemoryPool pool = NULL;
  uint64_t keep = UINT64_MAX;
  if (dr->DeviceGetAttribute(&ok, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dr->dev) != CUDA_SUCCESS || !ok) return;
  if (dr->DeviceGetDefaultMemPool(&pool, dr->dev) != CUDA_SUCCESS || !pool) return;
  if (dr->MemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) != CUDA_SUCCESS) return;
  dr->pool = pool;
}

CUresult drv_alloc(drv *dr, CUdeviceptr *p, size_t n) {
  if (!dr->pool) return dr->MemAlloc(p, n);
  CUresult r = dr->MemAllocAsync(p, n, NULL);
  if (r == CUDA_ERROR_OUT_OF_MEMORY && drv_trim(dr) == CUDA_SUCCESS) r = dr->MemAllocAsync(p, n, NULL);
  return r;
}

void drv_free(drv *dr, CUdeviceptr p) {
  if (dr->pool) dr->MemFreeAsync(p, NULL);
  else dr->MemFree(p);
}

CUresult drv_trim(drv *dr) {
  if (!dr->pool) return CUDA_SUCCESS;
  CUresult r = dr->CtxSynchronize();
  return r ? r : dr->MemPoolTrimTo(dr->pool, 0);
}

const char *drv_errstr(const drv *dr, CUresult r) {
  const char *s = NULL;
  if (dr && dr->GetErrorString && dr->GetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return "unknown CUDA error";
}

mgpu_status drv_fail(const drv *dr, diag *d, const char *what, CUresult r) {
  return diag_set(d, ERR_DRIVER, "", what, drv_errstr(dr, r), (int)r);
}

bool drv_fatal(CUresult r) {
  switch (r) {
  case 700: case 702: case 710: case 714: case 715: case 716: case 717: case 718: case 719: case 999: return true;
  default: return false;
  }
}

CUresult drv_reset(drv *dr, const char **step) {
  dr->PrimaryCtxRelease(dr->dev);
  dr->ctx = NULL;
  CUresult r;
  if ((r = dr->PrimaryCtxReset(dr->dev)) != CUDA_SUCCESS) *step = "cuDevicePrimaryCtxReset";
  else if ((r = dr->PrimaryCtxRetain(&dr->ctx, dr->dev)) != CUDA_SUCCESS) *step = "cuDevicePrimaryCtxRetain";
  else if ((r = dr->CtxSetCurrent(dr->ctx)) != CUDA_SUCCESS) *step = "cuCtxSetCurrent";
  if (r != CUDA_SUCCESS && dr->ctx) { dr->PrimaryCtxRelease(dr->dev); dr->ctx = NULL; }
  if (r == CUDA_SUCCESS) pool_setup(dr);
  return r;
}

drv *drv_open(const mem_alloc *a, int ordinal, char *reason, size_t n) {
  const char *path = getenv("MGPU_LIBCUDA");
  if (!path || !*path) path = "libcuda.so.1";
  drv *dr = mem_calloc(a, sizeof *dr);
  if (!dr) { snprintf(reason, n, "out of memory"); return NULL; }
  dr->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dr->lib) {
    const char *e = dlerror();
    snprintf(reason, n, "no CUDA driver (%s)", e ? e : path);
    mem_free(a, dr, sizeof *dr);
    return NULL;
  }
  for (size_t i = 0; i < MGPU_COUNTOF(drv_syms); i++) {
    void *f = NULL;
    for (const char *s = drv_syms[i].sym; s && !f;) {
      const char *bar = strchr(s, '|');
      char name[64];
      size_t len = bar ? (size_t)(bar - s) : strlen(s);
      snprintf(name, sizeof name, "%.*s", (int)len, s);
      f = dlsym(dr->lib, name);
      s = bar ? bar + 1 : NULL;
    }
    if (!f && !drv_syms[i].optional) {
      snprintf(reason, n, "the CUDA driver lacks %s (driver too old?)", drv_syms[i].sym);
      dlclose(dr->lib);
      mem_free(a, dr, sizeof *dr);
      return NULL;
    }
    memcpy((char *)dr + drv_syms[i].off, &f, sizeof f);
  }
  CUresult r;
  int count = 0;
  if ((r = dr->Init(0)) != CUDA_SUCCESS) {
    snprintf(reason, n, "cuInit failed: %s (CUDA error %d)", drv_errstr(dr, r), r);
  } else if ((r = dr->DeviceGetCount(&count)) != CUDA_SUCCESS || count == 0) {
    snprintf(reason, n, "the CUDA driver reports no GPU");
  } else if (ordinal < 0 || ordinal >= count) {
    snprintf(reason, n, "device %d requested but only %d GPU(s) exist", ordinal, count);
  } else if ((r = dr->DeviceGet(&dr->dev, ordinal)) != CUDA_SUCCESS ||
             (r = dr->PrimaryCtxRetain(&dr->ctx, dr->dev)) != CUDA_SUCCESS) {
    snprintf(reason, n, "could not open GPU %d: %s (CUDA error %d)", ordinal, drv_errstr(dr, r), r);
  } else {
    dr->DriverGetVersion(&dr->driver_version);
    if (drv_bind(dr)) {
      pool_setup(dr);
      return dr;
    }
    snprintf(reason, n, "could not make the GPU context current");
    dr->PrimaryCtxRelease(dr->dev);
  }
  dlclose(dr->lib);
  mem_free(a, dr, sizeof *dr);
  return NULL;
}

void drv_close(const mem_alloc *a, drv *dr) {
  if (!dr) return;
  if (dr->ctx) dr->PrimaryCtxRelease(dr->dev);
  /* libcuda is never dlclosed: the driver does not support being unloaded */
  mem_free(a, dr, sizeof *dr);
}

bool drv_bind(const drv *dr) { return dr->CtxSetCurrent(dr->ctx) == CUDA_SUCCESS; }

void drv_query(const drv *dr, mgpu_device_info *info) {
  int v;
#define ATTR(field, id) if (dr->DeviceGetAttribute(&v, id, dr->dev) == CUDA_SUCCESS) info->field = v
  ATTR(sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  ATTR(cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  ATTR(cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  ATTR(smem_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  ATTR(l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  ATTR(clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
#undef ATTR
  size_t mem = 0;
  if (dr->DeviceTotalMem(&mem, dr->dev) == CUDA_SUCCESS) info->global_mem = (int64_t)mem;
  dr->DeviceGetName(info->name, (int)sizeof info->name, dr->dev);
  info->driver_version = dr->driver_version;
}
