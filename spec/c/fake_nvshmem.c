/*
** fake_nvshmem.c -- a stand-in for libnvshmem_host.so.3 (MGPU_NVSHMEM loads
** it), with spec/c/fake_cuda.c, for the tests of jobs a launcher starts
** (spec/launcher_spec.lua): no GPU, no transport.  Its unique ids are random;
** its initialisation is collective, as NVSHMEM's bootstrap through rank 0's
** socket is: each rank writes the id it was given to FAKE_NVSHMEM_DIR/rank<R>
** and waits (10 s at most) for every rank's file, and it fails unless every
** rank holds the same id of this job and NVSHMEM_DISABLE_NVLS is 1.  The
** symmetric heap is fake_cuda's memory (MGPU_LIBCUDA), which every rank
** "maps" at offset 0.
*/
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wmissing-prototypes"   /* NVSHMEM's entry points: no header declares them */

#define UID_BYTES 128

static struct { int rank, count; unsigned char uid[UID_BYTES]; } job = { -1, 0, { 0 } };

int nvshmemx_get_uniqueid(void *id) {
  unsigned char *u = id;
  int fd = open("/dev/urandom", O_RDONLY);
  bool ok = fd >= 0 && read(fd, u + 4, UID_BYTES - 4) == UID_BYTES - 4;   /* after the version word mgpu set */
  if (fd >= 0) close(fd);
  return ok ? 0 : 1;
}

int nvshmemx_set_attr_uniqueid_args(int rank, int count, const void *id, void *attr) {
  (void)attr;
  job.rank = rank;
  job.count = count;
  memcpy(job.uid, id, UID_BYTES);
  return 0;
}

static void hex(const unsigned char *u, char *out) {
  for (int i = 0; i < UID_BYTES; i++) sprintf(out + 2 * i, "%02x", u[i]);
}

int nvshmemx_hostlib_init_attr(unsigned flags, void *attr) {
  (void)flags;
  (void)attr;
  const char *dir = getenv("FAKE_NVSHMEM_DIR"), *nvls = getenv("NVSHMEM_DISABLE_NVLS");
  if (!dir || job.rank < 0 || !nvls || strcmp(nvls, "1")) return 2;
  char path[4200], mine[2 * UID_BYTES + 1], theirs[2 * UID_BYTES + 2];
  hex(job.uid, mine);
  snprintf(path, sizeof path, "%s/rank%d", dir, job.rank);
  FILE *f = fopen(path, "w");
  if (!f) return 3;
  fprintf(f, "%s\n", mine);
  fclose(f);
  for (int r = 0; r < job.count; r++) {
    snprintf(path, sizeof path, "%s/rank%d", dir, r);
    for (int tries = 0; !(f = fopen(path, "r")); tries++) {
      if (tries > 1000) return 4;                /* 10 s: that rank never joined */
      struct timespec t = { 0, 10000000 };
      nanosleep(&t, NULL);
    }
    bool same = fgets(theirs, sizeof theirs, f) && !strncmp(theirs, mine, 2 * UID_BYTES);
    fclose(f);
    if (!same) return 5;                         /* ranks were given different ids */
  }
  return 0;
}

void nvshmemx_hostlib_finalize(void) {}
void *nvshmem_malloc(size_t n) {
  static int (*alloc)(unsigned long long *, size_t);
  void *cuda = alloc ? NULL : dlopen(getenv("MGPU_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);   /* mgpu's, loaded already */
  if (cuda) *(void **)&alloc = dlsym(cuda, "cuMemAlloc_v2");
  unsigned long long p = 0;
  return alloc && alloc(&p, n ? n : 1) == 0 ? (void *)(size_t)p : NULL;
}
void *nvshmem_ptr(const void *p, int pe) { return pe >= 0 && pe < job.count ? (void *)p : NULL; }
void nvshmem_barrier_all(void) {}
int nvshmem_my_pe(void) { return job.rank; }
int nvshmem_n_pes(void) { return job.count; }
