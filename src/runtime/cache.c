/*
** cache.c -- the on-disk kernel cache (see cache.h).
*/
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/core.h"
#include "cache.h"

#define CACHE_DEFAULT_MB 512u
#define CACHE_MAX_PAYLOAD ((uint64_t)1 << 30)
#define CACHE_TMP_PREFIX ".tmp-"
#define CACHE_STALE_TMP_S 600   /* temp files older than this are a crashed writer's */
#define CACHE_NAME_ROOM 64      /* bytes after the directory for "/<entry or temp name>" */

static void cache_say(cache *c, const char *fmt, ...) MGPU_PRINTF(2, 3);
static void cache_say(cache *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->last_msg, sizeof c->last_msg, fmt, ap);
  va_end(ap);
  if (c->log) {
    fprintf(c->log, "%s\n", c->last_msg);
    fflush(c->log);
  }
}

/* Any I/O failure: one warning, then no cache for the rest of the process. */
static void cache_degrade(cache *c, const char *what, const char *path, int err) {
  if (!c->warned) {
    c->warned = true;
    cache_say(c, "mgpu: kernel cache disabled: cannot %s %s (%s)", what, path, strerror(err));
  }
  c->enabled = false;
}

static void say_too_long(cache *c, size_t n) {
  cache_say(c, "mgpu: kernel cache disabled: the directory path is %zu bytes long; with its entries' names it must "
            "stay under %zu (set MGPU_CACHE_DIR to a shorter one)", n, sizeof c->dir - CACHE_NAME_ROOM);
}

void cache_open(cache *c, const char *dir, uint64_t max_bytes) {
  FILE *log = c->log;
  bool debug = c->debug;
  memset(c, 0, sizeof *c);
  c->log = log;
  c->debug = debug;
  c->max_bytes = max_bytes;
  if (!dir || !*dir) return;
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  if (n + CACHE_NAME_ROOM >= sizeof c->dir) {   /* room for the entry and temp names */
    say_too_long(c, n);
    return;
  }
  memcpy(c->dir, dir, n);
  c->dir[n] = 0;
  c->enabled = true;
}

static bool env_has_item(const char *list, const char *item) {
  size_t n = strlen(item);
  for (const char *p = list; p && *p;) {
    size_t len = strcspn(p, ", ");
    if (len == n && !strncmp(p, item, n)) return true;
    p += len;
    p += strspn(p, ", ");
  }
  return false;
}

static bool is_one_of(const char *s, const char *const *words) {
  for (; *words; words++)
    if (!strcmp(s, *words)) return true;
  return false;
}

/* MGPU_CACHE value v turns the cache off; *ok: v is empty, on or off. */
static bool env_off(const char *v, bool *ok) {
  static const char *const off[] = { "off", "0", "no", "false", NULL }, *const on[] = { "on", "1", "yes", "true", NULL };
  *ok = !v || !*v || is_one_of(v, on) || is_one_of(v, off);
  return v && is_one_of(v, off);
}

/* MGPU_CACHE_MAX_MB value v in megabytes: decimal digits only, below 2^40
** (0 in any spelling turns the cache off); else *ok is false and the
** default is used. */
static uint64_t env_max_mb(const char *v, bool *ok) {
  *ok = true;
  if (!v || !*v) return CACHE_DEFAULT_MB;
  uint64_t mb = 0;
  for (const char *p = v; *p && *ok; p++) {
    *ok = *p >= '0' && *p <= '9' && mb < ((uint64_t)1 << 40) / 10;
    mb = mb * 10 + (uint64_t)(*p - '0');
  }
  *ok = *ok && mb < ((uint64_t)1 << 40);
  return *ok ? mb : CACHE_DEFAULT_MB;
}

void cache_open_env(cache *c, FILE *log) {
  c->log = log;
  const char *dbg = getenv("MGPU_DEBUG");
  c->debug = dbg && (env_has_item(dbg, "cache") || env_has_item(dbg, "all"));
  const char *onoff = getenv("MGPU_CACHE"), *lim = getenv("MGPU_CACHE_MAX_MB");
  bool off_ok, mb_ok;
  bool off = env_off(onoff, &off_ok);
  uint64_t mb = env_max_mb(lim, &mb_ok);
  char dir[sizeof c->dir + 16] = "";   /* longer than any usable directory: a longer one is said, not cut */
  const char *d = getenv("MGPU_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  int w = 0;
  if (d && *d) w = snprintf(dir, sizeof dir, "%s", d);
  else if (x && *x == '/') w = snprintf(dir, sizeof dir, "%s/mgpu", x);
  else if (h && *h) w = snprintf(dir, sizeof dir, "%s/.cache/mgpu", h);
  bool cut = w < 0 || (size_t)w >= sizeof dir;
  cache_open(c, off || mb == 0 || cut ? NULL : dir, mb << 20);
  if (cut) say_too_long(c, w < 0 ? 0 : (size_t)w);
  if (!off_ok)
    cache_say(c, "mgpu: MGPU_CACHE must be on or off (or 1/0, yes/no, true/false), got '%s'; the kernel cache stays "
              "on", onoff);
  if (!mb_ok)
    cache_say(c, "mgpu: MGPU_CACHE_MAX_MB must be a whole number of megabytes (0 turns the kernel cache off), got "
              "'%s'; using %u", lim, CACHE_DEFAULT_MB);
}

/* -- Keys --------------------------------------------------------------------------------- */

cache_key cache_key_make(const cache_part *parts, size_t nparts) {
  XXH3_state_t st;
  XXH3_INITSTATE(&st);
  XXH3_128bits_reset(&st);
  uint64_t np = nparts;
  XXH3_128bits_update(&st, &np, sizeof np);
  for (size_t i = 0; i < nparts; i++) {
    uint64_t n = parts[i].n;
    XXH3_128bits_update(&st, &n, sizeof n);
    if (n) XXH3_128bits_update(&st, parts[i].p, parts[i].n);
  }
  XXH128_hash_t h = XXH3_128bits_digest(&st);
  return (cache_key){ h.low64, h.high64 };
}

void cache_key_hex(cache_key k, char out[33]) {
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)k.hi, (unsigned long long)k.lo);
}

bool cache_entry_path(const cache *c, cache_key k, char *out, size_t n) {
  char hex[33];
  cache_key_hex(k, hex);
  int w = snprintf(out, n, "%s/%s%s", c->dir, hex, CACHE_EXT);
  return w > 0 && (size_t)w < n;
}

/* -- Entries ------------------------------------------------------------------------------ */

static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* magic[8] format:u32 header_bytes:u32 key.lo key.hi payload_len payload_hash header_hash 0[8] */
static void header_make(unsigned char h[CACHE_HEADER_BYTES], cache_key k, const void *data, size_t len) {
  memset(h, 0, CACHE_HEADER_BYTES);
  memcpy(h, CACHE_MAGIC, 8);
  put64(h + 8, (uint64_t)CACHE_FORMAT | (uint64_t)CACHE_HEADER_BYTES << 32);
  put64(h + 16, k.lo);
  put64(h + 24, k.hi);
  put64(h + 32, len);
  put64(h + 40, XXH3_64bits(data, len));
  put64(h + 48, XXH3_64bits(h, 48));
}

/* The entry at path exists and is not a regular file (following symbolic
** links; a loop of them counts): *mode says what it is. */
static bool entry_odd(const char *path, mode_t *mode) {
  struct stat st;
  if (stat(path, &st) == 0) {
    *mode = st.st_mode;
    return !S_ISREG(st.st_mode);
  }
  *mode = S_IFLNK;
  return errno == ELOOP;
}

static const char *file_kind(mode_t m) {
  return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
       : S_ISLNK(m) ? "a loop of symbolic links" : S_ISCHR(m) || S_ISBLK(m) ? "a device" : "not a regular file";
}

/* An entry that is not a regular file: said once (the last one said is
** remembered), left alone, and its kernel is not cached. */
static void cache_odd(cache *c, cache_key k, const char *path, mode_t mode) {
  if (c->have_odd && c->odd.lo == k.lo && c->odd.hi == k.hi) return;
  c->have_odd = true;
  c->odd = k;
  cache_say(c, "mgpu: cache entry %s is %s, not a cache entry; left alone, its kernel is not cached (remove it)", path,
            file_kind(mode));
}

cache_result cache_load(cache *c, cache_key k, void **data, size_t *len) {
  *data = NULL;
  *len = 0;
  if (!c->enabled) return CACHE_MISS;
  char path[4160];
  if (!cache_entry_path(c, k, path, sizeof path)) return CACHE_MISS;
  mode_t mode;
  if (entry_odd(path, &mode)) {   /* never opened: a FIFO would block */
    cache_odd(c, k, path, mode);
    c->misses++;
    return CACHE_MISS;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);   /* (a FIFO swapped in since does not block) */
  if (fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR) cache_degrade(c, "read", path, errno);
    c->misses++;
    return CACHE_MISS;
  }
  struct stat st;
  unsigned char h[CACHE_HEADER_BYTES];
  void *buf = NULL;
  uint64_t plen = 0;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)CACHE_HEADER_BYTES &&
            fd_read_all(fd, h, sizeof h) && !memcmp(h, CACHE_MAGIC, 8) && get64(h + 48) == XXH3_64bits(h, 48) &&
            get64(h + 8) == ((uint64_t)CACHE_FORMAT | (uint64_t)CACHE_HEADER_BYTES << 32) &&
            get64(h + 16) == k.lo && get64(h + 24) == k.hi;
  if (ok) {
    plen = get64(h + 32);
    ok = plen <= CACHE_MAX_PAYLOAD && (uint64_t)st.st_size == CACHE_HEADER_BYTES + plen;
  }
  if (ok) {
    buf = malloc(plen ? (size_t)plen : 1);
    ok = buf && fd_read_all(fd, buf, (size_t)plen) && XXH3_64bits(buf, (size_t)plen) == get64(h + 40);
    if (!buf) {   /* out of memory is not corruption */
      close(fd);
      c->misses++;
      return CACHE_MISS;
    }
  }
  if (!ok) {
    free(buf);
    close(fd);
    unlink(path);
    c->have_corrupt = true;
    c->corrupt = k;
    c->corrupt_count++;
    c->misses++;
    return CACHE_CORRUPT;
  }
  futimens(fd, NULL);   /* least recently used: a hit makes the entry new */
  close(fd);
  c->hits++;
  *data = buf;
  *len = (size_t)plen;
  return CACHE_HIT;
}

static bool mkdir_p(const char *dir, int *err) {
  char p[4096];
  snprintf(p, sizeof p, "%s", dir);
  for (char *s = p + 1;; s++) {
    if (*s == '/' || !*s) {
      char save = *s;
      *s = 0;
      if (mkdir(p, 0755) != 0 && errno != EEXIST) {
        *err = errno;
        return false;
      }
      *s = save;
      if (!save) break;
    }
  }
  struct stat st;
  if (stat(p, &st) != 0) { *err = errno; return false; }
  if (!S_ISDIR(st.st_mode)) { *err = ENOTDIR; return false; }
  return true;
}

bool cache_store(cache *c, cache_key k, const void *data, size_t len) {
  char path[4160], tmp[4160], hex[33];
  if (c->have_corrupt && c->corrupt.lo == k.lo && c->corrupt.hi == k.hi) {
    c->have_corrupt = false;
    cache_entry_path(c, k, path, sizeof path);
    cache_say(c, "mgpu: cache entry %s was corrupt; rebuilt", path);
  }
  if (!c->enabled || len > CACHE_MAX_PAYLOAD || !cache_entry_path(c, k, path, sizeof path)) return false;
  mode_t mode;
  if (entry_odd(path, &mode)) return false;   /* said at its load */
  int err = 0;
  if (!mkdir_p(c->dir, &err)) {
    cache_degrade(c, "create", c->dir, err);
    return false;
  }
  static unsigned seq;
  cache_key_hex(k, hex);
  snprintf(tmp, sizeof tmp, "%s/" CACHE_TMP_PREFIX "%s-%ld-%u", c->dir, hex, (long)getpid(), ++seq);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    cache_degrade(c, "write", tmp, errno);
    return false;
  }
  unsigned char h[CACHE_HEADER_BYTES];
  header_make(h, k, data, len);
  const char *what = "write";
  bool ok = fd_write_all(fd, h, sizeof h) && fd_write_all(fd, data, len);
  if (ok && !(ok = fsync(fd) == 0)) what = "fsync";
  err = errno;
  if (close(fd) != 0 && ok) { ok = false; err = errno; what = "close"; }
  if (ok && rename(tmp, path) != 0) { ok = false; err = errno; what = "rename"; }
  if (!ok) {
    unlink(tmp);
    cache_degrade(c, what, tmp, err);
    return false;
  }
  int dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);   /* make the rename durable */
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  c->stores++;
  cache_evict(c);
  return true;
}

/* -- Eviction ----------------------------------------------------------------------------- */

typedef struct ent { char name[64]; uint64_t size; struct timespec mtime; } ent;

static int ent_cmp(const void *a, const void *b) {
  const ent *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

static bool ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && !strcmp(s + n - m, suf);
}

int cache_evict(cache *c) {
  if (!c->enabled) return 0;
  DIR *d = opendir(c->dir);
  if (!d) return 0;
  int dfd = dirfd(d);
  ent *v = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(d))) {
    struct stat st;
    if (strlen(e->d_name) >= sizeof v->name || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      continue;
    if (!strncmp(e->d_name, CACHE_TMP_PREFIX, strlen(CACHE_TMP_PREFIX))) {
      if (now - st.st_mtim.tv_sec > CACHE_STALE_TMP_S) unlinkat(dfd, e->d_name, 0);
      continue;
    }
    if (!ends_with(e->d_name, CACHE_EXT)) continue;
    if (n == cap) {
      size_t ncap = cap ? 2 * cap : 64;
      ent *nv = realloc(v, ncap * sizeof *v);
      if (!nv) break;
      v = nv;
      cap = ncap;
    }
    memcpy(v[n].name, e->d_name, strlen(e->d_name) + 1);   /* length checked above */
    v[n].size = (uint64_t)st.st_size;
    v[n].mtime = st.st_mtim;
    total += v[n].size;
    n++;
  }
  int removed = 0;
  if (total > c->max_bytes && n) {
    qsort(v, n, sizeof *v, ent_cmp);
    for (size_t i = 0; i < n && total > c->max_bytes; i++) {
      if (unlinkat(dfd, v[i].name, 0) == 0 || errno == ENOENT) {
        total -= v[i].size;
        removed++;
      }
    }
  }
  c->evictions += removed;
  free(v);
  closedir(d);
  return removed;
}
