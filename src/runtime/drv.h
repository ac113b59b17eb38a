/*
** drv.h -- the CUDA driver API, loaded at run time with dlopen.  The build
** needs no CUDA headers: the few types and constants used are declared
** here (values from the driver API reference).
*/
#ifndef MGPU_DRV_H
#define MGPU_DRV_H

#include "../core/core.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_LOG_VERBOSE = 12,
  CU_JIT_MAX_REGISTERS = 0,
  CU_JIT_OPTIMIZATION_LEVEL = 7,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
  /* tensor maps (cuTensorMapEncodeTiled) */
  CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0, CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1, CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2,
  CU_TENSOR_MAP_DATA_TYPE_INT32 = 3, CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4, CU_TENSOR_MAP_DATA_TYPE_INT64 = 5,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6, CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7, CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
  CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_NONE = 0, CU_TENSOR_MAP_SWIZZLE_32B = 1, CU_TENSOR_MAP_SWIZZLE_64B = 2,
  CU_TENSOR_MAP_SWIZZLE_128B = 3,
  CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
  CU_EVENT_DEFAULT = 0
};

typedef struct CUlaunchAttribute {
  int id;
  char pad[4];
  union { char raw[64]; struct { unsigned x, y, z; } clusterDim; int programmaticStreamSerializationAllowed; } value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;

/* field, symbol ("a|b": first one the driver has), parameters */
#define DRV_FUNCS(_) \
  _(Init,                 "cuInit",                        (unsigned)) \
  _(DriverGetVersion,     "cuDriverGetVersion",            (int *)) \
  _(GetErrorString,       "cuGetErrorString",              (CUresult, const char **)) \
  _(DeviceGetCount,       "cuDeviceGetCount",              (int *)) \
  _(DeviceGet,            "cuDeviceGet",                   (CUdevice *, int)) \
  _(DeviceGetName,        "cuDeviceGetName",               (char *, int, CUdevice)) \
  _(DeviceGetAttribute,   "cuDeviceGetAttribute",          (int *, int, CUdevice)) \
  _(DeviceTotalMem,       "cuDeviceTotalMem_v2",           (size_t *, CUdevice)) \
  _(PrimaryCtxRetain,     "cuDevicePrimaryCtxRetain",      (CUcontext *, CUdevice)) \
  _(PrimaryCtxRelease,    "cuDevicePrimaryCtxRelease_v2",  (CUdevice)) \
  _(PrimaryCtxReset,      "cuDevicePrimaryCtxReset_v2|cuDevicePrimaryCtxReset", (CUdevice)) \
  _(CtxSetCurrent,        "cuCtxSetCurrent",               (CUcontext)) \
  _(CtxSynchronize,       "cuCtxSynchronize",              (void)) \
  _(MemAlloc,             "cuMemAlloc_v2",                 (CUdeviceptr *, size_t)) \
  _(MemGetInfo,           "cuMemGetInfo_v2",               (size_t *, size_t *)) \
  _(MemFree,              "cuMemFree_v2",                  (CUdeviceptr)) \
  _(MemcpyHtoD,           "cuMemcpyHtoD_v2",               (CUdeviceptr, const void *, size_t)) \
  _(MemsetD8,             "cuMemsetD8_v2",                 (CUdeviceptr, unsigned char, size_t)) \
  _(MemcpyDtoH,           "cuMemcpyDtoH_v2",               (void *, CUdeviceptr, size_t)) \
  _(MemcpyDtoD,           "cuMemcpyDtoD_v2",               (CUdeviceptr, CUdeviceptr, size_t)) \
  _(ModuleLoadDataEx,     "cuModuleLoadDataEx",            (CUmodule *, const void *, unsigned, int *, void **)) \
  _(ModuleUnload,         "cuModuleUnload",                (CUmodule)) \
  _(ModuleGetFunction,    "cuModuleGetFunction",           (CUfunction *, CUmodule, const char *)) \
  _(FuncGetAttribute,     "cuFuncGetAttribute",            (int *, int, CUfunction)) \
  _(FuncSetAttribute,     "cuFuncSetAttribute",            (CUfunction, int, int)) \
  _(LaunchKernelEx,       "cuLaunchKernelEx",              (const CUlaunchConfig *, CUfunction, void **, void **)) \
  _(EventCreate,          "cuEventCreate",                 (CUevent *, unsigned)) \
  _(EventDestroy,         "cuEventDestroy_v2",             (CUevent)) \
  _(EventRecord,          "cuEventRecord",                 (CUevent, CUstream)) \
  _(EventSynchronize,     "cuEventSynchronize",            (CUevent)) \
  _(EventQuery,           "cuEventQuery",                  (CUevent)) \
  _(EventElapsedTime,     "cuEventElapsedTime_v2|cuEventElapsedTime", (float *, CUevent, CUevent)) \
  _(StreamSynchronize,    "cuStreamSynchronize",           (CUstream)) \
  _(TensorMapEncodeTiled, "cuTensorMapEncodeTiled",        (void *, int, unsigned, void *, const uint64_t *, \
                                                            const uint64_t *, const unsigned *, const unsigned *, \
                                                            int, int, int, int))

/* the stream-ordered allocator (CUDA 11.2 drivers on): optional, used when all are there */
#define DRV_POOL_FUNCS(_) \
  _(MemAllocAsync,        "cuMemAllocAsync",               (CUdeviceptr *, size_t, CUstream)) \
  _(MemFreeAsync,         "cuMemFreeAsync",                (CUdeviceptr, CUstream)) \
  _(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool",  (CUmemoryPool *, CUdevice)) \
  _(MemPoolSetAttribute,  "cuMemPoolSetAttribute",         (CUmemoryPool, int, void *)) \
  _(MemPoolTrimTo,        "cuMemPoolTrimTo",               (CUmemoryPool, size_t))

typedef struct drv {
  void *lib;
#define DRV_FIELD(f, sym, args) CUresult (*f) args;
  DRV_FUNCS(DRV_FIELD)
  DRV_POOL_FUNCS(DRV_FIELD)
#undef DRV_FIELD
  CUdevice dev;
  CUcontext ctx;
  CUmemoryPool pool;   /* the device's default pool, or NULL: plain cuMemAlloc / cuMemFree */
  int driver_version;
} drv;

/* Load the driver (MGPU_LIBCUDA overrides the library path), initialise it
** and retain the primary context of device `ordinal`.  On failure returns
** NULL and writes why into reason. */
drv *drv_open(const mem_alloc *a, int ordinal, char *reason, size_t n);
void drv_close(const mem_alloc *a, drv *dr);
const char *drv_errstr(const drv *dr, CUresult r);
/* Make the context current on the calling thread. */
bool drv_bind(const drv *dr);
/* Record a failed call `what` into d; returns the status. */
mgpu_status drv_fail(const drv *dr, diag *d, const char *what, CUresult r);
/* r is an error after which the context cannot be used again (a kernel
** faulted: illegal address or instruction, trap, assert, launch failure);
** only a reset of the primary context makes the device usable. */
bool drv_fatal(CUresult r);
/* Reset the primary context (everything allocated in it is gone) and retain
** it anew; on failure the result of the call the driver refused, named in
** *step, and no context. */
CUresult drv_reset(drv *dr, const char **step);
void drv_query(const drv *dr, mgpu_device_info *info);
/* Device memory.  With the driver's stream-ordered pool (unless MGPU_POOL=off),
** a free returns the block to the pool in stream order on the legacy default
** stream, without cuMemFree's wait for the whole device, and the next
** allocation reuses it; an allocation that finds the device full
** synchronises, hands the pool's idle memory back and tries once more. */
CUresult drv_alloc(drv *dr, CUdeviceptr *p, size_t n);
void drv_free(drv *dr, CUdeviceptr p);
/* Hand the pool's idle memory back to the device (after a synchronise). */
CUresult drv_trim(drv *dr);

#endif
