/*
** test_cache.c -- the on-disk kernel cache (src/runtime/cache.c) on its own:
** round trip, key sensitivity, corruption and truncation, LRU eviction by
** size, MGPU_CACHE=off and the directory choice, an unwritable directory,
** entries that are not files (a FIFO, a directory), settings that do not
** parse and a directory path too long for the system.
*/
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../src/runtime/cache.h"
#include "test.h"

static void rm_rf(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[4200];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) rm_rf(p);
    else unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static bool file_exists(const char *p) { return access(p, F_OK) == 0; }

static cache_key key_of(const char *a, const char *b) {
  cache_part parts[2] = { { a, strlen(a) }, { b, strlen(b) } };
  return cache_key_make(parts, 2);
}

static bool key_eq(cache_key x, cache_key y) { return x.lo == y.lo && x.hi == y.hi; }

static void open_quiet(cache *c, const char *dir, uint64_t max) {
  c->log = NULL;
  c->debug = false;
  cache_open(c, dir, max);
}

static void set_mtime(const char *path, time_t t) {
  struct timespec ts[2] = { { t, 0 }, { t, 0 } };
  utimensat(AT_FDCWD, path, ts, 0);
}

static char *mkdir_tmp(char *buf, size_t n) {
  snprintf(buf, n, "%s/mgpu-cache-test-XXXXXX", getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  return mkdtemp(buf);
}

static void test_round_trip_and_keys(const char *root) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/a/b", root);   /* created on the first store */
  cache c;
  open_quiet(&c, dir, 1 << 20);
  CHECK(c.enabled);
  cache_key k = key_of("ptx text", "sm_90a");
  void *data = (void *)1;
  size_t len = 1;
  CHECK(cache_load(&c, k, &data, &len) == CACHE_MISS && !data && !len);
  const char payload[] = "\x7f" "ELF cubin bytes \0 with a NUL";
  CHECK(cache_store(&c, k, payload, sizeof payload));
  char path[4200];
  CHECK(cache_entry_path(&c, k, path, sizeof path));
  CHECK(file_exists(path));
  struct stat st;
  CHECK(stat(path, &st) == 0 && (size_t)st.st_size == CACHE_HEADER_BYTES + sizeof payload);
  CHECK(count_entries(dir) == 1);   /* no temp file left behind */
  CHECK(cache_load(&c, k, &data, &len) == CACHE_HIT);
  CHECK(len == sizeof payload && data && !memcmp(data, payload, len));
  free(data);
  CHECK(c.hits == 1 && c.misses == 1 && c.stores == 1);
  /* an empty payload round-trips too */
  cache_key k0 = key_of("", "");
  CHECK(cache_store(&c, k0, "", 0));
  CHECK(cache_load(&c, k0, &data, &len) == CACHE_HIT && len == 0);
  free(data);

  /* every piece and its boundaries are in the key */
  CHECK(key_eq(key_of("ptx text", "sm_90a"), k));
  CHECK(!key_eq(key_of("ptx text", "sm_90"), k));
  CHECK(!key_eq(key_of("ptx texT", "sm_90a"), k));
  CHECK(!key_eq(key_of("ab", "c"), key_of("a", "bc")));
  cache_part one[1] = { { "ptx textsm_90a", 14 } };
  CHECK(!key_eq(cache_key_make(one, 1), k));
  int v1 = 12040, v2 = 12050;
  cache_part pa[2] = { { "x", 1 }, { &v1, sizeof v1 } }, pb[2] = { { "x", 1 }, { &v2, sizeof v2 } };
  CHECK(!key_eq(cache_key_make(pa, 2), cache_key_make(pb, 2)));
  char hex[33];
  cache_key_hex(k, hex);
  CHECK(strlen(hex) == 32 && strspn(hex, "0123456789abcdef") == 32);
  CHECK_CONTAINS(path, hex);
  CHECK(cache_load(&c, key_of("ptx text", "sm_90"), &data, &len) == CACHE_MISS);
}

static void corrupt_case(const char *dir, int how) {
  cache c;
  open_quiet(&c, dir, 1 << 20);
  cache_key k = key_of("corrupt", how == 0 ? "flip payload" : how == 1 ? "flip header" : how == 2 ? "truncate" : "short");
  char payload[300];
  for (int i = 0; i < (int)sizeof payload; i++) payload[i] = (char)(i * 7);
  CHECK(cache_store(&c, k, payload, sizeof payload));
  char path[4200];
  cache_entry_path(&c, k, path, sizeof path);
  if (how <= 1) {   /* flip one byte of the payload or of the header's key */
    int fd = open(path, O_RDWR);
    off_t at = how == 0 ? (off_t)CACHE_HEADER_BYTES + 100 : 20;
    unsigned char b = 0;
    CHECK(pread(fd, &b, 1, at) == 1);
    b ^= 0x10;
    CHECK(pwrite(fd, &b, 1, at) == 1);
    close(fd);
  } else {
    CHECK(truncate(path, how == 2 ? (off_t)(CACHE_HEADER_BYTES + sizeof payload - 1) : 10) == 0);
  }
  void *data = (void *)1;
  size_t len = 1;
  CHECK(cache_load(&c, k, &data, &len) == CACHE_CORRUPT);
  CHECK(!data && !len);
  CHECK(!file_exists(path));        /* removed, never loaded */
  CHECK(c.corrupt_count == 1);
  CHECK(c.last_msg[0] == 0);        /* said once, when the entry is rebuilt */
  CHECK(cache_store(&c, k, payload, sizeof payload));
  CHECK_CONTAINS(c.last_msg, "was corrupt; rebuilt");
  CHECK_CONTAINS(c.last_msg, path);
  c.last_msg[0] = 0;
  CHECK(cache_load(&c, k, &data, &len) == CACHE_HIT && len == sizeof payload && !memcmp(data, payload, len));
  free(data);
  CHECK(cache_store(&c, k, payload, sizeof payload));
  CHECK(c.last_msg[0] == 0);
}

static void test_eviction(const char *root) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/lru", root);
  cache c;
  const size_t entry = CACHE_HEADER_BYTES + 1000;
  open_quiet(&c, dir, 3 * entry + 100);   /* three entries fit, four do not */
  char payload[1000];
  memset(payload, 'x', sizeof payload);
  cache_key k[4] = { key_of("lru", "A"), key_of("lru", "B"), key_of("lru", "C"), key_of("lru", "D") };
  char path[4][4200];
  time_t now = time(NULL);
  for (int i = 0; i < 3; i++) {
    CHECK(cache_store(&c, k[i], payload, sizeof payload));
    cache_entry_path(&c, k[i], path[i], sizeof path[i]);
    set_mtime(path[i], now - 300 + 100 * i);   /* A oldest, then B, then C */
  }
  CHECK(c.evictions == 0 && count_entries(dir) == 3);
  void *data;
  size_t len;
  CHECK(cache_load(&c, k[0], &data, &len) == CACHE_HIT);   /* A becomes the newest */
  free(data);
  CHECK(cache_store(&c, k[3], payload, sizeof payload));
  cache_entry_path(&c, k[3], path[3], sizeof path[3]);
  CHECK(c.evictions == 1);
  CHECK(file_exists(path[0]) && !file_exists(path[1]) && file_exists(path[2]) && file_exists(path[3]));
  /* a tighter bound evicts in LRU order: C, then A (D was just written) */
  set_mtime(path[2], now - 50);
  set_mtime(path[0], now - 40);
  c.max_bytes = entry;
  CHECK(cache_evict(&c) == 2);
  CHECK(!file_exists(path[0]) && !file_exists(path[2]) && file_exists(path[3]));
  /* stale temp files of a crashed writer go; fresh ones (a writer at work) stay */
  char stale[4300], fresh[4300];
  snprintf(stale, sizeof stale, "%s/.tmp-dead", dir);
  snprintf(fresh, sizeof fresh, "%s/.tmp-live", dir);
  close(open(stale, O_WRONLY | O_CREAT, 0644));
  close(open(fresh, O_WRONLY | O_CREAT, 0644));
  set_mtime(stale, now - 3600);
  cache_evict(&c);
  CHECK(!file_exists(stale) && file_exists(fresh));
}

static void save_env(const char *name, char **slot) {
  const char *v = getenv(name);
  *slot = v ? strdup(v) : NULL;
}
static void restore_env(const char *name, char *v) {
  if (v) setenv(name, v, 1);
  else unsetenv(name);
  free(v);
}

static void test_env(const char *root) {
  static const char *const names[] = { "MGPU_CACHE", "MGPU_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "MGPU_CACHE_MAX_MB",
                                       "MGPU_DEBUG" };
  char *saved[6];
  for (int i = 0; i < 6; i++) save_env(names[i], &saved[i]);
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/env", root);
  cache c;
  setenv("MGPU_CACHE_DIR", dir, 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/someone", 1);
  unsetenv("MGPU_CACHE_MAX_MB");
  unsetenv("MGPU_DEBUG");
  setenv("MGPU_CACHE", "off", 1);
  cache_open_env(&c, NULL);
  CHECK(!c.enabled);
  CHECK(!cache_store(&c, key_of("env", "off"), "x", 1));
  CHECK(count_entries(dir) == -1);   /* nothing created */
  void *data;
  size_t len;
  CHECK(cache_load(&c, key_of("env", "off"), &data, &len) == CACHE_MISS);
  unsetenv("MGPU_CACHE");
  setenv("MGPU_DEBUG", "ir,cache", 1);
  cache_open_env(&c, NULL);
  CHECK(c.enabled && c.debug);
  CHECK_STR(c.dir, dir);
  CHECK(c.max_bytes == (uint64_t)512 << 20);
  setenv("MGPU_CACHE_MAX_MB", "3", 1);
  setenv("MGPU_DEBUG", "ir", 1);
  unsetenv("MGPU_CACHE_DIR");
  cache_open_env(&c, NULL);
  CHECK(c.enabled && !c.debug && c.max_bytes == (uint64_t)3 << 20);
  CHECK_STR(c.dir, "/xdg/mgpu");
  unsetenv("XDG_CACHE_HOME");
  cache_open_env(&c, NULL);
  CHECK_STR(c.dir, "/home/someone/.cache/mgpu");
  CHECK(c.last_msg[0] == 0);
  /* a size that does not parse: one warning naming it, and the default */
  static const char *const bad_mb[] = { "-1", "abc", "1e3", "5MB", " 5", "99999999999999" };
  for (int i = 0; i < 6; i++) {
    setenv("MGPU_CACHE_MAX_MB", bad_mb[i], 1);
    cache_open_env(&c, NULL);
    CHECK(c.enabled && c.max_bytes == (uint64_t)512 << 20);
    CHECK_CONTAINS(c.last_msg, "MGPU_CACHE_MAX_MB must be a whole number of megabytes");
    CHECK_CONTAINS(c.last_msg, bad_mb[i]);
  }
  setenv("MGPU_CACHE_MAX_MB", "00", 1);   /* zero in any spelling turns the cache off, quietly */
  cache_open_env(&c, NULL);
  CHECK(!c.enabled && c.last_msg[0] == 0);
  unsetenv("MGPU_CACHE_MAX_MB");
  setenv("MGPU_CACHE", "of", 1);          /* neither on nor off: said, and the cache stays on */
  cache_open_env(&c, NULL);
  CHECK(c.enabled);
  CHECK_CONTAINS(c.last_msg, "MGPU_CACHE must be on or off (or 1/0, yes/no, true/false), got 'of'");
  unsetenv("MGPU_CACHE");
  /* a directory path too long for the system: off, with a warning (it was silent) */
  char *longdir = malloc(5001);
  memset(longdir, 'd', 5000);
  longdir[0] = '/';
  longdir[5000] = 0;
  setenv("MGPU_CACHE_DIR", longdir, 1);
  cache_open_env(&c, NULL);
  CHECK(!c.enabled);
  CHECK_CONTAINS(c.last_msg, "kernel cache disabled: the directory path is 5000 bytes long");
  unsetenv("MGPU_CACHE_DIR");
  longdir[4090] = 0;                       /* too long once "/.cache/mgpu" is added */
  setenv("HOME", longdir, 1);
  cache_open_env(&c, NULL);
  CHECK(!c.enabled);
  CHECK_CONTAINS(c.last_msg, "kernel cache disabled: the directory path is 4102 bytes long");
  free(longdir);
  for (int i = 0; i < 6; i++) restore_env(names[i], saved[i]);
}

static void test_unwritable(const char *root) {
  char file[4200], dir[4300];
  snprintf(file, sizeof file, "%s/not-a-dir", root);
  close(open(file, O_WRONLY | O_CREAT, 0644));
  snprintf(dir, sizeof dir, "%s/sub", file);   /* a directory under a regular file: even root cannot */
  cache c;
  open_quiet(&c, dir, 1 << 20);
  CHECK(c.enabled);
  void *data;
  size_t len;
  CHECK(cache_load(&c, key_of("u", "1"), &data, &len) == CACHE_MISS);
  CHECK(!cache_store(&c, key_of("u", "1"), "abc", 3));
  CHECK(!c.enabled && c.warned);
  CHECK_CONTAINS(c.last_msg, "kernel cache disabled");
  c.last_msg[0] = 0;
  CHECK(!cache_store(&c, key_of("u", "2"), "abc", 3));   /* no second warning */
  CHECK(cache_load(&c, key_of("u", "1"), &data, &len) == CACHE_MISS);
  CHECK(c.last_msg[0] == 0);
}

/* An entry that is a FIFO or a directory: one warning naming it, a miss,
** no hang (a FIFO was opened for reading and blocked forever), no "corrupt;
** rebuilt" and no "cache disabled"; it is left alone and the cache goes on. */
static void odd_entry_case(const char *dir, bool fifo) {
  cache c;
  open_quiet(&c, dir, 1 << 20);
  cache_key k = key_of("odd entry", fifo ? "fifo" : "directory");
  char path[4200];
  cache_entry_path(&c, k, path, sizeof path);
  mkdir(dir, 0755);
  CHECK(fifo ? mkfifo(path, 0644) == 0 : mkdir(path, 0755) == 0);
  void *data = (void *)1;
  size_t len = 1;
  alarm(20);   /* a hang ends the test run instead of blocking it */
  CHECK(cache_load(&c, k, &data, &len) == CACHE_MISS && !data && !len);
  alarm(0);
  CHECK(c.enabled);
  CHECK_CONTAINS(c.last_msg, path);
  CHECK_CONTAINS(c.last_msg, fifo ? "is a FIFO, not a cache entry" : "is a directory, not a cache entry");
  c.last_msg[0] = 0;
  CHECK(!cache_store(&c, k, "abc", 3));           /* left alone, quietly */
  CHECK(c.enabled && c.last_msg[0] == 0);
  struct stat st;
  CHECK(lstat(path, &st) == 0 && (fifo ? S_ISFIFO(st.st_mode) : S_ISDIR(st.st_mode)));
  CHECK(cache_load(&c, k, &data, &len) == CACHE_MISS && c.last_msg[0] == 0);   /* said once */
  CHECK(cache_store(&c, key_of("odd entry", "another"), "abc", 3));            /* the rest of the cache works */
  CHECK(cache_evict(&c) == 0 && c.enabled);
  if (fifo) unlink(path);
  else rmdir(path);
}

void test_cache(void) {
  char root[4096];
  if (!mkdir_tmp(root, sizeof root)) {
    CHECK(!"mkdtemp failed");
    return;
  }
  test_round_trip_and_keys(root);
  char cdir[4200];
  snprintf(cdir, sizeof cdir, "%s/corrupt", root);
  for (int how = 0; how < 4; how++) corrupt_case(cdir, how);
  test_eviction(root);
  test_env(root);
  test_unwritable(root);
  char odir[4200];
  snprintf(odir, sizeof odir, "%s/odd", root);
  odd_entry_case(odir, true);
  odd_entry_case(odir, false);
  rm_rf(root);
}
