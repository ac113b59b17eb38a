/*
** api_dist.c -- contexts as devices of a job: NVSHMEM processes on GPUs, or
** simulated devices of a world in one process (threads), whose kernels that
** touch other devices the interpreter runs together.
**
** A world meets its devices at rendezvous: each collective call (a launch
** of a kernel using other devices, a barrier) waits until every device has
** made its call; the last to arrive does the work for all.  A device that
** leaves (its script ended) makes the others' waits fail instead of hang.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/rdzv.h"
#include "../runtime/shmem.h"
#include "api.h"

#define MAGIC_WORLD 0x6d776c64
#define MAX_DEVICES 64

enum { RV_LAUNCH = 1, RV_BARRIER = 2 };

#define SAME_SYMMETRIC "every device must make the same symmetric arrays in the same order (on GPUs mgpu.symmetric " \
                       "is collective: an extra or missing one moves the others' places)"

typedef struct wslot {
  int kind;                        /* RV_*, 0 when not waiting */
  mgpu_ctx *ctx;                   /* the device's context */
  mgpu_kernel *k;                  /* launches */
  const mgpu_launch_args *a;
  mgpu_status st;                  /* the outcome, set by whoever ran the rendezvous */
  char msg[2048];
} wslot;

struct mgpu_world {
  uint32_t magic;
  int refs;                        /* the creator + every joined context (under mu) */
  int count;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int arrived;
  uint64_t gen;                    /* rendezvous completed so far */
  bool joined[MAX_DEVICES], left[MAX_DEVICES];
  wslot slot[MAX_DEVICES];
};

/* A symmetric array a simulated device made, for the check that every
** device makes the same ones in the same order. */
typedef struct sym_rec {
  uint64_t nbytes;
  char name[120];
} sym_rec;

typedef struct dist {
  mgpu_world *world;               /* simulated devices, or NULL */
  struct { sym_rec *v; uint32_t n, cap; } syms;   /* simulated devices: the symmetric arrays made so far */
  const shmem *shm;                /* NVSHMEM processes, or NULL */
  int rank, count;
  int64_t delta[MAX_DEVICES];      /* GPU: local symmetric address -> device d's */
  mgpu_buffer *table;              /* i64[3 + count], holds no reference on the context */
} dist;

/* -- Worlds ------------------------------------------------------------------------ */

mgpu_status mgpu_world_create(int32_t count, mgpu_world **out) {
  if (!out) return MGPU_ERR_ARG;
  *out = NULL;
  if (count < 1 || count > MAX_DEVICES) return MGPU_ERR_ARG;
  mgpu_world *w = calloc(1, sizeof *w);
  if (!w) return MGPU_ERR_NOMEM;
  w->magic = MAGIC_WORLD;
  w->refs = 1;
  w->count = count;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  *out = w;
  return MGPU_OK;
}

static void world_unref(mgpu_world *w) {
  pthread_mutex_lock(&w->mu);
  int left = --w->refs;
  pthread_mutex_unlock(&w->mu);
  if (left) return;
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  w->magic = 0;
  free(w);
}

void mgpu_world_release(mgpu_world *w) {
  if (w && w->magic == MAGIC_WORLD) world_unref(w);
}

/* The job record and its peer table (rank, count, deltas). */
static mgpu_status dist_new(mgpu_ctx *ctx, int rank, int count) {
  dist *d = mem_calloc(&ctx->alloc, sizeof *d);
  if (!d) return diag_set(&ctx->d, ERR_NOMEM, "");
  d->rank = rank;
  d->count = count;
  uint64_t nbytes = 8 * (uint64_t)(3 + count);
  mgpu_buffer *t = NULL;
  api_leave(ctx);                  /* the public allocator enters the context itself */
  mgpu_status s = mgpu_buffer_alloc(ctx, nbytes, &t);
  api_enter(ctx);
  if (s) { mem_free(&ctx->alloc, d, sizeof *d); return s; }
  api_unref(ctx);                  /* the table must not keep its own context alive */
  d->table = t;
  ctx->dist = d;
  return MGPU_OK;
}

static mgpu_status write_table(mgpu_ctx *ctx) {
  dist *d = ctx->dist;
  int64_t v[3 + MAX_DEVICES];
  v[0] = d->rank;
  v[1] = d->count;
  for (int i = 0; i < d->count; i++) v[2 + i] = d->delta[i];
  v[2 + d->count] = 0;             /* no multicast mapping: mgpu never creates multicast objects */
  api_leave(ctx);
  mgpu_status s = mgpu_buffer_write(d->table, 0, v, 8 * (uint64_t)(3 + d->count));
  api_enter(ctx);
  return s;
}

mgpu_status mgpu_world_join(mgpu_ctx *ctx, mgpu_world *w, int32_t rank) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  char msg[256] = "";
  if (!w || w->magic != MAGIC_WORLD) snprintf(msg, sizeof msg, "mgpu_world_join: w is not a world");
  else if (ctx->dist) snprintf(msg, sizeof msg, "mgpu_world_join: the context is already device %d of a job", ctx->dist->rank);
  else if (ctx->info.mode != MGPU_MODE_INTERPRET)
    snprintf(msg, sizeof msg, "mgpu_world_join: simulated devices run in the interpreter (make the context with MGPU_MODE_INTERPRET)");
  else if (rank < 0 || rank >= w->count) snprintf(msg, sizeof msg, "mgpu_world_join: rank %d is outside 0..%d", rank, w->count - 1);
  if (*msg) s = diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  if (!s) {
    pthread_mutex_lock(&w->mu);
    bool taken = w->joined[rank];
    if (!taken) { w->joined[rank] = true; w->refs++; }
    pthread_mutex_unlock(&w->mu);
    if (taken) s = diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_world_join: that rank already has a context");
  }
  if (!s) {
    s = dist_new(ctx, rank, w->count);
    if (s) world_unref(w);
    else { ctx->dist->world = w; s = write_table(ctx); }
  }
  api_leave(ctx);
  return s;
}

static void world_leave(mgpu_ctx *ctx) {
  mgpu_world *w = ctx->dist->world;
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->left[ctx->dist->rank] = true;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  ctx->dist->world = NULL;
  world_unref(w);
}

mgpu_status mgpu_world_leave(mgpu_ctx *ctx) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  if (ctx->dist) world_leave(ctx);
  api_leave(ctx);
  return MGPU_OK;
}

void api_dist_close(mgpu_ctx *ctx) {
  dist *d = ctx->dist;
  if (!d) return;
  if (d->world) world_leave(ctx);
  ctx->refs += 2;   /* the table's release drops the reference dist_new gave back: keep the count above 0 */
  mgpu_buffer_release(d->table);
  ctx->refs--;
  ctx->dist = NULL;
  vec_free(&ctx->alloc, &d->syms);
  mem_free(&ctx->alloc, d, sizeof *d);
}

/* -- Rendezvous --------------------------------------------------------------------------- */

/* Run the launches every device of w has posted, together. */
static void run_launches(mgpu_world *w) {
  mgpu_kernel *k0 = w->slot[0].k;
  mgpu_status st = MGPU_OK;
  char msg[2048] = "";
  for (int i = 1; i < w->count && !st; i++) {
    mgpu_kernel *k = w->slot[i].k;
    if (k->ir_len != k0->ir_len || memcmp(k->ir_text, k0->ir_text, k0->ir_len) != 0) {
      snprintf(msg, sizeof msg, "device 0 launched kernel '%s' but device %d launched '%s'%s: every device must launch "
               "the same kernels that use other devices, in the same order", k0->ir->name, i, k->ir->name,
               strcmp(k0->ir->name, k->ir->name) ? "" : " traced differently");
      st = MGPU_ERR_ARG;
    }
  }
  uint32_t np = k0->ir->params.n;
  interp_arg *args = NULL;
  if (!st) {
    args = calloc((size_t)w->count * (np ? np : 1), sizeof *args);
    if (!args) { st = MGPU_ERR_NOMEM; snprintf(msg, sizeof msg, "out of memory"); }
  }
  if (!st) {
    for (int i = 0; i < w->count; i++)
      for (uint32_t j = 0; j < np; j++) {
        interp_arg *x = &args[(size_t)i * np + j];
        const mgpu_arg *g = &w->slot[i].a->args[j];
        if (k0->ir->params.v[j].role == MGPU_PARAM_SCALAR) {   /* checked by the device's launch */
          api_scalar_bits(ir_vtype(k0->ir, k0->ir->params.v[j].value)->dtype, g, &x->scalar);
          continue;
        }
        x->data = (void *)(uintptr_t)g->buffer->addr;   /* interpreting contexts: host memory */
        x->size = g->buffer->size;
      }
    mgpu_ctx *c0 = k0->ctx;
    interp_set_timeout(c0->run.timeout_ms);
    st = interp_run(k0->ir, &k0->ki, args, np, w->count, &c0->d);
    if (st) snprintf(msg, sizeof msg, "%s", c0->d.msg);
  }
  free(args);
  for (int i = 0; i < w->count; i++) {
    w->slot[i].st = st;
    snprintf(w->slot[i].msg, sizeof w->slot[i].msg, "%s", msg);
  }
}

/* Whether every device of w has made the same symmetric arrays as device 0
** (sizes, in order); else the message naming the first that differs.  Called
** by the last device to reach a rendezvous: the others wait in it. */
static bool same_symmetric(mgpu_world *w, char *msg, size_t n) {
  const dist *d0 = w->slot[0].ctx->dist;
  for (int i = 1; i < w->count; i++) {
    const dist *d = w->slot[i].ctx->dist;
    uint32_t j = 0;
    while (j < d0->syms.n && j < d->syms.n && d0->syms.v[j].nbytes == d->syms.v[j].nbytes) j++;
    if (j == d0->syms.n && j == d->syms.n) continue;
    const dist *more = j < d0->syms.n ? d0 : d;
    int im = more == d0 ? 0 : i, other = more == d0 ? i : 0;
    const sym_rec *a = &more->syms.v[j];
    const dist *od = more == d0 ? d : d0;
    int w1 = snprintf(msg, n, "devices made different symmetric arrays: device %d's symmetric array %u is %s", im, j + 1,
                      a->name);
    if (w1 < 0 || (size_t)w1 >= n) return false;
    if (j < od->syms.n)
      snprintf(msg + w1, n - (size_t)w1, " but device %d's is %s; %s", other, od->syms.v[j].name, SAME_SYMMETRIC);
    else snprintf(msg + w1, n - (size_t)w1, " but device %d made only %u; %s", other, j, SAME_SYMMETRIC);
    return false;
  }
  return true;
}

/* What device i is doing at a rendezvous, for messages. */
static void describe(const wslot *s, int i, char *buf, size_t n) {
  if (s->kind == RV_LAUNCH) snprintf(buf, n, "device %d launches kernel '%s'", i, s->k->ir->name);
  else snprintf(buf, n, "device %d waits at a barrier", i);
}

/* Post device `rank`'s call and wait for the others'; the last to arrive
** runs them.  Returns the outcome for this device. */
static mgpu_status rendezvous(mgpu_ctx *ctx, int kind, mgpu_kernel *k, const mgpu_launch_args *a) {
  mgpu_world *w = ctx->dist->world;
  int rank = ctx->dist->rank;
  char msg[2048] = "";
  pthread_mutex_lock(&w->mu);
  wslot *me = &w->slot[rank];
  me->kind = kind; me->ctx = ctx; me->k = k; me->a = a; me->st = MGPU_OK; me->msg[0] = 0;
  uint64_t gen = w->gen;
  w->arrived++;
  for (;;) {
    if (w->gen != gen) break;              /* done by the last to arrive */
    int gone = -1;
    for (int i = 0; i < w->count && gone < 0; i++) if (w->left[i] && w->slot[i].kind == 0) gone = i;
    if (gone >= 0) {
      char what[200];
      describe(me, rank, what, sizeof what);
      snprintf(msg, sizeof msg, "%s, but device %d has ended its script (finished or failed) without joining it: "
               "every device must make the same collective calls in the same order", what, gone);
      w->arrived--;
      me->kind = 0;
      pthread_mutex_unlock(&w->mu);
      return mgpu_ctx_fail(ctx, MGPU_ERR_STATE, msg);
    }
    if (w->arrived == w->count) {
      int other = -1;
      for (int i = 0; i < w->count && other < 0; i++) if (w->slot[i].kind != kind) other = i;
      char sym[sizeof me->msg];
      if (!same_symmetric(w, sym, sizeof sym)) {
        for (int i = 0; i < w->count; i++) {
          w->slot[i].st = MGPU_ERR_ARG;
          snprintf(w->slot[i].msg, sizeof w->slot[i].msg, "%s", sym);
        }
      } else if (other >= 0) {
        char x[200], y[200];
        describe(me, rank, x, sizeof x);
        describe(&w->slot[other], other, y, sizeof y);
        for (int i = 0; i < w->count; i++) {
          w->slot[i].st = MGPU_ERR_ARG;
          snprintf(w->slot[i].msg, sizeof w->slot[i].msg, "devices disagree: %s while %s", x, y);
        }
      } else if (kind == RV_LAUNCH) {
        run_launches(w);
      }
      for (int i = 0; i < w->count; i++) w->slot[i].kind = 0;
      w->arrived = 0;
      w->gen++;
      pthread_cond_broadcast(&w->cv);
      break;
    }
    pthread_cond_wait(&w->cv, &w->mu);
  }
  mgpu_status st = me->st;
  snprintf(msg, sizeof msg, "%s", me->msg);
  pthread_mutex_unlock(&w->mu);
  return st ? mgpu_ctx_fail(ctx, st, msg) : MGPU_OK;
}

mgpu_status api_dist_launch(mgpu_kernel *k, const mgpu_launch_args *a) {
  return rendezvous(k->ctx, RV_LAUNCH, k, a);
}

/* The parameter value v views (through views and transposes). */
static uint32_t root_param(const ir_kernel *k, uint32_t v) {
  while (k->vals.v[v].def >= 0) v = ir_opds(k, &k->ops.v[k->vals.v[v].def])[0];
  return k->vals.v[v].idx;
}

static bool views_peers(int code) { return code == IR_remote || code == IR_multimem_store || code == IR_multimem_load; }

/* k->devices, from one walk over the ops. */
static void summarise(mgpu_kernel *k) {
  if (k->devices.known) return;
  const ir_kernel *ir = k->ir;
  for (uint32_t i = 0; i < ir->ops.n; i++) {
    const ir_op *op = &ir->ops.v[i];
    k->devices.collective |= views_peers(op->code) || op->code == IR_sem_wait;
    k->devices.multimem |= op->code == IR_multimem_store || op->code == IR_multimem_load;
    if (!views_peers(op->code)) continue;
    uint32_t p = root_param(ir, ir_opds(ir, op)[0]);
    k->devices.remote[p / 8] |= (uint8_t)(1u << (p % 8));
  }
  k->devices.known = true;
}

bool api_dist_collective(mgpu_kernel *k) {
  summarise(k);
  return k->devices.collective;
}

/* The first op that views parameter p on other devices (multimem only, when
** mm), for messages. */
static const ir_op *peer_op(const ir_kernel *ir, int64_t p, bool mm) {
  for (uint32_t i = 0; i < ir->ops.n; i++) {
    const ir_op *op = &ir->ops.v[i];
    if (!views_peers(op->code) || (mm && op->code == IR_remote)) continue;
    if (p < 0 || root_param(ir, ir_opds(ir, op)[0]) == p) return op;
  }
  mgpu_unreachable();
}

mgpu_status api_dist_multicast(mgpu_kernel *k) {
  summarise(k);
  if (!k->devices.multimem) return MGPU_OK;
  const ir_kernel *ir = k->ir;
  const ir_op *op = peer_op(ir, -1, true);
  char msg[400];
  snprintf(msg, sizeof msg, "%s at %s needs NVLink multicast, which is off here (NVSHMEM_DISABLE_NVLS=1: mgpu never "
           "creates multicast objects); store to or load from each device with ref:on_device(d), or run it simulated "
           "(mgpu -n N --interpret)", op->code == IR_multimem_store ? "multimem_store" : "multimem_load_reduce", ir_loc(ir, op));
  return diag_set(&k->ctx->d, ERR_LAUNCH_ARG, "", ir->name, msg);
}

mgpu_status api_dist_check_args(mgpu_kernel *k, const mgpu_launch_args *a) {
  summarise(k);
  const ir_kernel *ir = k->ir;
  for (uint32_t p = 0; p < ir->params.n; p++) {
    if (!(k->devices.remote[p / 8] >> (p % 8) & 1) || a->args[p].buffer->sym >= 0) continue;
    char msg[300];
    snprintf(msg, sizeof msg, "argument %u is used on other devices (on_device at %s) but is not a symmetric array: "
             "make it with mgpu.symmetric", p + 1, ir_loc(ir, peer_op(ir, p, false)));
    return diag_set(&k->ctx->d, ERR_LAUNCH_ARG, "", ir->name, msg);
  }
  return MGPU_OK;
}

int64_t api_dist_delta(const mgpu_ctx *ctx, int d) {
  return ctx->dist && d >= 0 && d < ctx->dist->count ? ctx->dist->delta[d] : 0;
}

/* -- NVSHMEM ------------------------------------------------------------------------------- */

mgpu_status mgpu_dist_uniqueid(uint8_t *out, int32_t nbytes) {
  char why[300];
  if (!out || nbytes < SHMEM_UID_BYTES) return MGPU_ERR_ARG;
  const shmem *s = shmem_load(why, sizeof why);
  if (!s) return MGPU_ERR_STATE;
  return shmem_uniqueid(s, out) ? MGPU_OK : MGPU_ERR_STATE;
}

mgpu_status mgpu_dist_init(mgpu_ctx *ctx, int32_t rank, int32_t count, const uint8_t *uid, int32_t nbytes) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  char why[512] = "";
  const shmem *s = NULL;
  if (ctx->dist) snprintf(why, sizeof why, "mgpu_dist_init: the context is already device %d of a job", ctx->dist->rank);
  else if (!api_gpu(ctx)) snprintf(why, sizeof why, "mgpu_dist_init: NVSHMEM jobs run on GPUs (use a world to simulate devices)");
  else if (count < 1 || count > MAX_DEVICES || rank < 0 || rank >= count)
    snprintf(why, sizeof why, "mgpu_dist_init: rank %d of %d devices is not valid (1..%d devices)", rank, count, MAX_DEVICES);
  else if (!uid || nbytes != SHMEM_UID_BYTES) snprintf(why, sizeof why, "mgpu_dist_init: the unique id must be %d bytes", SHMEM_UID_BYTES);
  else if (!(s = shmem_load(why, sizeof why))) {}
  else if (ctx->drv->CtxSetCurrent(ctx->drv->ctx) != CUDA_SUCCESS) snprintf(why, sizeof why, "cannot make the context current");
  else if (!shmem_init(s, rank, count, uid, why, sizeof why)) {}
  mgpu_status st = *why ? diag_set(&ctx->d, ERR_STATE, "", why) : dist_new(ctx, rank, count);
  if (!st) {
    ctx->dist->shm = s;
    void *probe = s->malloc(256);   /* the heap maps at one offset per device */
    if (!probe) st = diag_set(&ctx->d, ERR_STATE, "", "nvshmem_malloc failed: the symmetric heap is too small (NVSHMEM_SYMMETRIC_SIZE)");
    for (int d = 0; d < count && !st; d++) {
      void *q = s->ptr(probe, d);
      if (!q) {
        snprintf(why, sizeof why, "device %d cannot reach device %d with loads and stores (no NVLink or peer access)", rank, d);
        st = diag_set(&ctx->d, ERR_STATE, "", why);
      }
      ctx->dist->delta[d] = (int64_t)((uintptr_t)q - (uintptr_t)probe);
    }
    if (!st) st = write_table(ctx);
  }
  api_leave(ctx);
  return st;
}

mgpu_status mgpu_dist_rendezvous(mgpu_ctx *ctx, const char *rendezvous, const char *key, int32_t rank, int32_t count,
                                 int32_t timeout_ms, uint8_t *uid, int32_t nbytes) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!rendezvous || !key || !uid) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_dist_rendezvous(rendezvous, key, uid)");
  if (nbytes != SHMEM_UID_BYTES) {
    char msg[100];
    snprintf(msg, sizeof msg, "mgpu_dist_rendezvous: the unique id must be %d bytes", SHMEM_UID_BYTES);
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  char why[1200];
  bool ok = rdzv_exchange(rendezvous, key, rank, count, timeout_ms, uid, SHMEM_UID_BYTES, why, sizeof why);
  mgpu_status s = ok ? MGPU_OK : diag_set(&ctx->d, ERR_STATE, "", why);
  api_leave(ctx);
  return s;
}

mgpu_status mgpu_dist_info(mgpu_ctx *ctx, int32_t *rank, int32_t *count) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!rank || !count) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_dist_info(rank, count)");
  *rank = ctx->dist ? ctx->dist->rank : 0;
  *count = ctx->dist ? ctx->dist->count : 1;
  return MGPU_OK;
}

mgpu_status mgpu_dist_barrier(mgpu_ctx *ctx) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  if (ctx->dist && ctx->dist->world) s = rendezvous(ctx, RV_BARRIER, NULL, NULL);
  else if (ctx->dist && ctx->dist->shm) {
    CUresult r = ctx->drv->CtxSynchronize();
    if (r) s = api_drv_fail(ctx, "cuCtxSynchronize", r);
    else ctx->dist->shm->barrier_all();
  }
  api_leave(ctx);
  return s;
}

/* A simulated device's record of its symmetric arrays grows by one. */
static mgpu_status note_symmetric(mgpu_ctx *ctx, uint64_t nbytes, const char *name) {
  dist *d = ctx->dist;
  if (!d || !d->world) return MGPU_OK;
  if (!vec_reserve(&ctx->alloc, &d->syms, 1)) return diag_set(&ctx->d, ERR_NOMEM, "");
  sym_rec *r = &d->syms.v[d->syms.n++];
  r->nbytes = nbytes;
  if (name && *name) snprintf(r->name, sizeof r->name, "%s", name);
  else snprintf(r->name, sizeof r->name, "an array of %llu bytes", (unsigned long long)nbytes);
  return MGPU_OK;
}

mgpu_status mgpu_symmetric_alloc(mgpu_ctx *ctx, uint64_t nbytes, mgpu_buffer **out) {
  return mgpu_symmetric_alloc_named(ctx, nbytes, NULL, out);
}

mgpu_status mgpu_symmetric_alloc_named(mgpu_ctx *ctx, uint64_t nbytes, const char *name, mgpu_buffer **out) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_symmetric_alloc(out)");
  *out = NULL;
  dist *d = ctx->dist;
  if (!d || !d->shm) {             /* no job, or a simulated one: plain memory, numbered */
    mgpu_status s = mgpu_buffer_alloc(ctx, nbytes, out);
    if (!s && nbytes) s = mgpu_buffer_fill(*out, &(mgpu_fill){ MGPU_FILL_VALUE, MGPU_U8, nbytes, 0, 0, 0 });
    if (!s && api_enter(ctx)) {
      s = note_symmetric(ctx, nbytes, name);
      api_leave(ctx);
    }
    if (!s) (*out)->sym = ctx->nsym++;
    else if (*out) mgpu_buffer_release(*out), *out = NULL;
    return s;
  }
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  char why[300];
  void *p = d->shm->malloc(nbytes ? (size_t)nbytes : 16);
  if (!p) {
    snprintf(why, sizeof why, "nvshmem_malloc of %llu bytes failed: the symmetric heap is too small (raise NVSHMEM_SYMMETRIC_SIZE)",
             (unsigned long long)nbytes);
    s = diag_set(&ctx->d, ERR_STATE, "", why);
  }
  for (int i = 0; i < d->count && !s; i++)
    if ((int64_t)((uintptr_t)d->shm->ptr(p, i) - (uintptr_t)p) != d->delta[i]) {
      snprintf(why, sizeof why, "the symmetric heap of device %d is not mapped at one offset", i);
      s = diag_set(&ctx->d, ERR_STATE, "", why);
    }
  if (!s) s = api_buffer_new(ctx, nbytes, (uint64_t)(uintptr_t)p, false, out);   /* freed with the heap */
  if (!s && nbytes) {
    CUresult r = ctx->drv->MemsetD8((CUdeviceptr)(uintptr_t)p, 0, (size_t)nbytes);
    if (!r) r = ctx->drv->CtxSynchronize();
    if (r) s = api_drv_fail(ctx, "cuMemsetD8", r);
  }
  if (!s) {
    d->shm->barrier_all();         /* zeroed everywhere before any device writes into it */
    (*out)->sym = ctx->nsym++;
  }
  api_leave(ctx);
  return s;
}

int32_t mgpu_buffer_symmetric(const mgpu_buffer *buf) {
  return buf && buf->magic == MAGIC_BUF ? buf->sym : -1;
}

mgpu_status mgpu_dist_table(mgpu_ctx *ctx, mgpu_buffer **out) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_dist_table(out)");
  if (!ctx->dist) return diag_set(&ctx->d, ERR_STATE, "", "mgpu_dist_table: the context is no device of a job");
  return mgpu_buffer_wrap(ctx, ctx->dist->table->addr, ctx->dist->table->size, out);   /* a view that keeps ctx alive */
}
