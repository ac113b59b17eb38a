/*
** test_threads.c -- the threading contract (docs/reliability-notes.md):
** separate contexts run concurrently, DLPack exchanges and the process-wide
** calls included; a context entered from a second thread while in use
** answers MGPU_ERR_THREAD (and the first thread's work is unharmed); one
** context may move between threads that take turns; a failed context
** creation is explained to the thread that tried.
*/
#include <dlpack/dlpack.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "mgpu.h"
#include "test.h"

/* A kernel o = x * 2 over n f32 elements, blocks of 256; grid sized to n. */
static mgpu_kernel *double_kernel(mgpu_ctx *c, int64_t n) {
  int grid = (int)((n + 255) / 256);
  mgpu_kernel_options ko = { "twice", 1, { grid, 0, 0 }, 1, 0, 0, 0, 0, 0, 0, { 0, 0, 0 }, 0, 0 };
  mgpu_builder *b = NULL;
  mgpu_kernel *k = NULL;
  if (mgpu_builder_create(c, &ko, &b)) return NULL;
  int64_t shape[1] = { n };
  int32_t x, o, r[4], nr, pid, c256, start, v[2];
  mgpu_builder_param(b, MGPU_PARAM_INPUT, MGPU_F32, shape, 1, &x);
  mgpu_builder_param(b, MGPU_PARAM_OUTPUT, MGPU_F32, shape, 1, &o);
  int64_t axis[1] = { 0 }, i32[1] = { MGPU_I32 }, f32[1] = { MGPU_F32 };
  mgpu_op_args a0 = { NULL, 0, axis, 1, 0, NULL };
  mgpu_builder_op(b, "program_id", &a0, r, 4, &nr); pid = r[0];
  mgpu_op_args a1 = { NULL, 0, i32, 1, 256, NULL };
  mgpu_builder_op(b, "const", &a1, r, 4, &nr); c256 = r[0];
  mgpu_op_args a2 = { (int32_t[]){ pid, c256 }, 2, NULL, 0, 0, NULL };
  mgpu_builder_op(b, "mul", &a2, r, 4, &nr); start = r[0];
  int64_t ds[3] = { 1, INT64_MIN, 256 };
  mgpu_op_args vx = { (int32_t[]){ x, start }, 2, ds, 3, 0, NULL };
  mgpu_builder_op(b, "view", &vx, r, 4, &nr); v[0] = r[0];
  mgpu_op_args vo = { (int32_t[]){ o, start }, 2, ds, 3, 0, NULL };
  mgpu_builder_op(b, "view", &vo, r, 4, &nr); v[1] = r[0];
  mgpu_op_args ld = { &v[0], 1, NULL, 0, 0, NULL };
  mgpu_builder_op(b, "load", &ld, r, 4, &nr);
  int32_t xl = r[0];
  mgpu_op_args two = { NULL, 0, f32, 1, 2, NULL };
  mgpu_builder_op(b, "const", &two, r, 4, &nr);
  mgpu_op_args mul = { (int32_t[]){ xl, r[0] }, 2, NULL, 0, 0, NULL };
  mgpu_builder_op(b, "mul", &mul, r, 4, &nr);
  mgpu_op_args st = { (int32_t[]){ v[1], r[0] }, 2, NULL, 0, 0, NULL };
  if (mgpu_builder_op(b, "store", &st, r, 4, &nr) == MGPU_OK) mgpu_builder_finish(b, &k);
  mgpu_builder_release(b);
  return k;
}

/* Handshake around the launch of the shared-context test (NULL: none). */
typedef struct handshake { atomic_int ready, launched, released; } handshake;

/* Run o = 2x once on fresh data and check it.  With a handshake: announce
** the launch, and after it wait until the other thread stops probing. */
static int run_once(mgpu_ctx *c, mgpu_kernel *k, int64_t n, double seed, handshake *h) {
  mgpu_buffer *x = NULL, *o = NULL;
  int ok = mgpu_buffer_alloc(c, 4 * (uint64_t)n, &x) == MGPU_OK && mgpu_buffer_alloc(c, 4 * (uint64_t)n, &o) == MGPU_OK;
  mgpu_fill f = { MGPU_FILL_IOTA, MGPU_F32, (uint64_t)n, seed, 1, 0 };
  ok = ok && mgpu_buffer_fill(x, &f) == MGPU_OK;
  mgpu_launch_args la = { (mgpu_arg[]){ { .buffer = x }, { .buffer = o } }, 2, 0 };
  if (h) atomic_store(&h->ready, 1);
  mgpu_status st;
  do st = ok ? mgpu_kernel_launch(k, &la) : MGPU_OK;   /* the prober may hold the context for a moment */
  while (h && st == MGPU_ERR_THREAD);
  ok = ok && st == MGPU_OK;
  if (h) {
    atomic_store(&h->launched, 1);
    while (!atomic_load(&h->released)) sched_yield();
  }
  double last = 0;
  ok = ok && mgpu_buffer_get_f64(o, MGPU_F32, (uint64_t)n - 1, 1, &last) == MGPU_OK && last == 2 * (seed + (double)(n - 1));
  mgpu_buffer_release(x);
  mgpu_buffer_release(o);
  return ok;
}

typedef struct worker { int ok; double seed; } worker;

static void *separate(void *arg) {
  worker *w = arg;
  mgpu_ctx_options o = { MGPU_MODE_INTERPRET, 0, NULL, NULL };
  mgpu_ctx *c = NULL;
  w->ok = 0;
  if (mgpu_ctx_create(&o, &c)) return NULL;
  mgpu_kernel *k = double_kernel(c, 5000);
  int ok = k != NULL;
  for (int i = 0; ok && i < 20; i++) ok = run_once(c, k, 5000, w->seed + i, NULL);
  w->ok = ok;
  mgpu_kernel_release(k);
  mgpu_ctx_release(c);
  return NULL;
}

typedef struct shared { mgpu_ctx *c; mgpu_kernel *k; handshake h; int ok; } shared;

static void *long_launch(void *arg) {
  shared *s = arg;
  s->ok = run_once(s->c, s->k, 1 << 22, 3, &s->h);
  return NULL;
}

/* Threads of separate contexts trading their arrays through DLPack: every
** exchange sees its data, every deleter runs once (the process-wide record
** of exports and imports is shared). */
static void *dlpack_worker(void *arg) {
  worker *w = arg;
  mgpu_ctx_options o = { MGPU_MODE_INTERPRET, 0, NULL, NULL };
  mgpu_ctx *c = NULL;
  w->ok = 0;
  if (mgpu_ctx_create(&o, &c)) return NULL;
  int ok = 1;
  for (int i = 0; ok && i < 200; i++) {
    mgpu_buffer *b = NULL, *back = NULL;
    double v = w->seed + i, got = 0;
    int64_t shape[1] = { 1 };
    void *t = NULL;
    mgpu_value_info vi;
    ok = mgpu_buffer_alloc(c, 8, &b) == MGPU_OK && mgpu_buffer_set_f64(b, MGPU_F64, 0, 1, &v) == MGPU_OK &&
         mgpu_dlpack_export(b, MGPU_F64, shape, 1, &t) == MGPU_OK;
    mgpu_buffer_release(b);
    if (ok && i % 2) ok = mgpu_dlpack_free(c, t) == MGPU_OK && mgpu_dlpack_free(c, t) == MGPU_ERR_ARG;
    else if (ok) {
      ok = mgpu_dlpack_import(c, t, &back, &vi) == MGPU_OK && mgpu_buffer_get_f64(back, MGPU_F64, 0, 1, &got) == MGPU_OK &&
           got == v;
      mgpu_buffer_release(back);
      ok = ok && mgpu_dlpack_import(c, t, &back, &vi) == MGPU_ERR_ARG;   /* freed with the import */
    }
  }
  w->ok = ok && mgpu_kernel_cache_dir() == mgpu_kernel_cache_dir();
  mgpu_ctx_release(c);
  return NULL;
}

/* A context passed between threads that take turns (a lock of the caller's). */
typedef struct turns { mgpu_ctx *c; mgpu_kernel *k; pthread_mutex_t *mu; int ok; double seed; } turns;

static void *take_turns(void *arg) {
  turns *t = arg;
  int ok = 1;
  for (int i = 0; i < 10; i++) {
    pthread_mutex_lock(t->mu);
    ok &= run_once(t->c, t->k, 1000, t->seed + i, NULL);
    pthread_mutex_unlock(t->mu);
  }
  t->ok = ok;
  return NULL;
}

/* A failed mgpu_ctx_create: mgpu_errmsg(NULL) tells this thread's reason. */
static void *bad_create(void *arg) {
  int *mode = arg;
  mgpu_ctx_options o = { *mode, 0, NULL, NULL };
  mgpu_ctx *c = NULL;
  char want[64];
  snprintf(want, sizeof want, "mode %d is not an mgpu_mode", *mode);
  int ok = 1;
  for (int i = 0; i < 100 && ok; i++) ok = mgpu_ctx_create(&o, &c) == MGPU_ERR_ARG && strstr(mgpu_errmsg(NULL), want);
  *mode = ok;
  return NULL;
}

static void test_threads_more(void) {
  worker w[4] = { { 0, 1 }, { 0, 1e3 }, { 0, 1e6 }, { 0, 1e9 } };
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, dlpack_worker, &w[i]);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  CHECK(w[0].ok && w[1].ok && w[2].ok && w[3].ok);

  turns tt[2];
  mgpu_ctx_options o = { MGPU_MODE_INTERPRET, 0, NULL, NULL };
  mgpu_ctx *c = NULL;
  CHECK(mgpu_ctx_create(&o, &c) == MGPU_OK);
  mgpu_kernel *k = double_kernel(c, 1000);
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  for (int i = 0; i < 2; i++) {
    tt[i] = (turns){ c, k, &mu, 0, 100.0 * i };
    pthread_create(&t[i], NULL, take_turns, &tt[i]);
  }
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECK(tt[0].ok && tt[1].ok);
  mgpu_kernel_release(k);
  mgpu_ctx_release(c);

  int modes[2] = { 77, 99 };
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, bad_create, &modes[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECK(modes[0] == 1 && modes[1] == 1);
}

void test_threads(void) {
  worker w[2] = { { 0, 10 }, { 0, 1000 } };
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, separate, &w[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECK(w[0].ok && w[1].ok);

  mgpu_ctx_options o = { MGPU_MODE_INTERPRET, 0, NULL, NULL };
  shared s;
  memset(&s, 0, sizeof s);
  CHECK(mgpu_ctx_create(&o, &s.c) == MGPU_OK);
  s.k = double_kernel(s.c, 1 << 22);
  CHECK(s.k != NULL);
  pthread_t a;
  pthread_create(&a, NULL, long_launch, &s);
  while (!atomic_load(&s.h.ready)) sched_yield();
  struct timespec pause = { 0, 20 * 1000 * 1000 };   /* let it get inside the launch */
  nanosleep(&pause, NULL);
  int refused = 0;
  const char *msg = "";
  while (!atomic_load(&s.h.launched)) {
    if (mgpu_synchronize(s.c) == MGPU_ERR_THREAD) {
      refused++;
      msg = mgpu_errmsg(s.c);
    }
  }
  atomic_store(&s.h.released, 1);
  CHECK_CONTAINS(msg, "in use by another thread");
  pthread_join(a, NULL);
  CHECK(s.ok);              /* the first thread's work was not disturbed */
  CHECK(refused > 0);       /* and the second thread was turned away */
  CHECK(mgpu_synchronize(s.c) == MGPU_OK);
  mgpu_kernel_release(s.k);
  mgpu_ctx_release(s.c);
  test_threads_more();
}
