/*
** cache.h -- the on-disk kernel cache: byte payloads (for kernels, the PTX
** and tensor maps their IR lowers to) keyed by an XXH3-128 hash of
** everything the payload depends on (for kernels, the canonical IR text,
** target, JIT options, engine and driver versions).
**
** One file per entry, <dir>/<32 hex digits of the key>.mgc: a 64-byte header
** (magic, format version, key, payload length, payload hash, header hash)
** and the payload.  Writes are atomic (temp file in the same directory,
** fsync, rename); an entry that fails any check is deleted, never returned;
** one that is not a regular file (a directory, a FIFO) is never opened: it
** is said once and left alone.
** Hits touch the entry's mtime; after a write the oldest entries go until
** the directory fits the size bound.  Every I/O failure turns the cache off
** with at most one warning: the cache never makes a kernel fail.
*/
#ifndef MGPU_CACHE_H
#define MGPU_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CACHE_MAGIC "MGPUKC\r\n"
#define CACHE_FORMAT 1u
#define CACHE_HEADER_BYTES 64u
#define CACHE_EXT ".mgc"

typedef struct cache_key { uint64_t lo, hi; } cache_key;

/* One piece of the key; every piece is hashed with its length, so
** ("ab","c") and ("a","bc") give different keys. */
typedef struct cache_part { const void *p; size_t n; } cache_part;

typedef struct cache {
  bool enabled;
  bool warned;               /* the one I/O warning has been printed */
  bool debug;                /* print "cache hit/miss" lines (MGPU_DEBUG=cache) */
  char dir[4096];
  uint64_t max_bytes;
  FILE *log;                 /* stderr; NULL keeps quiet (tests) */
  char last_msg[4352];       /* the last line reported (tests read it) */
  bool have_corrupt;         /* the last miss was a corrupt entry, reported at its rebuild */
  cache_key corrupt;
  bool have_odd;             /* an entry that is not a file was said (the last one) */
  cache_key odd;
  int hits, misses, stores, corrupt_count, evictions;
} cache;

typedef enum cache_result { CACHE_MISS = 0, CACHE_HIT = 1, CACHE_CORRUPT = 2 } cache_result;

/* From the environment: MGPU_CACHE=off, MGPU_CACHE_DIR, XDG_CACHE_HOME,
** HOME, MGPU_CACHE_MAX_MB (default 512; 0 disables), MGPU_DEBUG (a "cache"
** item).  A setting that does not parse and a directory path too long for
** the system are said on log (NULL: only in last_msg). */
void cache_open_env(cache *c, FILE *log);
/* An explicit directory and bound (tests); dir NULL or "" disables, a path
** too long for the entries' names disables with a warning. */
void cache_open(cache *c, const char *dir, uint64_t max_bytes);

cache_key cache_key_make(const cache_part *parts, size_t nparts);
/* 32 lowercase hex digits and a NUL. */
void cache_key_hex(cache_key k, char out[33]);
/* The entry's file name, or false when it does not fit. */
bool cache_entry_path(const cache *c, cache_key k, char *out, size_t n);

/* On CACHE_HIT *data (malloc'd, caller frees) holds *len bytes.  A corrupt
** or truncated entry is deleted and gives CACHE_CORRUPT; the message naming
** it is printed when the rebuilt value is stored. */
cache_result cache_load(cache *c, cache_key k, void **data, size_t *len);
/* Store (atomically) and evict to the bound; false when nothing was written. */
bool cache_store(cache *c, cache_key k, const void *data, size_t len);
/* Evict least-recently-used entries until the directory holds at most
** max_bytes of entries; returns how many were removed. */
int cache_evict(cache *c);

#endif
