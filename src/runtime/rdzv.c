/*
** rdzv.c -- the launcher rendezvous (rdzv.h).
*/
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/core.h"
#include "rdzv.h"
#include "tcpstore.h"

#define MAX_KEY 200

/* -- A c10d TCP store -------------------------------------------------------------------- */

/* host and port of "host:port" or "[v6 address]:port"; false without both. */
static bool split_host(const char *hp, char *host, size_t hn, char *port, size_t pn) {
  const char *colon;
  if (hp[0] == '[') {
    const char *end = strchr(hp, ']');
    if (!end || end[1] != ':') return false;
    snprintf(host, hn, "%.*s", (int)(end - hp - 1), hp + 1);
    colon = end + 1;
  } else {
    if (!(colon = strrchr(hp, ':'))) return false;
    snprintf(host, hn, "%.*s", (int)(colon - hp), hp);
  }
  snprintf(port, pn, "%s", colon + 1);
  return *host && *port;
}

static bool via_store(const char *hp, const char *key, int rank, double deadline, unsigned char *val, size_t n,
                      char *why, size_t nwhy) {
  char host[256], port[32], err[600];
  if (!split_host(hp, host, sizeof host, port, sizeof port)) {
    snprintf(why, nwhy, "tcp://%s names no host and port (tcp://host:port)", hp);
    return false;
  }
  tcpstore s;
  size_t got = n;
  bool connected = tcpstore_connect(&s, host, port, deadline, err, sizeof err), ok = connected;
  if (ok && rank == 0) ok = tcpstore_set(&s, key, val, n, deadline, err, sizeof err);
  else if (ok) ok = tcpstore_get(&s, key, val, n, &got, deadline, err, sizeof err);
  tcpstore_close(&s);
  if (ok && got != n) {
    snprintf(err, sizeof err, "key /%s in the TCP store at %s holds %zu bytes, not %zu", key, s.where, got, n);
    ok = false;
  }
  bool waited = connected && rank != 0 && time_ms() >= deadline;   /* rank 0 never set the key */
  if (!ok) snprintf(why, nwhy, "rank %d: %s%s", rank, err, waited ? " (is rank 0 running?)" : "");
  return ok;
}

/* -- A file ---------------------------------------------------------------------------------- */

#define FILE_HEADER "mgpu rendezvous 1\n"

/* The file's text: the header, then "key K", "count N" and "value HEX" lines. */
static int file_text(char *out, size_t cap, const char *key, int count, const unsigned char *val, size_t n) {
  int len = snprintf(out, cap, FILE_HEADER "key %s\ncount %d\nvalue ", key, count);
  for (size_t i = 0; i < n; i++) len += snprintf(out + len, cap - (size_t)len, "%02x", val[i]);
  return len + snprintf(out + len, cap - (size_t)len, "\n");
}

/* Write path whole: a temporary file beside it, renamed over it, so a reader sees
** the old file, no file or the new one, never part of it. */
static bool file_write(const char *path, const char *text, size_t len, char *why, size_t nwhy) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  const char *what = "create", *subject = tmp;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = fd >= 0;
  if (ok && !(ok = fd_write_all(fd, text, len) && fsync(fd) == 0)) what = "write";
  int err = errno;
  if (fd >= 0 && close(fd) != 0 && ok) { ok = false; err = errno; what = "write"; }
  if (ok && rename(tmp, path) != 0) { ok = false; err = errno; what = "rename the new file to"; subject = path; }
  if (!ok) {
    snprintf(why, nwhy, "rank 0 cannot %s %s: %s", what, subject, strerror(err));
    if (fd >= 0) unlink(tmp);
  }
  return ok;
}

/* The value of the line `name value` at *p (cut off in place), moving *p past it;
** NULL when the line is another. */
static char *field(char **p, const char *name) {
  size_t k = strlen(name);
  char *v = *p + k + 1, *end;
  if (strncmp(*p, name, k) != 0 || (*p)[k] != ' ' || !(end = strchr(v, '\n'))) return NULL;
  *end = 0;
  *p = end + 1;
  return v;
}

static bool unhex(const char *s, unsigned char *val, size_t n) {
  if (strlen(s) != 2 * n) return false;
  for (size_t i = 0; i < n; i++) {
    unsigned x;
    if (!isxdigit((unsigned char)s[2 * i]) || !isxdigit((unsigned char)s[2 * i + 1]) || sscanf(s + 2 * i, "%2x", &x) != 1)
      return false;
    val[i] = (unsigned char)x;
  }
  return true;
}

typedef enum { FILE_NONE, FILE_OTHER_JOB, FILE_NOT_RENDEZVOUS, FILE_THIS_JOB } file_state;

/* What path holds now; for another job's file, which job in seen. */
static file_state file_read(const char *path, const char *key, int count, unsigned char *val, size_t n, char *seen,
                            size_t sn) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FILE_NONE;
  char text[4096];
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && st.st_size < (off_t)sizeof text && fd_read_all(fd, text, (size_t)st.st_size);
  close(fd);
  if (!ok) return FILE_NOT_RENDEZVOUS;
  text[st.st_size] = 0;
  size_t h = strlen(FILE_HEADER);
  char *p = text + h, *fkey = NULL, *fcount = NULL, *fval = NULL;
  if (strncmp(text, FILE_HEADER, h) != 0 || !(fkey = field(&p, "key")) || !(fcount = field(&p, "count")) ||
      !(fval = field(&p, "value")))
    return FILE_NOT_RENDEZVOUS;
  if (strcmp(fkey, key) != 0 || atoi(fcount) != count) {
    snprintf(seen, sn, "key %.200s, %.20s ranks", fkey, fcount);
    return FILE_OTHER_JOB;
  }
  return unhex(fval, val, n) ? FILE_THIS_JOB : FILE_NOT_RENDEZVOUS;
}

static bool via_file(const char *path, const char *key, int rank, int count, double deadline, unsigned char *val,
                     size_t n, char *why, size_t nwhy) {
  if (rank == 0) {
    char text[4096];
    int len = file_text(text, sizeof text, key, count, val, n);
    return file_write(path, text, (size_t)len, why, nwhy);
  }
  char seen[300] = "";
  file_state st;
  long pause = 10;   /* polls: soon at first, then four times a second */
  while ((st = file_read(path, key, count, val, n, seen, sizeof seen)) != FILE_THIS_JOB) {
    double left = deadline - time_ms();
    if (left <= 0) break;
    sleep_ms(pause < left ? pause : (long)left + 1);
    pause = pause < 125 ? 2 * pause : 250;
  }
  if (st == FILE_THIS_JOB) return true;
  int k = snprintf(why, nwhy, "rank %d: rank 0 never wrote %s in time", rank, path);
  if (st == FILE_NONE) snprintf(why + k, nwhy - (size_t)k, " (is rank 0 running, and does every rank see that path?)");
  else if (st == FILE_OTHER_JOB)
    snprintf(why + k, nwhy - (size_t)k, ": the file there is another job's (%s; this job: key %s, %d ranks)", seen, key, count);
  else snprintf(why + k, nwhy - (size_t)k, ": the file there is not an mgpu rendezvous file");
  return false;
}

/* -- Either -------------------------------------------------------------------------------------- */

bool rdzv_exchange(const char *where, const char *key, int rank, int count, int timeout_ms, unsigned char *val,
                   size_t n, char *why, size_t nwhy) {
  bool word = *key && strlen(key) <= MAX_KEY;
  for (const char *c = key; *c && word; c++) word = isgraph((unsigned char)*c);
  if (!word) { snprintf(why, nwhy, "the rendezvous key '%s' is not one word of at most %d characters", key, MAX_KEY); return false; }
  if (count < 1 || rank < 0 || rank >= count) { snprintf(why, nwhy, "rank %d of %d ranks is not valid", rank, count); return false; }
  if (n == 0 || n > RDZV_MAX_VALUE) { snprintf(why, nwhy, "a rendezvous exchanges 1 to %d bytes, not %zu", RDZV_MAX_VALUE, n); return false; }
  double deadline = time_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  if (!strncmp(where, "tcp://", 6)) return via_store(where + 6, key, rank, deadline, val, n, why, nwhy);
  if (!strncmp(where, "file:", 5) && where[5]) return via_file(where + 5, key, rank, count, deadline, val, n, why, nwhy);
  snprintf(why, nwhy, "the rendezvous '%s' is neither tcp://host:port nor file:/path", where);
  return false;
}
