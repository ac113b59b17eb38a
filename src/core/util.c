/*
** util.c -- hashing (xxHash, header-only), a monotonic clock and sleeps, and
** whole reads and writes of file descriptors.
*/
#define XXH_INLINE_ALL
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "core.h"

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(p, n, seed); }

double time_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void sleep_ms(long ms) {
  struct timespec t = { ms / 1000, ms % 1000 * 1000000L };
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
}

bool fd_read_all(int fd, void *p, size_t n) {
  unsigned char *b = p;
  while (n) {
    ssize_t r = read(fd, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    b += r;
    n -= (size_t)r;
  }
  return true;
}

bool fd_write_all(int fd, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n) {
    ssize_t r = write(fd, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return false;
    }
    b += r;
    n -= (size_t)r;
  }
  return true;
}
