/*
** util.c -- hashing (xxHash, header-only) and a monotonic clock.
*/
#define XXH_INLINE_ALL
#include <xxhash.h>
#include <time.h>

#include "core.h"

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(p, n, seed); }

double time_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
