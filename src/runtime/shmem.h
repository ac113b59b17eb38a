/*
** shmem.h -- NVSHMEM's host library, loaded at run time with dlopen (the
** build needs neither its headers nor the library).  Only the host API is
** used: bootstrap from a unique id, the symmetric heap and the peer
** pointers into it; kernels reach peers with plain loads, stores, atomics
** and TMA through those pointers, so no NVSHMEM device code is linked.
** The structures below follow NVSHMEM 3's versioned ABI (v1 layouts).
*/
#ifndef MGPU_SHMEM_H
#define MGPU_SHMEM_H

#include <stddef.h>

#include "../core/core.h"

#define SHMEM_UID_BYTES 128

/* field, symbol, return type, parameters */
#define SHMEM_FUNCS(_) \
  _(get_uniqueid,  "nvshmemx_get_uniqueid",           int,    (void *)) \
  _(set_uid_args,  "nvshmemx_set_attr_uniqueid_args", int,    (int, int, const void *, void *)) \
  _(init_attr,     "nvshmemx_hostlib_init_attr",      int,    (unsigned, void *)) \
  _(finalize,      "nvshmemx_hostlib_finalize",       void,   (void)) \
  _(malloc,        "nvshmem_malloc",                  void *, (size_t)) \
  _(ptr,           "nvshmem_ptr",                     void *, (const void *, int)) \
  _(barrier_all,   "nvshmem_barrier_all",             void,   (void)) \
  _(my_pe,         "nvshmem_my_pe",                   int,    (void)) \
  _(n_pes,         "nvshmem_n_pes",                   int,    (void))

typedef struct shmem {
  void *lib;
#define SHMEM_FIELD(f, sym, ret, args) ret (*f) args;
  SHMEM_FUNCS(SHMEM_FIELD)
#undef SHMEM_FIELD
} shmem;

/* Load the library (MGPU_NVSHMEM names the file; else libnvshmem_host.so.3
** on the loader's path), first setting NVSHMEM_DISABLE_NVLS=1 in the
** process: NVLink multicast stays off.  NULL with the reason in why on
** failure.  The library stays loaded for the life of the process. */
const shmem *shmem_load(char *why, size_t n);
/* A fresh unique id (rank 0 makes it; every rank passes it to shmem_init). */
bool shmem_uniqueid(const shmem *s, unsigned char uid[SHMEM_UID_BYTES]);
/* Join the job as `rank` of `count` with rank 0's unique id, on the
** current CUDA context's device.  False with the reason in why. */
bool shmem_init(const shmem *s, int rank, int count, const unsigned char uid[SHMEM_UID_BYTES], char *why, size_t n);

#endif
