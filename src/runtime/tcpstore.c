/*
** tcpstore.c -- a client of PyTorch's c10d TCP store (tcpstore.h).
*/
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../core/core.h"
#include "tcpstore.h"

/* torch's QueryType numbers (c10d TCPStoreBackend.hpp) of the queries used here, its
** answer to a WAIT whose keys are all set, and the number VALIDATE carries. */
enum { Q_VALIDATE = 0, Q_SET = 1, Q_GET = 3, Q_WAIT = 6 };
enum { STOP_WAITING = 0 };
#define VALIDATE_MAGIC 0x3C85F7CEu

/* -- Bytes on the socket ---------------------------------------------------------------- */

/* Milliseconds before deadline, for poll (0 once it has passed). */
static int left_ms(double deadline) {
  double l = deadline - time_ms();
  return l <= 0 ? 0 : l > 1e9 ? 1000000000 : (int)l + 1;
}

/* 1 when fd is ready for events (or has an error the next call reports), 0 when the
** deadline passed first, -1 on a poll error. */
static int wait_fd(int fd, short events, double deadline) {
  for (;;) {
    struct pollfd p = { fd, events, 0 };
    int r = poll(&p, 1, left_ms(deadline));
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return -1;
    if (r == 0 && time_ms() >= deadline) return 0;
  }
}

/* A peer that closed, whether with FIN (recv returns 0) or with RST (it closed with our query
** still unread, so the kernel resets), is one failure with one message. */
static bool hung_up(tcpstore *s, char *why, size_t wn) {
  snprintf(why, wn, "the TCP store at %s closed the connection", s->where);
  return false;
}

static bool send_all(tcpstore *s, const unsigned char *b, size_t n, double deadline, char *why, size_t wn) {
  while (n) {
    ssize_t r = send(s->fd, b, n, MSG_NOSIGNAL);   /* a closed peer is an error, not SIGPIPE */
    if (r > 0) { b += r; n -= (size_t)r; continue; }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int w = wait_fd(s->fd, POLLOUT, deadline);
      if (w > 0) continue;
      if (w == 0) { snprintf(why, wn, "the TCP store at %s took no data in time", s->where); return false; }
    }
    if (r < 0 && (errno == EPIPE || errno == ECONNRESET)) return hung_up(s, why, wn);
    snprintf(why, wn, "cannot send to the TCP store at %s: %s", s->where, strerror(errno));
    return false;
  }
  return true;
}

/* Exactly n bytes; *late is set when the deadline passed first. */
static bool recv_all(tcpstore *s, void *p, size_t n, double deadline, bool *late, char *why, size_t wn) {
  unsigned char *b = p;
  *late = false;
  while (n) {
    ssize_t r = recv(s->fd, b, n, 0);
    if (r > 0) { b += r; n -= (size_t)r; continue; }
    if (r == 0 || errno == ECONNRESET) return hung_up(s, why, wn);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int w = wait_fd(s->fd, POLLIN, deadline);
      if (w > 0) continue;
      if (w == 0) { *late = true; snprintf(why, wn, "the TCP store at %s did not answer in time", s->where); return false; }
    }
    snprintf(why, wn, "cannot read from the TCP store at %s: %s", s->where, strerror(errno));
    return false;
  }
  return true;
}

/* A query being built: the type byte, then its arguments. */
typedef struct query {
  unsigned char b[1 + 8 + 8 + TCPSTORE_MAX_KEY + 8 + TCPSTORE_MAX_VALUE];
  size_t n;
} query;

static void put(query *q, const void *p, size_t n) { memcpy(q->b + q->n, p, n); q->n += n; }
static void put_u64(query *q, uint64_t v) { put(q, &v, sizeof v); }   /* native byte order, as torch sends */
static void put_key(query *q, const char *key) {
  put_u64(q, 1 + strlen(key));
  put(q, "/", 1);
  put(q, key, strlen(key));
}
static query *start(query *q, unsigned char type) { q->n = 0; put(q, &type, 1); return q; }

static bool key_fits(tcpstore *s, const char *key, char *why, size_t n) {
  if (1 + strlen(key) <= TCPSTORE_MAX_KEY) return true;
  snprintf(why, n, "the key for the TCP store at %s is longer than %d bytes", s->where, TCPSTORE_MAX_KEY);
  return false;
}

/* -- Connecting ----------------------------------------------------------------------- */

/* A connected socket to one address, or -1 with the reason in last. */
static int connect_to(const struct addrinfo *a, double deadline, char *last, size_t n) {
  int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
  if (fd < 0) { snprintf(last, n, "%s", strerror(errno)); return -1; }
  int err = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    int w = wait_fd(fd, POLLOUT, deadline);
    socklen_t len = sizeof err;
    if (w <= 0) err = w == 0 ? ETIMEDOUT : errno;
    else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  }
  if (err) {
    snprintf(last, n, "%s", strerror(err));
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);   /* small queries, answered at once */
  return fd;
}

bool tcpstore_connect(tcpstore *s, const char *host, const char *port, double deadline, char *why, size_t n) {
  s->fd = -1;
  snprintf(s->where, sizeof s->where, "%s:%s", host, port);
  char last[200] = "nothing listens there";
  for (long pause = 20; s->fd < 0; pause = pause < 500 ? 2 * pause : 1000) {
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(host, port, &hints, &ai);
    if (g != 0 && g != EAI_AGAIN) {
      snprintf(why, n, "cannot find the TCP store's host %s: %s", s->where, gai_strerror(g));
      return false;
    }
    if (g != 0) snprintf(last, sizeof last, "%s", gai_strerror(g));
    for (const struct addrinfo *a = ai; a && s->fd < 0; a = a->ai_next) s->fd = connect_to(a, deadline, last, sizeof last);
    if (ai) freeaddrinfo(ai);
    double left = deadline - time_ms();
    if (s->fd >= 0) break;
    if (left <= 0) {
      snprintf(why, n, "no TCP store answered at %s in time (%s)", s->where, last);
      return false;
    }
    sleep_ms(pause < left ? pause : (long)left + 1);
  }
  query q;
  uint32_t magic = VALIDATE_MAGIC;
  put(start(&q, Q_VALIDATE), &magic, sizeof magic);
  if (send_all(s, q.b, q.n, deadline, why, n)) return true;
  tcpstore_close(s);
  return false;
}

void tcpstore_close(tcpstore *s) {
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
}

/* -- Queries -------------------------------------------------------------------------------- */

bool tcpstore_set(tcpstore *s, const char *key, const void *val, size_t len, double deadline, char *why, size_t n) {
  if (!key_fits(s, key, why, n)) return false;
  if (len > TCPSTORE_MAX_VALUE) {
    snprintf(why, n, "a value of %zu bytes is more than the %d this client sends", len, TCPSTORE_MAX_VALUE);
    return false;
  }
  query q;
  put_key(start(&q, Q_SET), key);
  put_u64(&q, len);
  put(&q, val, len);
  return send_all(s, q.b, q.n, deadline, why, n);
}

bool tcpstore_get(tcpstore *s, const char *key, void *val, size_t cap, size_t *len, double deadline, char *why, size_t n) {
  *len = 0;
  if (!key_fits(s, key, why, n)) return false;
  query q;
  put_u64(start(&q, Q_WAIT), 1);
  put_key(&q, key);
  unsigned char answer = 0;
  bool late = false;
  if (!send_all(s, q.b, q.n, deadline, why, n)) return false;
  if (!recv_all(s, &answer, 1, deadline, &late, why, n)) {
    if (late) snprintf(why, n, "key /%s was not set in the TCP store at %s in time", key, s->where);
    return false;
  }
  if (answer != STOP_WAITING) {
    snprintf(why, n, "the TCP store at %s answered %u to a wait for /%s (not a c10d store?)", s->where, answer, key);
    return false;
  }
  put_key(start(&q, Q_GET), key);
  uint64_t size = 0;
  double soon = time_ms() + 10000;   /* the key is set: the value comes at once, even past the deadline */
  if (!send_all(s, q.b, q.n, soon, why, n) || !recv_all(s, &size, sizeof size, soon, &late, why, n)) return false;
  if (size > cap) {
    snprintf(why, n, "key /%s in the TCP store at %s holds %llu bytes, more than the %zu expected", key, s->where,
             (unsigned long long)size, cap);
    return false;
  }
  if (!recv_all(s, val, (size_t)size, soon, &late, why, n)) return false;
  *len = (size_t)size;
  return true;
}
