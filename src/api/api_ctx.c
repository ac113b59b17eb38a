/*
** api_ctx.c -- contexts: creation and mode choice, device query, the
** thread guard, errors, synchronisation and timing.
*/
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"

static _Thread_local const mgpu_ctx *refused;   /* context this thread was turned away from */
static _Thread_local char no_ctx_msg[512];       /* why the last mgpu_ctx_create on this thread failed */

int32_t mgpu_abi_version(void) { return MGPU_ABI_VERSION; }
const char *mgpu_version(void) { return MGPU_VERSION_STRING; }
void mgpu_interrupt(int32_t on) { interp_interrupt(on != 0); }
const char *mgpu_dtype_name(int32_t dtype) { return dt_valid(dtype) ? dt_name(dtype) : NULL; }
int32_t mgpu_dtype_size(int32_t dtype) { return dt_valid(dtype) ? dt_bytes(dtype) : 0; }
int32_t mgpu_dtype_from_name(const char *name) { return dt_lookup(name); }

bool api_enter(mgpu_ctx *c) {
  if (atomic_flag_test_and_set(&c->busy)) { refused = c; return false; }
  refused = NULL;
  diag_clear(&c->d);
  if (c->drv) drv_bind(c->drv);
  return true;
}

void api_leave(mgpu_ctx *c) { atomic_flag_clear(&c->busy); }
void api_ref(mgpu_ctx *c) { c->refs++; }
bool api_gpu(const mgpu_ctx *c) { return c->info.mode == MGPU_MODE_GPU; }

/* -- Faults and the watchdog ---------------------------------------------------------- */

/* Mark the context lost for the reason fmt says (kept for every later call). */
static mgpu_status MGPU_PRINTF(2, 3) lose(mgpu_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->run.why, sizeof c->run.why, fmt, ap);
  va_end(ap);
  c->run.lost = true;
  c->run.in_flight = false;
  return diag_set(&c->d, ERR_LOST, "", c->run.why);
}

mgpu_status api_drv_fail(mgpu_ctx *c, const char *what, CUresult r) {
  if (!drv_fatal(r)) return drv_fail(c->drv, &c->d, what, r);
  return lose(c, "kernel '%s' faulted: %s (CUDA error %d, reported by %s)", c->run.kernel[0] ? c->run.kernel : "?",
              drv_errstr(c->drv, r), (int)r, what);
}

/* Sleep about a millisecond. */
static void nap(void) {
  struct timespec ts = { 0, 1000000 };
  while (nanosleep(&ts, &ts) && errno == EINTR) {}
}

mgpu_status api_usable(mgpu_ctx *c) {
  return api_gpu(c) && c->run.lost ? diag_set(&c->d, ERR_LOST, "", c->run.why) : MGPU_OK;
}

mgpu_status api_ready(mgpu_ctx *c) {
  mgpu_status s = api_usable(c);
  if (s || !api_gpu(c)) return s;
  while (c->run.in_flight) {
    CUresult r = c->drv->EventQuery(c->run.done);
    if (r == CUDA_SUCCESS) c->run.in_flight = false;
    else if (r != CUDA_ERROR_NOT_READY) return api_drv_fail(c, "cuEventQuery", r);
    else if (time_ms() - c->run.launched_ms > (double)c->run.timeout_ms)
      return lose(c, "kernel '%s' was still running %lld ms after its launch (the timeout: MGPU_TIMEOUT_MS or "
                  "mgpu.configure{ timeout_ms })", c->run.kernel, (long long)c->run.timeout_ms);
    else nap();
  }
  return MGPU_OK;
}

mgpu_status api_launched(mgpu_ctx *c, const char *name, CUstream stream) {
  snprintf(c->run.kernel, sizeof c->run.kernel, "%s", name);
  c->run.launched_ms = time_ms();
  if (!c->run.timeout_ms) return MGPU_OK;
  CUresult r = c->run.done ? CUDA_SUCCESS : c->drv->EventCreate(&c->run.done, CU_EVENT_DEFAULT);
  if (!r) r = c->drv->EventRecord(c->run.done, stream);
  if (r) return api_drv_fail(c, "cuEventRecord", r);
  c->run.in_flight = true;
  return MGPU_OK;
}

mgpu_status mgpu_ctx_set_timeout(mgpu_ctx *ctx, int64_t ms) {
  API_CHECK(ctx, MAGIC_CTX);
  if (ms < 0) return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_ctx_set_timeout: ms must be 0 (no timeout) or positive");
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = ms ? MGPU_OK : api_ready(ctx);   /* what is in flight is waited for under the old bound */
  if (!s) ctx->run.timeout_ms = ms;
  api_leave(ctx);
  return s;
}

int32_t mgpu_ctx_lost(const mgpu_ctx *ctx) { return ctx && ctx->magic == MAGIC_CTX && ctx->run.lost; }

mgpu_status mgpu_ctx_recover(mgpu_ctx *ctx) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!ctx->run.lost) return MGPU_OK;
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  const char *step = "";
  CUresult r = CUDA_SUCCESS;
  if (ctx->dist) {
    s = diag_set(&ctx->d, ERR_STATE, "", "mgpu_ctx_recover: a device of a multi-device job cannot be recovered alone");
  } else if ((r = drv_reset(ctx->drv, &step)) != CUDA_SUCCESS) {
    char why[256];
    snprintf(why, sizeof why, "mgpu_ctx_recover: the driver could not make a fresh GPU context (%s: %s, CUDA error %d); "
             "this process cannot use the GPU again: restart it", step, drv_errstr(ctx->drv, r), (int)r);
    s = diag_set(&ctx->d, ERR_STATE, "", why);
  } else {
    /* handles made in the old context are gone with it: forget them without freeing */
    ctx->ev[0] = ctx->ev[1] = ctx->run.done = NULL;
    ctx->blas = NULL;
    ctx->run.lost = ctx->run.in_flight = false;
    ctx->run.gen++;
  }
  api_leave(ctx);
  return s;
}

static void ctx_destroy(mgpu_ctx *c) {
  api_dist_close(c);
  api_dlpack_close(c);
  if (c->drv) {
    for (int i = 0; i < 2; i++) if (c->ev[i]) c->drv->EventDestroy(c->ev[i]);
    if (c->run.done) c->drv->EventDestroy(c->run.done);
    api_blas_close(c);
    drv_close(&c->alloc, c->drv);
  }
  mem_alloc a = c->alloc;
  c->magic = 0;
  mem_free(&a, c, sizeof *c);
}

void api_unref(mgpu_ctx *c) {
  if (--c->refs == 0) ctx_destroy(c);
}

mgpu_status mgpu_ctx_create(const mgpu_ctx_options *opts, mgpu_ctx **out) {
  if (!out) { snprintf(no_ctx_msg, sizeof no_ctx_msg, "mgpu_ctx_create: out must not be NULL"); return MGPU_ERR_ARG; }
  *out = NULL;
  mem_alloc a;
  mem_alloc_default(&a);
  int mode = MGPU_MODE_AUTO, device = 0;
  if (opts) {
    if (opts->alloc) { a.fn = opts->alloc; a.ud = opts->alloc_ud; }
    mode = opts->mode;
    device = opts->device;
  }
  if (mode < MGPU_MODE_AUTO || mode > MGPU_MODE_COMPILE_ONLY) {
    snprintf(no_ctx_msg, sizeof no_ctx_msg, "mgpu_ctx_create: mode %d is not an mgpu_mode", mode);
    return MGPU_ERR_ARG;
  }
  mgpu_ctx *c = mem_calloc(&a, sizeof *c);
  if (!c) { snprintf(no_ctx_msg, sizeof no_ctx_msg, "out of memory"); return MGPU_ERR_NOMEM; }
  c->magic = MAGIC_CTX;
  c->alloc = a;
  c->refs = 1;
  atomic_flag_clear(&c->busy);
  c->info.smem_per_block = 232448;   /* 227 KiB: the sm_90 opt-in limit */
  c->info.sm_count = 132;            /* without a GPU: the H100 SXM the PTX targets (persistent grids) */
  c->info.device = device;
  const char *tmo = getenv("MGPU_TIMEOUT_MS");
  if (tmo && *tmo) {
    char *end;
    long long ms = strtoll(tmo, &end, 10);
    if (*end || ms < 0) {
      snprintf(no_ctx_msg, sizeof no_ctx_msg, "MGPU_TIMEOUT_MS must be a whole number of milliseconds, got '%s'", tmo);
      mem_free(&a, c, sizeof *c);
      return MGPU_ERR_ARG;
    }
    c->run.timeout_ms = ms;
  }
  const char *tgt = getenv("MGPU_TARGET");
  if (tgt && *tgt) {
    c->info.target = !strcmp(tgt, "sm_90a") ? MGPU_TARGET_SM90A : !strcmp(tgt, "sm_100a") ? MGPU_TARGET_SM100A : 0;
    if (!c->info.target) {
      snprintf(no_ctx_msg, sizeof no_ctx_msg, "MGPU_TARGET must be sm_90a or sm_100a, got '%s'", tgt);
      mem_free(&a, c, sizeof *c);
      return MGPU_ERR_ARG;
    }
  }
  const char *pdl = getenv("MGPU_PDL");
  c->serial_launch = pdl && !strcmp(pdl, "0");
  const char *env = getenv("MGPU_INTERPRET");
  if (mode == MGPU_MODE_AUTO && env && *env && strcmp(env, "0") != 0) {
    mode = MGPU_MODE_INTERPRET;
    snprintf(c->info.reason, sizeof c->info.reason, "MGPU_INTERPRET is set");
  }
  if (mode == MGPU_MODE_AUTO || mode == MGPU_MODE_GPU) {
    c->drv = drv_open(&c->alloc, device, c->info.reason, sizeof c->info.reason);
    if (c->drv) {
      mode = MGPU_MODE_GPU;
      drv_query(c->drv, &c->info);
      c->info.reason[0] = 0;
      if (c->info.cc_major < 9) {
        snprintf(c->info.reason, sizeof c->info.reason, "GPU %s has compute capability %d.%d; mgpu needs sm_90 (Hopper)",
                 c->info.name, c->info.cc_major, c->info.cc_minor);
        drv_close(&c->alloc, c->drv);
        c->drv = NULL;
      }
    }
    if (!c->drv) {
      if (mode == MGPU_MODE_GPU) {
        snprintf(no_ctx_msg, sizeof no_ctx_msg, "no GPU: %s", c->info.reason);
        ctx_destroy(c);
        return MGPU_ERR_NO_DEVICE;
      }
      mode = MGPU_MODE_INTERPRET;
    }
  }
  c->info.mode = mode;
  if (!c->info.target)   /* the device's architecture: Blackwell (10.x) or Hopper */
    c->info.target = mode == MGPU_MODE_GPU && c->info.cc_major == 10 ? MGPU_TARGET_SM100A : MGPU_TARGET_SM90A;
  *out = c;
  return MGPU_OK;
}

void mgpu_ctx_retain(mgpu_ctx *ctx) {
  if (ctx && ctx->magic == MAGIC_CTX) api_ref(ctx);
}

mgpu_status mgpu_ctx_allocator(mgpu_ctx *ctx, mgpu_alloc_fn *fn, void **ud) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!fn || !ud) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_ctx_allocator(fn, ud)");
  *fn = ctx->alloc.fn;
  *ud = ctx->alloc.ud;
  return MGPU_OK;
}

mgpu_status mgpu_ctx_fail(mgpu_ctx *ctx, mgpu_status status, const char *msg) {
  API_CHECK(ctx, MAGIC_CTX);
  if (status > 0) status = MGPU_ERR_ARG;
  snprintf(ctx->d.msg, sizeof ctx->d.msg, "%s", status && msg ? msg : "");
  ctx->d.status = status;
  return status;
}

void mgpu_ctx_release(mgpu_ctx *ctx) {
  if (!ctx || ctx->magic != MAGIC_CTX) return;
  api_unref(ctx);
}

const char *mgpu_errmsg(const mgpu_ctx *ctx) {
  if (!ctx) return no_ctx_msg[0] ? no_ctx_msg : "no context (NULL handle)";
  if (ctx->magic != MAGIC_CTX) return "invalid context handle";
  if (refused == ctx) return "context is in use by another thread (use one thread at a time per context)";
  return ctx->d.msg;
}

mgpu_status mgpu_device_query(mgpu_ctx *ctx, mgpu_device_info *out) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_device_query(out)");
  *out = ctx->info;
  return MGPU_OK;
}

mgpu_status mgpu_synchronize(mgpu_ctx *ctx) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  if (ctx->drv && !(s = api_ready(ctx))) {
    CUresult r = ctx->drv->CtxSynchronize();
    if (r) s = api_drv_fail(ctx, "cuCtxSynchronize", r);
  }
  api_leave(ctx);
  return s;
}

mgpu_status mgpu_empty_cache(mgpu_ctx *ctx) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  if (ctx->drv && api_gpu(ctx) && !(s = api_ready(ctx))) {
    CUresult r = drv_trim(ctx->drv);
    if (r) s = api_drv_fail(ctx, "cuMemPoolTrimTo", r);
  }
  api_leave(ctx);
  return s;
}

mgpu_status mgpu_timer_start(mgpu_ctx *ctx) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  if (ctx->drv && !(s = api_ready(ctx))) {
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < 2 && !r; i++) if (!ctx->ev[i]) r = ctx->drv->EventCreate(&ctx->ev[i], CU_EVENT_DEFAULT);
    if (!r) r = ctx->drv->EventRecord(ctx->ev[0], NULL);
    if (r) s = api_drv_fail(ctx, "cuEventRecord", r);
  } else if (!ctx->drv) {
    ctx->timer_start = time_ms();
  }
  api_leave(ctx);
  return s;
}

mgpu_status mgpu_timer_stop(mgpu_ctx *ctx, double *ms) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!ms) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_timer_stop(ms)");
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  if (ctx->drv) {
    float f = 0;
    CUresult r = ctx->ev[0] ? CUDA_SUCCESS : 1;
    if (r) s = diag_set(&ctx->d, ERR_STATE, "", "mgpu_timer_stop without mgpu_timer_start");
    else if (!(s = api_ready(ctx)) &&
             ((r = ctx->drv->EventRecord(ctx->ev[1], NULL)) || (r = ctx->drv->EventSynchronize(ctx->ev[1])) ||
              (r = ctx->drv->EventElapsedTime(&f, ctx->ev[0], ctx->ev[1]))))
      s = api_drv_fail(ctx, "timing with CUDA events", r);
    *ms = f;
  } else {
    *ms = time_ms() - ctx->timer_start;
  }
  api_leave(ctx);
  return s;
}
