/*
** api_kernel.c -- tracing (builders), finishing, compiling and launching
** kernels, on the GPU or in the interpreter.
*/
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ptx/ptx.h"
#include "../runtime/cache.h"
#include "api.h"
#include "engine_id.h"   /* generated: cmake/engine_id.cmake */

/* (here, beside the cache key, so that a new id recompiles this file only) */
const char *mgpu_engine_id(void) { return MGPU_ENGINE_ID; }

/* -- Builders ----------------------------------------------------------------------------- */

/* The CUDA grid the kernel launches with (ir_grid_dims times the cluster) must fit the
** hardware limits: 2^31-1 blocks along x (the last grid axis), 65535 along y (the one
** before) and z (every earlier axis, folded). */
static mgpu_status check_launch_grid(mgpu_ctx *ctx, const mgpu_kernel_options *o) {
  int64_t dims[3] = { 1, 1, 1 };
  for (int i = 0; i < o->grid_rank; i++) {      /* product in int64 without overflow */
    int hw = ir_grid_hw(o, i);   /* not ir_grid_map: its divisors may overflow on grids too large */
    dims[hw] = dims[hw] > INT64_MAX / o->grid[i] ? INT64_MAX : dims[hw] * o->grid[i];
  }
  static const char hw[3] = { 'x', 'y', 'z' };
  for (int h = 0; h < 3; h++) {
    int64_t c = h < o->cluster_rank ? o->cluster[h] : 1;
    int64_t n = dims[h] > INT64_MAX / c ? INT64_MAX : dims[h] * c;
    int64_t lim = h == 0 ? INT32_MAX : 65535;
    if (n <= lim) continue;
    char axes[96] = "", grid[160] = "", msg[512];
    size_t an = 0, gn = 0;
    int nax = 0;
    for (int i = 0; i < o->grid_rank; i++) {
      gn += (size_t)snprintf(grid + gn, sizeof grid - gn, i ? ", %d" : "%d", o->grid[i]);
      if (gn >= sizeof grid) gn = sizeof grid - 1;
      if (ir_grid_hw(o, i) != h) continue;
      an += (size_t)snprintf(axes + an, sizeof axes - an, nax++ ? ", %d" : "%d", i);
      if (an >= sizeof axes) an = sizeof axes - 1;
    }
    snprintf(msg, sizeof msg,
             "grid (%s) does not fit CUDA's launch grid: %s %s %s CUDA's %c dimension, %lld blocks%s (at most %lld); %s",
             grid, nax > 1 ? "axes" : "axis", axes, nax > 1 ? "fold into" : "runs along", hw[h], (long long)n,
             c > 1 ? " counting the cluster" : "", (long long)lim,
             h == 0 ? "split the last axis"
                    : "put the large axes last (the last axis takes up to 2^31-1 blocks) or loop inside the kernel "
                      "(mgpu.nd_loop)");
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  return MGPU_OK;
}

static mgpu_status check_options(mgpu_ctx *ctx, const mgpu_kernel_options *o) {
  const char *nm = o->name ? o->name : "kernel";
  if (!(isalpha((unsigned char)nm[0]) || nm[0] == '_'))
    return diag_set(&ctx->d, ERR_BAD_ARG, "", "kernel name must start with a letter or '_'");
  for (const char *p = nm; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_'))
      return diag_set(&ctx->d, ERR_BAD_ARG, "", "kernel name may contain only letters, digits and '_'");
  if (strlen(nm) > 100) return diag_set(&ctx->d, ERR_BAD_ARG, "", "kernel name is longer than 100 characters");
  if (o->grid_rank < 0 || o->grid_rank > 8)
    return diag_set(&ctx->d, ERR_BAD_ARG, "", "grid must have at most 8 dimensions");
  for (int i = 0; i < o->grid_rank; i++) {
    if (o->grid[i] < 1) {
      char msg[128];
      snprintf(msg, sizeof msg, "grid[%d] = %d: must be at least 1", i + 1, o->grid[i]);
      return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
    }
  }
  if (o->num_threads < 1 || o->num_threads > 8) {
    char msg[192];
    snprintf(msg, sizeof msg, "num_threads (warpgroups per block) must be between 1 and 8, got %d (a block has at most "
             "1024 threads, 128 per warpgroup)", o->num_threads);
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  if (o->target != MGPU_TARGET_DEFAULT && o->target != MGPU_TARGET_SM90A && o->target != MGPU_TARGET_SM100A) {
    char msg[128];
    snprintf(msg, sizeof msg, "target %d is not an mgpu_target (90: sm_90a, 100: sm_100a)", o->target);
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  if (o->cluster_rank < 0 || o->cluster_rank > 3)
    return diag_set(&ctx->d, ERR_BAD_ARG, "", "cluster must have at most 3 dimensions");
  int64_t blocks = 1;
  for (int i = 0; i < o->cluster_rank; i++) {
    if (o->cluster[i] < 1) return diag_set(&ctx->d, ERR_BAD_ARG, "", "every cluster dimension must be at least 1");
    blocks *= o->cluster[i];
  }
  if (blocks > 8) {
    char msg[128];
    snprintf(msg, sizeof msg, "a cluster may hold at most 8 blocks (the portable cluster size), got %lld", (long long)blocks);
    return diag_set(&ctx->d, ERR_BAD_ARG, "", msg);
  }
  return check_launch_grid(ctx, o);
}

mgpu_status mgpu_builder_create(mgpu_ctx *ctx, const mgpu_kernel_options *opts, mgpu_builder **out) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!opts || !out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_builder_create(opts, out)");
  *out = NULL;
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = check_options(ctx, opts);
  mgpu_builder *b = NULL;
  if (!s) {
    mgpu_kernel_options o = *opts;
    if (!o.target) o.target = ctx->info.target;
    b = mem_calloc(&ctx->alloc, sizeof *b);
    if (b) b->b = irb_new(&ctx->alloc, &o, &ctx->d);
    if (!b || !b->b) {
      mem_free(&ctx->alloc, b, sizeof *b);
      s = diag_set(&ctx->d, ERR_NOMEM, "");
    } else {
      b->magic = MAGIC_BLD;
      b->ctx = ctx;
      api_ref(ctx);
      *out = b;
    }
  }
  api_leave(ctx);
  return s;
}

void mgpu_builder_release(mgpu_builder *b) {
  if (!b || b->magic != MAGIC_BLD) return;
  mgpu_ctx *ctx = b->ctx;
  irb_free(b->b);
  b->magic = 0;
  mem_free(&ctx->alloc, b, sizeof *b);
  api_unref(ctx);
}

#define BLD_ENTER(b) \
  API_CHECK(b, MAGIC_BLD); \
  if (!api_enter((b)->ctx)) return MGPU_ERR_THREAD

mgpu_status mgpu_builder_set_loc(mgpu_builder *b, const char *loc) {
  BLD_ENTER(b);
  mgpu_status s = irb_set_loc(b->b, loc);
  api_leave(b->ctx);
  return s;
}

mgpu_status mgpu_builder_param(mgpu_builder *b, int32_t role, int32_t dtype, const int64_t *shape, int32_t rank,
                               int32_t *out_value) {
  BLD_ENTER(b);
  mgpu_status s;
  uint32_t v = 0;
  if (!out_value || (rank > 0 && !shape)) s = diag_set(&b->ctx->d, ERR_NULL_ARG, "", "mgpu_builder_param(shape, out_value)");
  else s = irb_param(b->b, role, dtype, shape, rank, &v);
  if (!s) *out_value = (int32_t)v;
  api_leave(b->ctx);
  return s;
}

mgpu_status mgpu_builder_op(mgpu_builder *b, const char *op, const mgpu_op_args *args, int32_t *results,
                            int32_t max_results, int32_t *nresults) {
  BLD_ENTER(b);
  mgpu_status s = MGPU_OK;
  uint32_t res[IR_MAXRES + 1], nres = 0;
  if (!op || !nresults || (max_results > 0 && !results))
    s = diag_set(&b->ctx->d, ERR_NULL_ARG, "", "mgpu_builder_op(op, results, nresults)");
  else if (args && (args->noperands < 0 || args->nints < 0 || (args->noperands && !args->operands) ||
                    (args->nints && !args->ints)))
    s = diag_set(&b->ctx->d, ERR_BAD_ARG, "", "mgpu_builder_op: operand or attribute counts do not match their arrays");
  else if (args && args->noperands > 4096)
    s = diag_set(&b->ctx->d, ERR_BAD_ARG, "", "mgpu_builder_op: more than 4096 operands");
  if (!s) {
    mgpu_op_args none = { 0 };
    if (!args) args = &none;
    s = irb_op(b->b, op, (const uint32_t *)args->operands, (uint32_t)args->noperands, args->ints,
               (uint32_t)args->nints, args->number, args->text, res, IR_MAXRES + 1, &nres);
  }
  if (!s) {
    if ((int32_t)nres > max_results) {
      s = diag_set(&b->ctx->d, ERR_RESULTS, "", op, (int)nres, (int)max_results);
    } else {
      for (uint32_t i = 0; i < nres; i++) results[i] = (int32_t)res[i];
      *nresults = (int32_t)nres;
    }
  }
  api_leave(b->ctx);
  return s;
}

mgpu_status mgpu_builder_value(mgpu_builder *b, int32_t value, mgpu_value_info *out) {
  BLD_ENTER(b);
  mgpu_status s = MGPU_OK;
  const ir_kernel *k = b->b->k;
  if (!out) s = diag_set(&b->ctx->d, ERR_NULL_ARG, "", "mgpu_builder_value(out)");
  else if (!k) s = diag_set(&b->ctx->d, ERR_FINISHED, "");
  else if (value <= 0 || (uint32_t)value >= k->vals.n) s = diag_set(&b->ctx->d, ERR_BAD_VALUE, "", "mgpu_builder_value", value);
  else {
    const ir_type *t = ir_vtype(k, (uint32_t)value);
    memset(out, 0, sizeof *out);
    out->kind = t->kind;
    out->dtype = t->dtype;
    out->space = t->space;
    out->rank = t->rank;
    for (int i = 0; i < t->rank; i++) out->shape[i] = t->shape[i];
  }
  api_leave(b->ctx);
  return s;
}

/* -- Kernels ---------------------------------------------------------------------------------- */

static void kernel_free(mgpu_kernel *k) {
  mgpu_ctx *ctx = k->ctx;
  if (k->mod && k->mod_gen == ctx->run.gen && !ctx->run.lost) ctx->drv->ModuleUnload(k->mod);
  if (k->ir) {
    pass_free(k->ir, &k->ki);
    ir_kernel_free(k->ir);
  }
  if (k->ir_text) mem_free(&ctx->alloc, k->ir_text, k->ir_len + 1);
  if (k->ptx) mem_free(&ctx->alloc, k->ptx, k->ptx_len + 1);
  if (k->ptx_override) mem_free(&ctx->alloc, k->ptx_override, k->ptx_override_len + 1);
  vec_free(&ctx->alloc, &k->tmaps);
  k->magic = 0;
  mem_free(&ctx->alloc, k, sizeof *k);
}

mgpu_status mgpu_builder_finish(mgpu_builder *b, mgpu_kernel **out) {
  BLD_ENTER(b);
  mgpu_ctx *ctx = b->ctx;
  mgpu_status s = MGPU_OK;
  mgpu_kernel *k = NULL;
  if (!out) s = diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_builder_finish(out)");
  else *out = NULL;
  if (!s && !(k = mem_calloc(&ctx->alloc, sizeof *k))) s = diag_set(&ctx->d, ERR_NOMEM, "");
  if (!s) {
    k->ctx = ctx;
    double t0 = time_ms();
    s = irb_finish(b->b, &k->ir);
    if (!s) s = pass_run(k->ir, &k->ki, ctx->info.smem_per_block, &ctx->d);
    if (!s) {
      strbuf sb;
      sb_init(&sb, &ctx->alloc);
      ir_print(k->ir, &sb, false);
      k->ir_text = sb_take(&sb, &k->ir_len);
      if (!k->ir_text) { sb_free(&sb); s = diag_set(&ctx->d, ERR_NOMEM, ""); }
    }
    k->res.compile_ms = time_ms() - t0;
    if (k->ir) k->res.threads = 128 * k->ir->opts.num_threads;
    k->res.smem_bytes = (int32_t)k->ki.smem_bytes;
  }
  if (s) {
    if (k) kernel_free(k);
  } else {
    k->magic = MAGIC_KER;
    k->refs = 1;
    api_ref(ctx);
    *out = k;
  }
  api_leave(ctx);
  return s;
}

void mgpu_kernel_retain(mgpu_kernel *k) {
  if (k && k->magic == MAGIC_KER) k->refs++;
}

void mgpu_kernel_release(mgpu_kernel *k) {
  if (!k || k->magic != MAGIC_KER || --k->refs > 0) return;
  mgpu_ctx *ctx = k->ctx;
  if (k->mod) drv_bind(ctx->drv);
  kernel_free(k);
  api_unref(ctx);
}

static bool runs_interpreted(const mgpu_kernel *k) {
  return !api_gpu(k->ctx) || k->ir->opts.interpret;
}

/* -- The kernel cache (src/runtime/cache.c) ------------------------------------------------ */

/* One per process, opened from the environment on the first GPU compile; a
** spin lock because contexts on different threads may compile at once. */
static cache kcache;
static bool kcache_ready;
static atomic_flag kcache_lock = ATOMIC_FLAG_INIT;

static cache *kcache_enter(void) {
  while (atomic_flag_test_and_set_explicit(&kcache_lock, memory_order_acquire)) {}
  if (!kcache_ready) {
    cache_open_env(&kcache, stderr);
    kcache_ready = true;
  }
  return &kcache;
}

static void kcache_leave(void) { atomic_flag_clear_explicit(&kcache_lock, memory_order_release); }

const char *mgpu_kernel_cache_dir(void) {
  cache *c = kcache_enter();
  const char *dir = c->enabled ? c->dir : NULL;   /* the directory never changes once opened */
  kcache_leave();
  return dir;
}

/* The key: everything the module and its launches depend on, whole -- the
** canonical IR text (every kernel option included; the PTX and its tensor
** maps are functions of it and the engine), the target and the device's
** architecture, every JIT option with its value (log buffers are addresses,
** so they count by size only), the engine's version and build id (a hash of
** its sources: a change to the lowering misses every older entry) and the
** driver version. */
static cache_key kernel_cache_key(const mgpu_kernel *k, const int *keys, void *const *vals, unsigned nopt) {
  const mgpu_ctx *ctx = k->ctx;
  uint64_t opts[2 * 16] = { 0 };
  for (unsigned i = 0; i < nopt && i < 16; i++) {
    bool buffer = keys[i] == CU_JIT_INFO_LOG_BUFFER || keys[i] == CU_JIT_ERROR_LOG_BUFFER;
    opts[2 * i] = (uint64_t)keys[i];
    opts[2 * i + 1] = buffer ? 0 : (uint64_t)(uintptr_t)vals[i];
  }
  int arch[4] = { ctx->info.cc_major, ctx->info.cc_minor, ctx->drv->driver_version, (int)sizeof(ptx_tmap) };
  static const char tag[] = "mgpu kernel cache 3 (entries hold PTX that waits with griddepcontrol): ir, target, "
                            "arch+driver, jit options, engine";
  const char *target = ir_target_name(k->ir->opts.target);
  const cache_part parts[] = {
    { tag, sizeof tag - 1 }, { k->ir_text, k->ir_len }, { target, strlen(target) }, { arch, sizeof arch },
    { opts, 2 * sizeof(uint64_t) * (nopt < 16 ? nopt : 16) }, { MGPU_VERSION_STRING, sizeof MGPU_VERSION_STRING - 1 },
    { MGPU_ENGINE_ID, sizeof MGPU_ENGINE_ID - 1 },
  };
  return cache_key_make(parts, MGPU_COUNTOF(parts));
}

/* k->ptx and k->tmaps from the IR (once). */
static mgpu_status emit_ptx(mgpu_kernel *k) {
  mgpu_ctx *ctx = k->ctx;
  if (k->ptx) return MGPU_OK;
  double t0 = time_ms();
  strbuf sb;
  sb_init(&sb, &ctx->alloc);
  k->tmaps.n = 0;
  k->ki.maxnreg = k->jit_maxreg;
  mgpu_status s = ptx_emit_kernel(k->ir, &k->ki, &sb, &k->tmaps, &ctx->d);
  if (!s) {
    k->ptx = sb_take(&sb, &k->ptx_len);
    if (!k->ptx) s = diag_set(&ctx->d, ERR_NOMEM, "");
  }
  sb_free(&sb);
  if (!s) k->res.compile_ms += time_ms() - t0;
  return s;
}

/* A cache entry: the tensor maps (a u32 count, then the records), then the
** PTX with its terminating NUL. */
static bool entry_split(mgpu_kernel *k, const unsigned char *p, size_t len, const char **ptx) {
  uint32_t n;
  if (len < sizeof n) return false;
  memcpy(&n, p, sizeof n);
  size_t head = sizeof n + (size_t)n * sizeof(ptx_tmap);
  if (n > 4096 || len <= head || p[len - 1] != '\0') return false;
  k->tmaps.n = 0;
  if (n && !vec_reserve(&k->ctx->alloc, &k->tmaps, n)) return false;
  if (n) memcpy(k->tmaps.v, p + sizeof n, (size_t)n * sizeof(ptx_tmap));   /* (no maps: tmaps.v may be NULL) */
  k->tmaps.n = n;
  *ptx = (const char *)p + head;
  return true;
}

static bool entry_store(cache *c, cache_key key, const mgpu_kernel *k) {
  uint32_t n = (uint32_t)k->tmaps.n;
  size_t head = sizeof n + (size_t)n * sizeof(ptx_tmap), plen = k->ptx_len + 1;
  unsigned char *p = malloc(head + plen);
  if (!p) return false;
  memcpy(p, &n, sizeof n);
  if (n) memcpy(p + sizeof n, k->tmaps.v, (size_t)n * sizeof(ptx_tmap));
  memcpy(p + head, k->ptx, plen);
  bool stored = cache_store(c, key, p, head + plen);
  free(p);
  return stored;
}

/* Load k->mod through the cache.  An entry holds what the IR lowers to --
** the PTX and its tensor maps -- so a hit writes no PTX; the driver JITs the
** PTX as a whole program, and its own compute cache (keyed on the PTX) keeps
** the binary, so a warm process skips the JIT too.  The cubin the driver's
** linker (cuLink*) hands back cannot be used instead: the linker compiles PTX
** as relocatable code, which ignores setmaxnreg and takes more registers
** (about twice as many for the softmax pipeline).  Returns non-zero when the caller should load the PTX itself (cache
** off, or any step failed: the plain load then reports real errors with
** their log). */
static CUresult load_cached(mgpu_kernel *k, int *keys, void **vals, unsigned nopt) {
  mgpu_ctx *ctx = k->ctx;
  drv *dr = ctx->drv;
  double t0 = time_ms();
  cache_key key = kernel_cache_key(k, keys, vals, nopt);
  void *bin = NULL;
  size_t len = 0;
  cache *c = kcache_enter();   /* held for the file work only, not the JIT */
  bool on = c->enabled, debug = c->debug;
  bool hit = on && cache_load(c, key, &bin, &len) == CACHE_HIT;
  kcache_leave();
  if (!on) return CUDA_ERROR_NO_DEVICE;
  char hex[33];
  cache_key_hex(key, hex);
  CUresult r = CUDA_ERROR_NO_DEVICE;
  const char *ptx = NULL;
  if (hit && entry_split(k, bin, len, &ptx)) {
    r = dr->ModuleLoadDataEx(&k->mod, ptx, nopt, keys, vals);
    if (r) k->mod = NULL;
    else if (debug)
      fprintf(stderr, "mgpu: cache hit %s (kernel %s, loaded in %.1f ms)\n", hex, k->ir->name, time_ms() - t0);
  }
  free(bin);
  if (r) {   /* a miss: write the PTX, JIT and load it, keep the PTX */
    if (emit_ptx(k)) return CUDA_ERROR_NO_DEVICE;   /* the caller reports it */
    t0 = time_ms();
    r = dr->ModuleLoadDataEx(&k->mod, k->ptx, nopt, keys, vals);
    if (r) k->mod = NULL;
    else {
      double jit = time_ms() - t0;
      c = kcache_enter();
      bool stored = entry_store(c, key, k);
      kcache_leave();
      if (debug)
        fprintf(stderr, "mgpu: cache miss %s (kernel %s, JIT and load %.1f ms)%s\n", hex, k->ir->name, jit,
                stored ? "; stored" : "");
    }
  }
  return r;
}

/* (On a GPU) the loaded module, through the cache, else the PTX text.
** The PTX is written when the cache cannot supply the module.  Callers
** hold the context. */
static mgpu_status compile(mgpu_kernel *k) {
  mgpu_ctx *ctx = k->ctx;
  if (k->mod && k->mod_gen != ctx->run.gen) {   /* gone with a lost context: load it again */
    k->mod = NULL;
    k->fn = NULL;
  }
  if (runs_interpreted(k)) return emit_ptx(k);   /* the interpreter reports the PTX's errors as the GPU would */
  if (k->mod) return MGPU_OK;
  mgpu_status usable = api_usable(ctx);
  if (usable) return usable;
  char info[4096] = "", err[8192] = "";
  int keys[6] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
  void *vals[6] = { info, (void *)(uintptr_t)sizeof info, err, (void *)(uintptr_t)sizeof err };
  unsigned nopt = 4;   /* CompilerParams flags: extra JIT options (part of the cache key) */
  if (k->jit_maxreg > 0) {
    keys[nopt] = CU_JIT_MAX_REGISTERS;
    vals[nopt++] = (void *)(uintptr_t)(unsigned)k->jit_maxreg;
  }
  if (k->jit_opt > 0) {
    keys[nopt] = CU_JIT_OPTIMIZATION_LEVEL;
    vals[nopt++] = (void *)(uintptr_t)(unsigned)(k->jit_opt - 1);
  }
  double t0 = time_ms(), ptx0 = k->res.compile_ms;
  CUresult r = k->ptx_override ? CUDA_ERROR_NO_DEVICE : load_cached(k, keys, vals, nopt);
  if (r) {   /* no cache, or it failed, or a replaced PTX (the written one still gives the tensor maps) */
    mgpu_status s = emit_ptx(k);
    if (s) return s;
    r = ctx->drv->ModuleLoadDataEx(&k->mod, k->ptx_override ? k->ptx_override : k->ptx, nopt, keys, vals);
  }
  if (r) {
    k->mod = NULL;
    if (drv_fatal(r)) return api_drv_fail(ctx, "cuModuleLoadDataEx", r);
    return diag_set(&ctx->d, ERR_MODULE, "", k->ir->name, drv_errstr(ctx->drv, r), (int)r, err);
  }
  k->mod_gen = ctx->run.gen;
  /* the engine's PTX (emitted now, or cached under a tag that only this PTX's form carries) waits
  ** for the kernels before it with griddepcontrol.wait; a replaced PTX may not */
  k->pdl = !k->ptx_override || strstr(k->ptx_override, "griddepcontrol.wait");
  r = ctx->drv->ModuleGetFunction(&k->fn, k->mod, k->ir->name);
  if (r) return api_drv_fail(ctx, "cuModuleGetFunction", r);
  if (k->ki.smem_bytes > 48 * 1024) {   /* above the default, a function must opt in */
    r = ctx->drv->FuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)k->ki.smem_bytes);
    if (r) return api_drv_fail(ctx, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", r);
  }
  int v = 0;
  if (!ctx->drv->FuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k->fn)) k->res.registers = v;
  if (!ctx->drv->FuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k->fn)) k->res.local_bytes = v;
  k->res.load_ms = time_ms() - t0 - (k->res.compile_ms - ptx0);   /* the PTX written meanwhile counts as compiling */
  return MGPU_OK;
}

#define KER_ENTER(k) \
  API_CHECK(k, MAGIC_KER); \
  if (!api_enter((k)->ctx)) return MGPU_ERR_THREAD

mgpu_status mgpu_kernel_compile(mgpu_kernel *k) {
  KER_ENTER(k);
  mgpu_status s = compile(k);
  api_leave(k->ctx);
  return s;
}

mgpu_status mgpu_kernel_text(mgpu_kernel *k, int32_t kind, const char **out) {
  KER_ENTER(k);
  mgpu_status s = MGPU_OK;
  if (!out) s = diag_set(&k->ctx->d, ERR_NULL_ARG, "", "mgpu_kernel_text(out)");
  else if (kind == MGPU_TEXT_IR) *out = k->ir_text;
  else if (kind == MGPU_TEXT_PTX) {
    s = emit_ptx(k);
    *out = s ? NULL : k->ptx;
  } else s = diag_set(&k->ctx->d, ERR_BAD_ARG, "", "mgpu_kernel_text: kind must be MGPU_TEXT_IR or MGPU_TEXT_PTX");
  api_leave(k->ctx);
  return s;
}

mgpu_status mgpu_kernel_set_jit_options(mgpu_kernel *k, int32_t max_registers, int32_t opt_level) {
  KER_ENTER(k);
  mgpu_ctx *ctx = k->ctx;
  mgpu_status s = MGPU_OK;
  if (max_registers != 0 && (max_registers < 16 || max_registers > 255))
    s = diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_kernel_set_jit_options: max_registers must be 0 or 16..255");
  else if (opt_level < -1 || opt_level > 4)
    s = diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_kernel_set_jit_options: opt_level must be -1 or 0..4");
  else if (k->mod)
    s = diag_set(&ctx->d, ERR_STATE, "", "mgpu_kernel_set_jit_options: the kernel is already loaded");
  else {
    if (k->ptx && max_registers != k->jit_maxreg) {   /* the PTX carries the cap (.maxnreg): write it again */
      mem_free(&ctx->alloc, k->ptx, k->ptx_len + 1);
      k->ptx = NULL;
    }
    k->jit_maxreg = max_registers;
    k->jit_opt = opt_level + 1;
  }
  api_leave(ctx);
  return s;
}

mgpu_status mgpu_kernel_set_ptx(mgpu_kernel *k, const char *ptx) {
  KER_ENTER(k);
  mgpu_ctx *ctx = k->ctx;
  mgpu_status s = MGPU_OK;
  if (k->mod) {
    s = diag_set(&ctx->d, ERR_STATE, "", "mgpu_kernel_set_ptx: the kernel is already loaded");
  } else {
    char *copy = NULL;
    size_t n = ptx ? strlen(ptx) : 0;
    if (ptx && !(copy = mem_realloc(&ctx->alloc, NULL, 0, n + 1))) {
      s = diag_set(&ctx->d, ERR_NOMEM, "");
    } else {
      if (copy) memcpy(copy, ptx, n + 1);
      if (k->ptx_override) mem_free(&ctx->alloc, k->ptx_override, k->ptx_override_len + 1);
      k->ptx_override = copy;
      k->ptx_override_len = n;
    }
  }
  api_leave(ctx);
  return s;
}

mgpu_status mgpu_kernel_resources_get(mgpu_kernel *k, mgpu_kernel_resources *out) {
  KER_ENTER(k);
  mgpu_status s = MGPU_OK;
  if (!out) s = diag_set(&k->ctx->d, ERR_NULL_ARG, "", "mgpu_kernel_resources_get(out)");
  else *out = k->res;
  api_leave(k->ctx);
  return s;
}

mgpu_status mgpu_kernel_layout(mgpu_kernel *k, int32_t value, char *buf, int32_t n) {
  API_CHECK(k, MAGIC_KER);
  if (!buf || n < 1) return diag_set(&k->ctx->d, ERR_NULL_ARG, "", "mgpu_kernel_layout(buf)");
  if (value <= 0 || (uint32_t)value >= k->ir->vals.n) return diag_set(&k->ctx->d, ERR_BAD_VALUE, "", "mgpu_kernel_layout", value);
  buf[0] = 0;
  if (ir_vtype(k->ir, (uint32_t)value)->kind != MGPU_VALUE_ARRAY) return MGPU_OK;
  pass_layout_name(k->ir, &k->ki.lay[value], buf, (size_t)n);
  return MGPU_OK;
}

int32_t mgpu_kernel_param_count(const mgpu_kernel *k) {
  return k && k->magic == MAGIC_KER ? (int32_t)k->ir->params.n : -1;
}

mgpu_status mgpu_kernel_param(mgpu_kernel *k, int32_t index, mgpu_param_info *out) {
  API_CHECK(k, MAGIC_KER);
  const ir_kernel *ir = k->ir;
  if (!out) return diag_set(&k->ctx->d, ERR_NULL_ARG, "", "mgpu_kernel_param(out)");
  if (index < 0 || (uint32_t)index >= ir->params.n)
    return diag_set(&k->ctx->d, ERR_BAD_ARG, "", "mgpu_kernel_param: index out of range");
  const ir_type *t = ir_vtype(ir, ir->params.v[index].value);
  memset(out, 0, sizeof *out);
  out->role = ir->params.v[index].role;
  out->value.kind = t->kind;
  out->value.dtype = t->dtype;
  out->value.space = t->space;
  out->value.rank = t->rank;
  for (int i = 0; i < t->rank; i++) out->value.shape[i] = t->shape[i];
  return MGPU_OK;
}

bool api_scalar_bits(int dt, const mgpu_arg *a, uint64_t *bits) {
  *bits = 0;
  double x = a->scalar;
  if (dt_isfloat(dt)) {
    if (dt == MGPU_F64) memcpy(bits, &x, 8);
    else if (dt == MGPU_F32) { float f = (float)x; memcpy(bits, &f, 4); }
    else dt_store(dt, bits, x);
    return true;
  }
  int64_t v;
  if (a->has_integer) v = a->integer;
  else {
    if (x != x || x != floor(x) || x < (dt == MGPU_U64 ? 0 : -0x1p63) || x >= (dt == MGPU_U64 ? 0x1p64 : 0x1p63))
      return false;
    v = x >= 0x1p63 ? (int64_t)(uint64_t)x : (int64_t)x;
  }
  if (!dt_int_fits(dt, v)) return false;
  dt_store_int(dt_bytes(dt) < 4 ? MGPU_I32 : dt, bits, v);   /* narrow ints travel as 32 bits */
  return true;
}

/* Every array argument must be a live buffer of this context, 16-byte
** aligned and large enough; every scalar must fit its dtype. */
static mgpu_status check_launch(mgpu_kernel *k, const mgpu_launch_args *a, uint64_t *scalars) {
  mgpu_ctx *ctx = k->ctx;
  const ir_kernel *ir = k->ir;
  char msg[512];
  if (!a || (a->nargs && !a->args)) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_kernel_launch(args)");
  if ((uint32_t)a->nargs != ir->params.n) {
    snprintf(msg, sizeof msg, "expects %u arguments (inputs and scalars, then outputs), got %d", ir->params.n, a->nargs);
    return diag_set(&ctx->d, ERR_LAUNCH_ARG, "", ir->name, msg);
  }
  for (uint32_t i = 0; i < ir->params.n; i++) {
    const ir_type *t = ir_vtype(ir, ir->params.v[i].value);
    char ts[160];
    if (ir->params.v[i].role == MGPU_PARAM_SCALAR) {
      if (api_scalar_bits(t->dtype, &a->args[i], &scalars[i])) continue;
      char range[96], got[32];
      dt_range_str(t->dtype, range, sizeof range);
      if (a->args[i].has_integer) snprintf(got, sizeof got, "%lld", (long long)a->args[i].integer);
      else snprintf(got, sizeof got, "%.17g", a->args[i].scalar);
      snprintf(msg, sizeof msg, "argument %u must be an integer in its range (%s), got %s", i + 1, range, got);
      return diag_set(&ctx->d, ERR_LAUNCH_ARG, "", ir->name, msg);
    }
    const mgpu_buffer *b = a->args[i].buffer;
    uint64_t need = (uint64_t)ir_numel(t) * dt_bytes(t->dtype);
    bool ok = b && b->magic == MAGIC_BUF && b->ctx == ctx && b->size >= need && b->addr % 16 == 0;
    if (ok) continue;
    ir_type_str(t, ts, sizeof ts);     /* only for the message */
    if (!b || b->magic != MAGIC_BUF)
      snprintf(msg, sizeof msg, "argument %u (%s) has neither a valid buffer handle nor an address", i + 1, ts + 1);
    else if (b->ctx != ctx) snprintf(msg, sizeof msg, "argument %u belongs to another context", i + 1);
    else if (b->size < need)
      snprintf(msg, sizeof msg, "argument %u holds %llu bytes but parameter %u (%s) needs %llu", i + 1,
               (unsigned long long)b->size, i + 1, ts + 1, (unsigned long long)need);
    else
      snprintf(msg, sizeof msg, "argument %u is not 16-byte aligned (address 0x%llx)", i + 1, (unsigned long long)b->addr);
    return diag_set(&ctx->d, ERR_LAUNCH_ARG, "", ir->name, msg);
  }
  return MGPU_OK;
}

static mgpu_status launch_interp(mgpu_kernel *k, const mgpu_launch_args *a, const uint64_t *scalars) {
  mgpu_ctx *ctx = k->ctx;
  uint32_t n = k->ir->params.n;
  interp_arg args[256];
  memset(args, 0, sizeof args);
  mgpu_status s = MGPU_OK;
  uint32_t got = 0;
  for (; got < n && !s; got++) {
    if (k->ir->params.v[got].role == MGPU_PARAM_SCALAR) { args[got].scalar = scalars[got]; continue; }
    s = api_buffer_host_copy(a->args[got].buffer, &args[got].data);
    args[got].size = a->args[got].buffer->size;
  }
  interp_set_timeout(ctx->run.timeout_ms);
  if (!s) s = interp_run(k->ir, &k->ki, args, n, 1, &ctx->d);
  for (uint32_t i = 0; i < n && !s; i++)
    if (k->ir->params.v[i].role == MGPU_PARAM_OUTPUT) s = api_buffer_host_writeback(a->args[i].buffer, args[i].data);
  for (uint32_t i = 0; i < got; i++)
    if (k->ir->params.v[i].role != MGPU_PARAM_SCALAR) api_buffer_host_free(a->args[i].buffer, args[i].data);
  return s;
}

static int tmap_dtype(int dt) {
  switch (dt) {
  case MGPU_F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case MGPU_BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case MGPU_F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case MGPU_F64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  case MGPU_I32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case MGPU_U32: return CU_TENSOR_MAP_DATA_TYPE_UINT32;
  case MGPU_I64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
  case MGPU_U64: return CU_TENSOR_MAP_DATA_TYPE_UINT64;
  case MGPU_I16: case MGPU_U16: return CU_TENSOR_MAP_DATA_TYPE_UINT16;
  default: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
}

/* Encode tensor map t for the buffer at addr into out (128 bytes). */
static mgpu_status encode_tmap(mgpu_kernel *k, const ptx_tmap *t, uint64_t addr, void *out) {
  mgpu_ctx *ctx = k->ctx;
  if (addr % 16) {
    char msg[160];
    snprintf(msg, sizeof msg, "argument %u is not 16-byte aligned; TMA copies need that", t->param + 1);
    return diag_set(&ctx->d, ERR_LAUNCH_ARG, "", k->ir->name, msg);
  }
  unsigned box[5], es[5] = { 1, 1, 1, 1, 1 };
  for (int i = 0; i < t->rank; i++) box[i] = t->box[i];
  int sw = t->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : t->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
         : t->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUresult r = ctx->drv->TensorMapEncodeTiled(out, tmap_dtype(t->dtype), (unsigned)t->rank, (void *)(uintptr_t)addr,
                                              t->dims, t->strides + 1, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
                                              CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r) return api_drv_fail(ctx, "cuTensorMapEncodeTiled", r);
  return MGPU_OK;
}

static mgpu_status launch_gpu(mgpu_kernel *k, const mgpu_launch_args *a, uint64_t *scalars) {
  mgpu_ctx *ctx = k->ctx;
  const ir_kernel *ir = k->ir;
  void *params[256 + 64];
  _Alignas(64) unsigned char tmaps[64][128];   /* remote copies take one map per device, in a row */
  size_t used = 0;
  mgpu_status s = api_usable(ctx);
  for (uint32_t i = 0; i < ir->params.n && !s; i++)
    if (ir->params.v[i].role != MGPU_PARAM_SCALAR) s = api_buffer_live(a->args[i].buffer);
  if (s) return s;
  for (uint32_t i = 0; i < ir->params.n; i++) {
    if (ir->params.v[i].role != MGPU_PARAM_SCALAR) scalars[i] = a->args[i].buffer->addr;
    params[i] = &scalars[i];
  }
  for (size_t i = 0; i < k->tmaps.n; i++) {
    const ptx_tmap *t = &k->tmaps.v[i];
    int n = t->ndev ? t->ndev : 1;
    if (used + (size_t)n > 64) return diag_set(&ctx->d, ERR_UNSUPPORTED, "", ir->name, "more than 64 tensor maps");
    params[ir->params.n + i] = tmaps[used];
    for (int d = 0; d < n; d++) {   /* device d's copy of a symmetric array: the peer table's offset */
      uint64_t addr = a->args[t->param].buffer->addr + (uint64_t)(t->ndev ? api_dist_delta(ctx, d) : 0);
      if ((s = encode_tmap(k, t, addr, tmaps[used++]))) return s;
    }
  }
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  unsigned g[3], c[3] = { 1, 1, 1 };
  int64_t dims[3];
  ir_grid_dims(&ir->opts, dims);      /* checked against CUDA's limits when the builder was made */
  for (int i = 0; i < 3; i++) g[i] = (unsigned)dims[i];
  for (int i = 0; i < ir->opts.cluster_rank; i++) c[i] = (unsigned)ir->opts.cluster[i];
  cfg.gridDimX = g[0] * c[0]; cfg.gridDimY = g[1] * c[1]; cfg.gridDimZ = g[2] * c[2];
  CUlaunchAttribute attr[2];
  memset(attr, 0, sizeof attr);
  cfg.attrs = attr;
  /* the kernel may begin while the one before it in the stream finishes (its PTX waits for it
  ** with griddepcontrol.wait before touching global memory; a module without the wait is
  ** launched without it); first, so a retry can drop it */
  if (!ctx->serial_launch && k->pdl) {
    attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr[cfg.numAttrs++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (ir->opts.cluster_rank) {
    attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr[cfg.numAttrs].value.clusterDim.x = c[0];
    attr[cfg.numAttrs].value.clusterDim.y = c[1];
    attr[cfg.numAttrs++].value.clusterDim.z = c[2];
  }
  cfg.blockDimX = (unsigned)(128 * ir->opts.num_threads);
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = (CUstream)(uintptr_t)a->stream;
  cfg.sharedMemBytes = (unsigned)k->ki.smem_bytes;
  CUresult r = ctx->drv->LaunchKernelEx(&cfg, k->fn, params, NULL);
  if ((r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_SUPPORTED) && !ctx->serial_launch && k->pdl) {
    cfg.attrs++;   /* without programmatic dependent launch: if that is what the driver refused, from now on */
    cfg.numAttrs--;
    r = ctx->drv->LaunchKernelEx(&cfg, k->fn, params, NULL);
    if (!r) ctx->serial_launch = true;
  }
  if (r) return api_drv_fail(ctx, "cuLaunchKernelEx", r);
  return api_launched(ctx, ir->name, cfg.hStream);
}

/* The launch's arguments with those given by address (buffer NULL) replaced by views of
** their memory made for this launch (in copy and views, one per parameter at most), so
** everything after sees buffers; args itself when none is.  Arguments of another count are
** left to check_launch. */
static mgpu_status bind_addresses(mgpu_kernel *k, const mgpu_launch_args **args, mgpu_launch_args *bound,
                                  mgpu_arg *copy, mgpu_buffer *views) {
  const mgpu_launch_args *a = *args;
  const ir_kernel *ir = k->ir;
  if (!a || !a->args || (uint32_t)a->nargs != ir->params.n) return MGPU_OK;
  bool any = false;
  for (uint32_t i = 0; i < ir->params.n; i++) {
    if (ir->params.v[i].role == MGPU_PARAM_SCALAR || !a->args[i].address) continue;
    if (a->args[i].buffer) {
      char msg[96];
      snprintf(msg, sizeof msg, "argument %u gives both a buffer and an address", i + 1);
      return diag_set(&k->ctx->d, ERR_LAUNCH_ARG, "", ir->name, msg);
    }
    any = true;
  }
  if (!any) return MGPU_OK;
  for (uint32_t i = 0; i < ir->params.n; i++) {
    copy[i] = a->args[i];
    if (ir->params.v[i].role == MGPU_PARAM_SCALAR || !a->args[i].address) continue;
    const ir_type *t = ir_vtype(ir, ir->params.v[i].value);
    api_buffer_view(k->ctx, a->args[i].address, (uint64_t)ir_numel(t) * dt_bytes(t->dtype), &views[i]);
    copy[i].buffer = &views[i];
  }
  *bound = *a;
  bound->args = copy;
  *args = bound;
  return MGPU_OK;
}

mgpu_status mgpu_kernel_launch(mgpu_kernel *k, const mgpu_launch_args *args) {
  KER_ENTER(k);
  mgpu_ctx *ctx = k->ctx;
  uint64_t scalars[256];
  mgpu_arg copy[256];
  mgpu_buffer views[256];
  mgpu_launch_args bound;
  mgpu_status s = k->ir->params.n > 256 ? diag_set(&ctx->d, ERR_UNSUPPORTED, "", k->ir->name, "more than 256 parameters")
                                         : bind_addresses(k, &args, &bound, copy, views);
  if (!s) s = check_launch(k, args, scalars);
  if (!s && ctx->info.mode != MGPU_MODE_COMPILE_ONLY) {
    s = compile(k);
    bool coll = !s && api_dist_collective(k);
    if (coll) s = api_dist_check_args(k, args);
    if (!s && coll && !runs_interpreted(k)) s = api_dist_multicast(k);
    if (!s && coll && ctx->dist && runs_interpreted(k)) s = api_dist_launch(k, args);   /* every device's launch, together */
    else if (!s) s = runs_interpreted(k) ? launch_interp(k, args, scalars) : launch_gpu(k, args, scalars);
  }
  api_leave(ctx);
  return s;
}
