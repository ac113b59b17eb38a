/*
** fuzz.h -- what the libFuzzer targets share: a reader that turns the
** input bytes into choices (reading past the end gives zeros), and a
** context in interpret mode whose allocator refuses to grow past a budget,
** so that an input asking for huge arrays gets MGPU_ERR_NOMEM instead of
** exhausting the machine.
**
** The targets define LLVMFuzzerTestOneInput (and LLVMFuzzerInitialize);
** built with -fsanitize=fuzzer they are libFuzzer binaries, linked with
** replay.c they run corpus files once each (the ctest replay).
*/
#ifndef MGPU_FUZZ_H
#define MGPU_FUZZ_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mgpu.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every run of the interpreter stops after this much work (src/interp/interp.h). */
#define FZ_WORK_LIMIT (INT64_C(1) << 22)
/* Bytes one context may hold at once, and the largest single block. */
#define FZ_HEAP_BUDGET ((size_t)256 << 20)
#define FZ_BLOCK_MAX ((size_t)64 << 20)

typedef struct fz_reader {
  const uint8_t *p;
  size_t n;
} fz_reader;

static inline uint8_t fz_byte(fz_reader *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}

static inline uint16_t fz_u16(fz_reader *r) {
  uint16_t lo = fz_byte(r);
  return (uint16_t)(lo | fz_byte(r) << 8);
}

static inline uint32_t fz_u32(fz_reader *r) {
  uint32_t lo = fz_u16(r);
  return lo | (uint32_t)fz_u16(r) << 16;
}

static inline uint64_t fz_u64(fz_reader *r) {
  uint64_t lo = fz_u32(r);
  return lo | (uint64_t)fz_u32(r) << 32;
}

/* One entry of a table, chosen by the next byte. */
#define FZ_PICK(r, table) ((table)[fz_byte(r) % (sizeof(table) / sizeof((table)[0]))])

/* The budgeted allocator (mgpu_alloc_fn).  ud points at the live byte count. */
static inline void *fz_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  size_t *live = ud;
  size_t old = p ? osize : 0;
  if (nsize == 0) {
    free(p);
    *live -= old;
    return NULL;
  }
  if (nsize > old && (nsize > FZ_BLOCK_MAX || *live - old + nsize > FZ_HEAP_BUDGET)) return NULL;
  void *q = realloc(p, nsize);
  if (q) *live = *live - old + nsize;
  return q;
}

/* An interpret-mode context on the budgeted allocator (NULL on failure). */
static inline mgpu_ctx *fz_ctx(size_t *live) {
  mgpu_ctx_options o = { MGPU_MODE_INTERPRET, 0, fz_alloc, live };
  mgpu_ctx *ctx = NULL;
  *live = 0;
  if (mgpu_ctx_create(&o, &ctx) != MGPU_OK) return NULL;
  return ctx;
}

/* A failed call must leave a message (shown when MGPU_FUZZ_VERBOSE is set,
** to see how far a seed gets). */
static inline void fz_check_status(mgpu_ctx *ctx, mgpu_status s) {
  if (s == MGPU_OK) return;
  const char *m = mgpu_errmsg(ctx);
  if (s > 0 || s < MGPU_ERR_THREAD || !m || !*m) abort();
  if (getenv("MGPU_FUZZ_VERBOSE")) fprintf(stderr, "status %d: %s\n", (int)s, m);
}

#endif
