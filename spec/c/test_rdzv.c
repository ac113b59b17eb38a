/*
** test_rdzv.c -- the launcher rendezvous (src/runtime/rdzv.c) and its c10d TCP
** store client (src/runtime/tcpstore.c) without torch: a fake store written
** here from torch's wire protocol (a thread serving VALIDATE, SET, GET and WAIT,
** able to misbehave), ranks as threads against it, and the file rendezvous with
** ranks as processes, stale and foreign files, and every timeout's message.
*/
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/core/core.h"
#include "../../src/runtime/rdzv.h"
#include "../../src/runtime/tcpstore.h"
#include "test.h"

/* -- A fake c10d store ------------------------------------------------------------------- */

enum { FAKE_OK, FAKE_BAD_WAIT, FAKE_HANG_UP };   /* how it behaves */
#define FAKE_CLIENTS 16
#define FAKE_KEYS 8

typedef struct fake_client {
  int fd;
  bool greeted;                    /* its first query was VALIDATE with torch's number */
  unsigned char in[8192];
  size_t n;
  char waits_for[300];             /* a WAIT not answered yet */
} fake_client;

typedef struct fake_store {
  int lfd, port, mode;
  atomic_int stop;
  pthread_t thread;
  fake_client c[FAKE_CLIENTS];
  char key[FAKE_KEYS][300];
  unsigned char val[FAKE_KEYS][4096];
  size_t len[FAKE_KEYS];
  int nkeys;
  atomic_int greeted, rude;        /* clients that validated; clients that did not, or sent nonsense */
} fake_store;

static int fake_find(fake_store *f, const char *key) {
  for (int i = 0; i < f->nkeys; i++) if (!strcmp(f->key[i], key)) return i;
  return -1;
}

static uint64_t u64_at(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* A string argument at in[*at] (u64 length, bytes) into out; false while incomplete. */
static bool fake_string(const fake_client *c, size_t *at, char *out, size_t cap) {
  if (c->n < *at + 8) return false;
  uint64_t len = u64_at(c->in + *at);
  if (len >= cap || c->n < *at + 8 + len) return false;
  memcpy(out, c->in + *at + 8, len);
  out[len] = 0;
  *at += 8 + len;
  return true;
}

static void fake_send(fake_client *c, const void *p, size_t n) {
  if (write(c->fd, p, n) != (ssize_t)n) {}
}

/* Serve one whole query from the start of c->in: its length, or 0 while incomplete
** (-1: drop the client). */
static long fake_query(fake_store *f, fake_client *c) {
  if (c->n < 1) return 0;
  int q = c->in[0];
  size_t at = 1;
  if (!c->greeted) {
    uint32_t magic;
    if (q != 0) { atomic_fetch_add(&f->rude, 1); return -1; }
    if (c->n < 5) return 0;
    memcpy(&magic, c->in + 1, 4);
    if (magic != 0x3C85F7CEu) { atomic_fetch_add(&f->rude, 1); return -1; }
    c->greeted = true;
    atomic_fetch_add(&f->greeted, 1);
    return f->mode == FAKE_HANG_UP ? -1 : 5;
  }
  char key[300];
  if (q == 1) {                                        /* SET key value */
    size_t vat;
    if (!fake_string(c, &at, key, sizeof key) || c->n < at + 8) return 0;
    uint64_t len = u64_at(c->in + at);
    vat = at + 8;
    if (len > sizeof f->val[0] || c->n < vat + len) return len > sizeof f->val[0] ? -1 : 0;
    int i = fake_find(f, key);
    if (i < 0 && f->nkeys < FAKE_KEYS) { i = f->nkeys++; snprintf(f->key[i], sizeof f->key[i], "%s", key); }
    if (i >= 0) { memcpy(f->val[i], c->in + vat, len); f->len[i] = len; }
    return (long)(vat + len);
  }
  if (q == 3) {                                        /* GET key: u64 length, bytes */
    if (!fake_string(c, &at, key, sizeof key)) return 0;
    int i = fake_find(f, key);
    uint64_t len = i < 0 ? 0 : f->len[i];
    fake_send(c, &len, 8);
    if (len) fake_send(c, f->val[i], len);
    return (long)at;
  }
  if (q == 6) {                                        /* WAIT 1 key: one byte once it is set */
    if (c->n < 9) return 0;
    at = 9;
    if (u64_at(c->in + 1) != 1 || !fake_string(c, &at, key, sizeof key)) return u64_at(c->in + 1) != 1 ? -1 : 0;
    snprintf(c->waits_for, sizeof c->waits_for, "%s", key);
    return (long)at;
  }
  atomic_fetch_add(&f->rude, 1);
  return -1;
}

static void fake_drop(fake_client *c) {
  close(c->fd);
  c->fd = -1;
}

static void *fake_main(void *p) {
  fake_store *f = p;
  while (!atomic_load(&f->stop)) {
    struct pollfd pf[FAKE_CLIENTS + 1] = { { f->lfd, POLLIN, 0 } };
    for (int i = 0; i < FAKE_CLIENTS; i++) pf[i + 1] = (struct pollfd){ f->c[i].fd, POLLIN, 0 };
    if (poll(pf, FAKE_CLIENTS + 1, 20) <= 0) continue;
    if (pf[0].revents & POLLIN) {
      int fd = accept(f->lfd, NULL, NULL);
      for (int i = 0; i < FAKE_CLIENTS && fd >= 0; i++)
        if (f->c[i].fd < 0) { f->c[i] = (fake_client){ .fd = fd }; fd = -1; }
      if (fd >= 0) close(fd);
    }
    for (int i = 0; i < FAKE_CLIENTS; i++) {
      fake_client *c = &f->c[i];
      if (c->fd < 0 || !pf[i + 1].revents) continue;
      ssize_t r = read(c->fd, c->in + c->n, sizeof c->in - c->n);
      if (r <= 0) { fake_drop(c); continue; }
      c->n += (size_t)r;
      long used;
      while (c->fd >= 0 && (used = fake_query(f, c)) != 0) {
        if (used < 0) { fake_drop(c); break; }
        memmove(c->in, c->in + used, c->n - (size_t)used);
        c->n -= (size_t)used;
      }
    }
    for (int i = 0; i < FAKE_CLIENTS; i++) {      /* answer the waits whose key is set now */
      fake_client *c = &f->c[i];
      if (c->fd < 0 || !c->waits_for[0] || fake_find(f, c->waits_for) < 0) continue;
      unsigned char answer = f->mode == FAKE_BAD_WAIT ? 7 : 0;
      fake_send(c, &answer, 1);
      c->waits_for[0] = 0;
    }
  }
  for (int i = 0; i < FAKE_CLIENTS; i++) if (f->c[i].fd >= 0) fake_drop(&f->c[i]);
  return NULL;
}

static fake_store *fake_start(int mode) {
  fake_store *f = calloc(1, sizeof *f);
  for (int i = 0; i < FAKE_CLIENTS; i++) f->c[i].fd = -1;
  f->mode = mode;
  f->lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t len = sizeof a;
  if (bind(f->lfd, (struct sockaddr *)&a, sizeof a) || listen(f->lfd, 16) || getsockname(f->lfd, (struct sockaddr *)&a, &len)) {
    close(f->lfd);
    free(f);
    return NULL;
  }
  f->port = ntohs(a.sin_port);
  pthread_create(&f->thread, NULL, fake_main, f);
  return f;
}

static void fake_stop(fake_store *f) {
  atomic_store(&f->stop, 1);
  pthread_join(f->thread, NULL);
  close(f->lfd);
  free(f);
}

/* A port nothing listens on (bound, then closed). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t len = sizeof a;
  bind(fd, (struct sockaddr *)&a, sizeof a);
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd);
  return ntohs(a.sin_port);
}

/* -- Ranks as threads --------------------------------------------------------------------------- */

typedef struct rank_run {
  const char *where, *key;
  int rank, count, timeout_ms;
  unsigned char val[128];
  bool ok;
  double ms;                       /* how long its exchange took */
  char why[1200];
} rank_run;

static void *rank_main(void *p) {
  rank_run *r = p;
  double t0 = time_ms();
  r->ok = rdzv_exchange(r->where, r->key, r->rank, r->count, r->timeout_ms, r->val, sizeof r->val, r->why, sizeof r->why);
  r->ms = time_ms() - t0;
  return NULL;
}

static void fill_random(unsigned char *v, size_t n) {
  for (size_t i = 0; i < n; i++) v[i] = (unsigned char)rand();
}

/* count ranks exchange a fresh random value through `where`, rank 0 starting
** delay_ms after the others; true when every rank ends with rank 0's value. */
static bool exchange_threads(const char *where, const char *key, int count, int delay_ms) {
  rank_run r[8];
  pthread_t t[8];
  unsigned char want[128];
  fill_random(want, sizeof want);
  for (int i = 0; i < count; i++) {
    r[i] = (rank_run){ where, key, i, count, 5000, { 0 }, false, 0, "" };
    if (i == 0) memcpy(r[i].val, want, sizeof want);
    else memset(r[i].val, 0xEE, sizeof r[i].val);   /* poisoned: a rank that reads nothing cannot pass */
  }
  for (int i = count - 1; i >= 0; i--) {
    if (i == 0) sleep_ms(delay_ms);
    pthread_create(&t[i], NULL, rank_main, &r[i]);
  }
  bool all = true;
  for (int i = 0; i < count; i++) {
    pthread_join(t[i], NULL);
    if (!r[i].ok) fprintf(stderr, "rank %d: %s\n", i, r[i].why);
    all = all && r[i].ok && !memcmp(r[i].val, want, sizeof want);
  }
  return all;
}

/* -- The store client ---------------------------------------------------------------------------- */

static void store_client(void) {
  fake_store *f = fake_start(FAKE_OK);
  CHECK(f != NULL);
  if (!f) return;
  char port[16], why[600];
  snprintf(port, sizeof port, "%d", f->port);
  tcpstore a, b;
  double soon = time_ms() + 3000;
  CHECK(tcpstore_connect(&a, "127.0.0.1", port, soon, why, sizeof why));
  CHECK(tcpstore_connect(&b, "localhost", port, soon, why, sizeof why));
  CHECK(tcpstore_set(&a, "mgpu/t/uid", "hello", 5, soon, why, sizeof why));
  char got[16] = "";
  size_t len = 0;
  CHECK(tcpstore_get(&b, "mgpu/t/uid", got, sizeof got, &len, soon, why, sizeof why));
  CHECK(len == 5 && !memcmp(got, "hello", 5));
  sleep_ms(50);
  CHECK(fake_find(f, "/mgpu/t/uid") >= 0);                 /* torch's "/" before the key */
  CHECK(atomic_load(&f->greeted) == 2 && atomic_load(&f->rude) == 0);
  /* a value larger than the reader expects */
  CHECK(!tcpstore_get(&b, "mgpu/t/uid", got, 3, &len, soon, why, sizeof why));
  CHECK_CONTAINS(why, "holds 5 bytes, more than the 3 expected");
  tcpstore_close(&b);
  /* a key never set: the wait ends at the deadline */
  CHECK(tcpstore_connect(&b, "127.0.0.1", port, soon, why, sizeof why));
  double t0 = time_ms();
  CHECK(!tcpstore_get(&b, "mgpu/none", got, sizeof got, &len, t0 + 300, why, sizeof why));
  CHECK(time_ms() - t0 >= 290 && time_ms() - t0 < 2000);
  CHECK_CONTAINS(why, "key /mgpu/none was not set in the TCP store at 127.0.0.1:");
  tcpstore_close(&a);
  tcpstore_close(&b);
  fake_stop(f);

  /* nothing listening: refused until the deadline */
  snprintf(port, sizeof port, "%d", free_port());
  t0 = time_ms();
  CHECK(!tcpstore_connect(&a, "127.0.0.1", port, t0 + 300, why, sizeof why));
  CHECK(time_ms() - t0 >= 250 && time_ms() - t0 < 2000);
  CHECK_CONTAINS(why, "no TCP store answered at 127.0.0.1:");
  CHECK_CONTAINS(why, "in time (Connection refused)");
  /* an unknown host: a resolver that answers says so at once; one that cannot be reached
  ** (EAI_AGAIN, as on a machine without DNS) is asked again until the deadline */
  CHECK(!tcpstore_connect(&a, "no-such-host.invalid", "29500", time_ms() + 300, why, sizeof why));
  CHECK(strstr(why, "cannot find the TCP store's host no-such-host.invalid:29500") != NULL ||
        strstr(why, "no TCP store answered at no-such-host.invalid:29500 in time") != NULL);

  /* a store answering nonsense, one hanging up */
  f = fake_start(FAKE_BAD_WAIT);
  snprintf(port, sizeof port, "%d", f->port);
  CHECK(tcpstore_connect(&a, "127.0.0.1", port, time_ms() + 3000, why, sizeof why));
  CHECK(tcpstore_set(&a, "k", "v", 1, time_ms() + 3000, why, sizeof why));
  CHECK(!tcpstore_get(&a, "k", got, sizeof got, &len, time_ms() + 3000, why, sizeof why));
  CHECK_CONTAINS(why, "answered 7 to a wait for /k (not a c10d store?)");
  tcpstore_close(&a);
  fake_stop(f);
  f = fake_start(FAKE_HANG_UP);
  snprintf(port, sizeof port, "%d", f->port);
  CHECK(tcpstore_connect(&a, "127.0.0.1", port, time_ms() + 3000, why, sizeof why));
  CHECK(!tcpstore_get(&a, "k", got, sizeof got, &len, time_ms() + 3000, why, sizeof why));
  CHECK_CONTAINS(why, "closed the connection");
  tcpstore_close(&a);
  fake_stop(f);
}

/* -- The rendezvous through a store ------------------------------------------------------------ */

static void store_rendezvous(void) {
  fake_store *f = fake_start(FAKE_OK);
  char where[64], why[1200];
  snprintf(where, sizeof where, "tcp://127.0.0.1:%d", f->port);
  CHECK(exchange_threads(where, "mgpu/job1/uid", 4, 0));
  CHECK(exchange_threads(where, "mgpu/job2/uid", 3, 200));     /* the others wait for a late rank 0 */
  CHECK(atomic_load(&f->rude) == 0);

  /* rank 0 never comes: a timeout naming the key, the store and rank 0 */
  rank_run r = { where, "mgpu/job3/uid", 1, 2, 300, { 0 }, false, 0, "" };
  rank_main(&r);
  CHECK(!r.ok && r.ms >= 290 && r.ms < 3000);
  CHECK_CONTAINS(r.why, "rank 1: key /mgpu/job3/uid was not set in the TCP store at 127.0.0.1:");
  CHECK_CONTAINS(r.why, "in time (is rank 0 running?)");
  fake_stop(f);

  /* the store starts after the ranks: they keep trying to connect */
  int port = free_port();
  snprintf(where, sizeof where, "tcp://127.0.0.1:%d", port);
  rank_run late = { where, "mgpu/j/uid", 1, 2, 5000, { 0 }, false, 0, "" };
  pthread_t t;
  pthread_create(&t, NULL, rank_main, &late);
  sleep_ms(300);
  fake_store *g = calloc(1, sizeof *g);
  for (int i = 0; i < FAKE_CLIENTS; i++) g->c[i].fd = -1;
  g->lfd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(g->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  bool bound = bind(g->lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(g->lfd, 16) == 0;
  CHECK(bound);
  if (bound) {
    pthread_create(&g->thread, NULL, fake_main, g);
    rank_run zero = { where, "mgpu/j/uid", 0, 2, 5000, { 0 }, false, 0, "" };
    fill_random(zero.val, sizeof zero.val);
    rank_main(&zero);
    pthread_join(t, NULL);
    CHECK(zero.ok && late.ok && !memcmp(zero.val, late.val, sizeof zero.val));
    fake_stop(g);
  } else {
    pthread_join(t, NULL);
    close(g->lfd);
    free(g);
  }

  /* what the rendezvous refuses before waiting */
  unsigned char v[128] = { 0 };
  CHECK(!rdzv_exchange("tcp://127.0.0.1", "k", 1, 2, 100, v, sizeof v, why, sizeof why));
  CHECK_CONTAINS(why, "tcp://127.0.0.1 names no host and port (tcp://host:port)");
  CHECK(!rdzv_exchange("http://x", "k", 1, 2, 100, v, sizeof v, why, sizeof why));
  CHECK_CONTAINS(why, "the rendezvous 'http://x' is neither tcp://host:port nor file:/path");
  CHECK(!rdzv_exchange("file:/tmp/x", "two words", 1, 2, 100, v, sizeof v, why, sizeof why));
  CHECK_CONTAINS(why, "the rendezvous key 'two words' is not one word");
  CHECK(!rdzv_exchange("file:/tmp/x", "k", 2, 2, 100, v, sizeof v, why, sizeof why));
  CHECK_CONTAINS(why, "rank 2 of 2 ranks is not valid");
}

/* -- The rendezvous through a file, ranks as processes ------------------------------------------ */

/* count processes exchange `want` through file `path` (rank 0 after delay_ms);
** the number of ranks that ended with it. */
static int exchange_processes(const char *path, const char *key, int count, int delay_ms, const unsigned char *want) {
  char where[320];
  snprintf(where, sizeof where, "file:%s", path);
  fflush(stderr);
  pid_t pid[8];
  for (int i = 0; i < count; i++) {
    if ((pid[i] = fork()) != 0) continue;
    unsigned char v[128];
    char why[1200];
    if (i == 0) { memcpy(v, want, sizeof v); sleep_ms(delay_ms); }
    else memset(v, 0xEE, sizeof v);
    bool ok = rdzv_exchange(where, key, i, count, 5000, v, sizeof v, why, sizeof why);
    if (!ok) fprintf(stderr, "rank %d: %s\n", i, why);
    _exit(ok && !memcmp(v, want, sizeof v) ? 0 : 1);
  }
  int good = 0;
  for (int i = 0; i < count; i++) {
    int st = 0;
    waitpid(pid[i], &st, 0);
    good += WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  return good;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) { fputs(text, f); fclose(f); }
}

static void file_rendezvous(void) {
  char dir[] = "/tmp/mgpu_rdzv_XXXXXX", path[300], why[1200];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/uid", dir);
  unsigned char want[128], v[128];
  fill_random(want, sizeof want);
  CHECK(exchange_processes(path, "slurm-7.0", 4, 150, want) == 4);

  /* an earlier job's file (another key, another rank count) is never taken:
  ** the readers wait for this job's rank 0 */
  fill_random(want, sizeof want);
  CHECK(exchange_processes(path, "slurm-8.0", 3, 300, want) == 3);   /* the file of job 7 is still there */
  CHECK(exchange_processes(path, "slurm-8.0", 2, 300, want) == 2);   /* same key, other count */

  /* timeouts: no file, another job's, not a rendezvous file */
  char none[320];
  snprintf(none, sizeof none, "file:%s/none", dir);
  double t0 = time_ms();
  CHECK(!rdzv_exchange(none, "k", 1, 2, 300, v, sizeof v, why, sizeof why));
  CHECK(time_ms() - t0 >= 290 && time_ms() - t0 < 3000);
  CHECK_CONTAINS(why, "rank 1: rank 0 never wrote ");
  CHECK_CONTAINS(why, "/none in time (is rank 0 running, and does every rank see that path?)");
  snprintf(none, sizeof none, "file:%s", path);
  CHECK(!rdzv_exchange(none, "slurm-9.0", 1, 2, 200, v, sizeof v, why, sizeof why));
  CHECK_CONTAINS(why, "the file there is another job's (key slurm-8.0, 2 ranks; this job: key slurm-9.0, 2 ranks)");
  write_text(path, "mgpu rendezvous 1\nkey k\ncount 2\nvalue 12zz\n");
  CHECK(!rdzv_exchange(none, "k", 1, 2, 200, v, sizeof v, why, sizeof why));
  CHECK_CONTAINS(why, "the file there is not an mgpu rendezvous file");
  write_text(path, "hello\n");
  CHECK(!rdzv_exchange(none, "k", 1, 2, 200, v, sizeof v, why, sizeof why));
  CHECK_CONTAINS(why, "not an mgpu rendezvous file");

  /* rank 0 cannot write: no such directory */
  CHECK(!rdzv_exchange("file:/nonexistent-mgpu-dir/uid", "k", 0, 2, 200, want, sizeof want, why, sizeof why));
  CHECK_CONTAINS(why, "rank 0 cannot create /nonexistent-mgpu-dir/uid.");
  CHECK_CONTAINS(why, ".tmp: No such file or directory");
  CHECK(unlink(path) == 0 && rmdir(dir) == 0);   /* no temporary file left beside it */
}

void test_rdzv(void) {
  srand((unsigned)time_ms());
  store_client();
  store_rendezvous();
  file_rendezvous();
}
