/*
** shmem.c -- loading NVSHMEM's host library and joining a job.
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmem.h"

/* NVSHMEM 3's versioned init structures (version = 1 << 16 | size). */
typedef struct { int version; char internal[SHMEM_UID_BYTES - 4]; } shmem_uid;
typedef struct { int version; shmem_uid *id; int myrank; int nranks; } shmem_uid_args;
typedef struct { int version; shmem_uid_args uid_args; char content[96]; } shmem_init_args;
typedef struct { int version; void *mpi_comm; shmem_init_args args; } shmem_init_attr;
enum { SHMEM_INIT_WITH_UNIQUEID = 1 << 3 };
#define SHMEM_VERSION(t) ((1 << 16) + (int)sizeof(t))

static const struct { const char *sym; size_t off; } shmem_syms[] = {
#define SHMEM_SYM(f, sym, ret, args) { sym, offsetof(shmem, f) },
  SHMEM_FUNCS(SHMEM_SYM)
#undef SHMEM_SYM
};

static shmem lib;
static char lib_why[256];
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void load(void) {
  setenv("NVSHMEM_DISABLE_NVLS", "1", 1);   /* before NVSHMEM reads its options: mgpu never uses NVLink multicast */
  const char *path = getenv("MGPU_NVSHMEM");
  if (!path || !*path) path = "libnvshmem_host.so.3";
  lib.lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);   /* its plugins resolve symbols against it */
  if (!lib.lib) {
    const char *e = dlerror();
    snprintf(lib_why, sizeof lib_why, "NVSHMEM is not available (%s); set MGPU_NVSHMEM to libnvshmem_host.so.3", e ? e : path);
    return;
  }
  for (size_t i = 0; i < MGPU_COUNTOF(shmem_syms); i++) {
    void *f = dlsym(lib.lib, shmem_syms[i].sym);
    if (!f) {
      snprintf(lib_why, sizeof lib_why, "%s lacks %s (NVSHMEM 3 is needed)", path, shmem_syms[i].sym);
      lib.lib = NULL;
      return;
    }
    memcpy((char *)&lib + shmem_syms[i].off, &f, sizeof f);
  }
}

const shmem *shmem_load(char *why, size_t n) {
  pthread_once(&lib_once, load);
  if (lib.lib) return &lib;
  snprintf(why, n, "%s", lib_why);
  return NULL;
}

bool shmem_uniqueid(const shmem *s, unsigned char uid[SHMEM_UID_BYTES]) {
  shmem_uid id;
  memset(&id, 0, sizeof id);
  id.version = SHMEM_VERSION(shmem_uid);
  if (s->get_uniqueid(&id) != 0) return false;
  memcpy(uid, &id, sizeof id);
  return true;
}

bool shmem_init(const shmem *s, int rank, int count, const unsigned char uid[SHMEM_UID_BYTES], char *why, size_t n) {
  shmem_uid id;
  shmem_init_attr attr;
  memcpy(&id, uid, sizeof id);
  memset(&attr, 0, sizeof attr);
  attr.version = SHMEM_VERSION(shmem_init_attr);
  attr.args.version = SHMEM_VERSION(shmem_init_args);
  attr.args.uid_args.version = SHMEM_VERSION(shmem_uid_args);
  int r = s->set_uid_args(rank, count, &id, &attr);
  if (r == 0) r = s->init_attr(SHMEM_INIT_WITH_UNIQUEID, &attr);
  if (r != 0) { snprintf(why, n, "NVSHMEM initialisation failed (status %d) for rank %d of %d", r, rank, count); return false; }
  if (s->my_pe() != rank || s->n_pes() != count) {
    snprintf(why, n, "NVSHMEM made this process PE %d of %d, not rank %d of %d", s->my_pe(), s->n_pes(), rank, count);
    return false;
  }
  return true;
}

_Static_assert(sizeof(shmem_uid) == SHMEM_UID_BYTES, "NVSHMEM unique ids are 128 bytes");
_Static_assert(sizeof(shmem_init_args) == 128 && sizeof(shmem_init_attr) == 144, "NVSHMEM 3 init attribute layout (v1)");
