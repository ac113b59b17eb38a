/*
** alloc.c -- the context allocator, arenas and growable arrays.
*/
#include <stdlib.h>
#include <string.h>

#include "core.h"

static void *default_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  (void)ud; (void)osize;
  if (nsize == 0) { free(p); return NULL; }
  return realloc(p, nsize);
}

void mem_alloc_default(mem_alloc *a) { a->fn = default_alloc; a->ud = NULL; }

void *mem_realloc(const mem_alloc *a, void *p, size_t osize, size_t nsize) {
  if (nsize == 0) { if (p) a->fn(a->ud, p, osize, 0); return NULL; }
  return a->fn(a->ud, p, p ? osize : 0, nsize);
}

void mem_free(const mem_alloc *a, void *p, size_t size) {
  if (p) a->fn(a->ud, p, size, 0);
}

void *mem_calloc(const mem_alloc *a, size_t size) {
  void *p = mem_realloc(a, NULL, 0, size);
  if (p) memset(p, 0, size);
  return p;
}

/* -- Arenas ------------------------------------------------------------- */

struct mem_chunk {
  mem_chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
};

#define ARENA_CHUNK 65536

void mem_arena_init(mem_arena *ar, const mem_alloc *a) { ar->alloc = a; ar->head = NULL; }

void *mem_arena_alloc(mem_arena *ar, size_t size) {
  size = (size + 15) & ~(size_t)15;
  mem_chunk *c = ar->head;
  if (!c || c->size - c->used < size) {
    size_t cs = size > ARENA_CHUNK ? size : ARENA_CHUNK;
    c = mem_realloc(ar->alloc, NULL, 0, sizeof(mem_chunk) + cs);
    if (!c) return NULL;
    c->size = cs; c->used = 0;
    c->next = ar->head; ar->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

char *mem_arena_strdup(mem_arena *ar, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = mem_arena_alloc(ar, n);
  if (p) memcpy(p, s, n);
  return p;
}

void mem_arena_free(mem_arena *ar) {
  mem_chunk *c = ar->head;
  while (c) {
    mem_chunk *n = c->next;
    mem_free(ar->alloc, c, sizeof(mem_chunk) + c->size);
    c = n;
  }
  ar->head = NULL;
}

/* -- Growable arrays ------------------------------------------------------ */

bool vec_grow_(const mem_alloc *a, void **v, uint32_t *cap, uint32_t need, size_t esz) {
  if (need <= *cap) return true;
  uint64_t ncap = *cap ? (uint64_t)*cap * 2 : 8;
  while (ncap < need) ncap *= 2;
  if (ncap > UINT32_MAX) return false;
  void *p = mem_realloc(a, *v, (size_t)*cap * esz, (size_t)ncap * esz);
  if (!p) return false;
  *v = p;
  *cap = (uint32_t)ncap;
  return true;
}
