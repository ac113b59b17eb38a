/*
** fuzz_cache.c -- the on-disk kernel cache (src/runtime/cache.c) over a
** directory whose entries the input makes: entries stored and then cut or
** with a byte flipped, files of arbitrary bytes, FIFOs, directories,
** symbolic links (dangling, to a directory, to themselves), temp files;
** then loads, stores, evictions and new odd entries in any order.  No step
** may hang (a FIFO entry must never be opened), crash, or load anything but
** the payload last stored under its key; an entry that is not a regular file
** stays where it is, and the cache stays on (only I/O failures turn it off).
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../src/runtime/cache.h"
#include "fuzz.h"

enum { KEYS = 6, MAX_PAYLOAD = 600 };

typedef struct model {
  unsigned char payload[KEYS][MAX_PAYLOAD];
  size_t len[KEYS];
  bool stored[KEYS];   /* payload[k] is what a hit of key k must give */
  bool odd[KEYS];      /* the entry is a FIFO, a directory or a link that is not a file */
} model;

static cache_key key_of(int i) {
  cache_part p = { &i, sizeof i };
  return cache_key_make(&p, 1);
}

static void rm_rf(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char p[4300];
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      struct stat st;
      if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) rm_rf(p);
      else unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

static void store(fz_reader *r, cache *c, model *m, int k) {
  size_t len = fz_u16(r) % MAX_PAYLOAD;
  unsigned char p[MAX_PAYLOAD];
  uint8_t seed = fz_byte(r);
  for (size_t i = 0; i < len; i++) p[i] = (unsigned char)(seed + i * 31);
  bool ok = cache_store(c, key_of(k), p, len);
  if (ok && m->odd[k]) abort();   /* an odd entry is never replaced */
  if (ok) {
    memcpy(m->payload[k], p, len);
    m->len[k] = len;
    m->stored[k] = true;
  }
}

static void load(cache *c, model *m, int k) {
  void *data = NULL;
  size_t len = 0;
  cache_result res = cache_load(c, key_of(k), &data, &len);
  if (res == CACHE_HIT && (!m->stored[k] || len != m->len[k] || memcmp(data, m->payload[k], len))) abort();
  if (res != CACHE_HIT && data) abort();
  if (res == CACHE_CORRUPT) m->stored[k] = false;   /* deleted */
  free(data);
}

/* Spoil key k's entry: cut it, flip a byte, or replace it with bytes. */
static void spoil(fz_reader *r, const char *path, model *m, int k) {
  if (m->odd[k]) return;
  uint8_t how = fz_byte(r);
  uint16_t at = fz_u16(r);
  int fd = open(path, O_RDWR | O_CREAT | O_NONBLOCK, 0644);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    unsigned char b = (unsigned char)fz_byte(r);
    if (how % 3 == 0) (void)!ftruncate(fd, st.st_size ? at % st.st_size : 0);
    else if (how % 3 == 1 && st.st_size) {
      unsigned char old = 0;
      (void)!pread(fd, &old, 1, at % st.st_size);
      b = (unsigned char)(old ^ (b | 1));
      (void)!pwrite(fd, &b, 1, at % st.st_size);
    } else {
      (void)!ftruncate(fd, 0);
      for (int i = at % 200; i > 0; i--) (void)!write(fd, &b, 1), b = (unsigned char)(b * 13 + 7);
    }
    /* a flip in the header's unused tail still loads the right payload: after a flip the model stays */
    if (how % 3 != 1) m->stored[k] = false;
  }
  close(fd);
}

/* Make key k's entry an odd one: a FIFO, a directory or a symbolic link. */
static void make_odd(fz_reader *r, const char *dir, const char *path, model *m, int k) {
  char target[4300];
  unlink(path);
  rmdir(path);
  m->stored[k] = false;
  m->odd[k] = true;
  switch (fz_byte(r) % 5) {
  case 0: if (mkfifo(path, 0644) != 0) m->odd[k] = false; break;
  case 1: if (mkdir(path, 0755) != 0) m->odd[k] = false; break;
  case 2: if (symlink(path, path) != 0) m->odd[k] = false; break;                   /* a loop */
  case 3: if (symlink(dir, path) != 0) m->odd[k] = false; break;                    /* to a directory */
  default:                                                                          /* dangling: a miss */
    snprintf(target, sizeof target, "%s/nowhere", dir);
    if (symlink(target, path) != 0) {}
    m->odd[k] = false;
  }
}

/* After each step: odd entries are where they were; a stored entry that is
** gone (evicted, deleted as corrupt) is a miss from now on. */
static void check_entries(cache *c, model *m) {
  for (int k = 0; k < KEYS; k++) {
    char path[4300];
    struct stat st;
    cache_entry_path(c, key_of(k), path, sizeof path);
    bool there = lstat(path, &st) == 0;
    if (m->odd[k] && !there) abort();
    if (!there) m->stored[k] = false;
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size) {
  fz_reader r = { in, size };
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/mgpu-fuzz-cache-XXXXXX", getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) abort();
  cache c;
  c.log = NULL;
  c.debug = false;
  cache_open(&c, dir, (uint64_t)(fz_u16(&r) % 4096) + 64);
  static model m;
  memset(&m, 0, sizeof m);
  for (int step = 0; step < 24 && r.n; step++) {
    uint8_t op = fz_byte(&r);
    int k = (op >> 3) % KEYS;
    char path[4300];
    cache_entry_path(&c, key_of(k), path, sizeof path);
    switch (op & 7) {
    case 0: case 1: store(&r, &c, &m, k); break;
    case 2: case 3: load(&c, &m, k); break;
    case 4: spoil(&r, path, &m, k); break;
    case 5: make_odd(&r, dir, path, &m, k); break;
    case 6: {
      char tmp[4400];   /* a temp file, or any other name */
      snprintf(tmp, sizeof tmp, "%s/.tmp-%u", dir, fz_byte(&r));
      close(open(tmp, O_WRONLY | O_CREAT, 0644));
      break;
    }
    default:
      c.max_bytes = fz_u16(&r);
      cache_evict(&c);
    }
    check_entries(&c, &m);
    if (!c.enabled) abort();   /* only I/O failures turn the cache off, and there are none here */
  }
  rm_rf(dir);
  return 0;
}
