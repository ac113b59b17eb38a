/*
** api_buffer.c -- buffers: device memory on a GPU, host memory otherwise;
** copies, fills (constant, iota, seeded random) and element access as
** doubles.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api.h"

#define CHUNK (1u << 20)   /* elements converted per host round trip */

static bool in_range(const mgpu_buffer *b, uint64_t off, uint64_t n) {
  return off <= b->size && n <= b->size - off;
}

static mgpu_status range_err(mgpu_buffer *b, const char *what, uint64_t off, uint64_t n) {
  return diag_set(&b->ctx->d, ERR_BOUNDS, "", what, (unsigned long long)off, (unsigned long long)(off + n),
                  (unsigned long long)b->size);
}

mgpu_status api_buffer_new(mgpu_ctx *ctx, uint64_t n, uint64_t addr, bool owned, mgpu_buffer **out) {
  mgpu_buffer *b = mem_calloc(&ctx->alloc, sizeof *b);
  if (!b) return diag_set(&ctx->d, ERR_NOMEM, "");
  b->magic = MAGIC_BUF;
  b->refs = 1;
  b->ctx = ctx;
  b->gen = ctx->run.gen;
  b->size = n;
  b->addr = addr;
  b->owned = owned;
  b->sym = -1;
  api_ref(ctx);
  *out = b;
  return MGPU_OK;
}

void api_buffer_view(mgpu_ctx *ctx, uint64_t addr, uint64_t n, mgpu_buffer *out) {
  memset(out, 0, sizeof *out);
  out->magic = MAGIC_BUF;
  out->refs = 1;
  out->ctx = ctx;
  out->gen = ctx->run.gen;
  out->size = n;
  out->addr = addr;
  out->sym = -1;
}

/* The host's available and total memory and its swap in bytes (-1 where unknown). */
static void host_mem(double *avail, double *total, double *swap) {
  *avail = *total = *swap = -1;
  FILE *f = fopen("/proc/meminfo", "r");        /* Linux: MemAvailable counts reclaimable caches */
  if (f) {
    char line[128];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
      if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) *avail = (double)kb * 1024;
      if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) *total = (double)kb * 1024;
      if (sscanf(line, "SwapTotal: %llu kB", &kb) == 1) *swap = (double)kb * 1024;
    }
    fclose(f);
  }
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  long pg = sysconf(_SC_PAGESIZE);
  if (*avail < 0 && pg > 0 && sysconf(_SC_AVPHYS_PAGES) > 0) *avail = (double)sysconf(_SC_AVPHYS_PAGES) * (double)pg;
  if (*total < 0 && pg > 0 && sysconf(_SC_PHYS_PAGES) > 0) *total = (double)sysconf(_SC_PHYS_PAGES) * (double)pg;
#endif
}

/* How much memory the failed allocation could have had, as far as known:
** "device memory: 3.2 GB free of 85.0 GB" or "host memory (interpret mode): 1.5 GB available of 16.0 GB". */
static void mem_avail(mgpu_ctx *ctx, char *buf, size_t n) {
  if (api_gpu(ctx)) {
    size_t fr = 0, tot = 0;
    if (ctx->drv->MemGetInfo(&fr, &tot) == CUDA_SUCCESS)
      snprintf(buf, n, "device memory: %.1f GB free of %.1f GB", (double)fr / 1e9, (double)tot / 1e9);
    else
      snprintf(buf, n, "device memory: free amount unknown");
    return;
  }
  double avail, total, swap;
  host_mem(&avail, &total, &swap);
  if (avail >= 0 && total > 0)
    snprintf(buf, n, "host memory (interpret mode): %.1f GB available of %.1f GB", avail / 1e9, total / 1e9);
  else
    snprintf(buf, n, "host memory (interpret mode): available amount unknown");
}

/* More than the host's memory and swap: refused without asking the allocator
** (which may overcommit, or abort under a sanitizer). */
static bool host_too_big(uint64_t nbytes) {
  double avail, total, swap;
  if (nbytes < (UINT64_C(1) << 30)) return false;
  host_mem(&avail, &total, &swap);
  return total > 0 && (double)nbytes > total + (swap > 0 ? swap : 0);
}

static mgpu_status nomem(mgpu_ctx *ctx, uint64_t nbytes) {
  char avail[128];
  mem_avail(ctx, avail, sizeof avail);
  return diag_set(&ctx->d, ERR_NOMEM_BUF, "", (unsigned long long)nbytes, avail);
}

mgpu_status mgpu_buffer_alloc(mgpu_ctx *ctx, uint64_t nbytes, mgpu_buffer **out) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_buffer_alloc(out)");
  *out = NULL;
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  uint64_t addr = 0;
  if (nbytes) {
    if (api_gpu(ctx)) {
      CUdeviceptr p = 0;
      CUresult r = (s = api_usable(ctx)) ? CUDA_SUCCESS : drv_alloc(ctx->drv, &p, nbytes);
      if (r == CUDA_ERROR_OUT_OF_MEMORY) s = nomem(ctx, nbytes);
      else if (r) s = api_drv_fail(ctx, "cuMemAlloc", r);
      addr = p;
    } else if (nbytes > SIZE_MAX || host_too_big(nbytes)) {
      s = nomem(ctx, nbytes);
    } else {
      void *p = mem_realloc(&ctx->alloc, NULL, 0, (size_t)nbytes);
      if (!p) s = nomem(ctx, nbytes);
      else memset(p, 0xff, (size_t)nbytes);   /* garbage, but defined: NaN in every float type, -1 */
      addr = (uint64_t)(uintptr_t)p;
    }
  }
  if (!s) {
    s = api_buffer_new(ctx, nbytes, addr, true, out);
    if (s && addr) {
      if (api_gpu(ctx)) drv_free(ctx->drv, addr);
      else mem_free(&ctx->alloc, (void *)(uintptr_t)addr, (size_t)nbytes);
    }
  }
  api_leave(ctx);
  return s;
}

mgpu_status mgpu_buffer_wrap(mgpu_ctx *ctx, uint64_t address, uint64_t nbytes, mgpu_buffer **out) {
  API_CHECK(ctx, MAGIC_CTX);
  if (!out) return diag_set(&ctx->d, ERR_NULL_ARG, "", "mgpu_buffer_wrap(out)");
  *out = NULL;
  if (!address && nbytes) return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_buffer_wrap: address is 0 but nbytes is not");
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = api_buffer_new(ctx, nbytes, address, false, out);
  api_leave(ctx);
  return s;
}

void mgpu_buffer_retain(mgpu_buffer *b) {
  if (b && b->magic == MAGIC_BUF) b->refs++;
}

void mgpu_buffer_release(mgpu_buffer *b) {
  if (!b || b->magic != MAGIC_BUF || --b->refs > 0) return;
  mgpu_ctx *ctx = b->ctx;
  if (b->owned && b->addr) {
    if (api_gpu(ctx)) {
      if (b->gen == ctx->run.gen && !ctx->run.lost) { drv_bind(ctx->drv); drv_free(ctx->drv, b->addr); }
    }
    else mem_free(&ctx->alloc, (void *)(uintptr_t)b->addr, (size_t)b->size);
  }
  if (b->on_release) b->on_release(b->on_release_arg);
  b->magic = 0;
  mem_free(&ctx->alloc, b, sizeof *b);
  api_unref(ctx);
}

uint64_t mgpu_buffer_size(const mgpu_buffer *b) { return b && b->magic == MAGIC_BUF ? b->size : 0; }
uint64_t mgpu_buffer_address(const mgpu_buffer *b) { return b && b->magic == MAGIC_BUF ? b->addr : 0; }

mgpu_status api_buffer_live(mgpu_buffer *b) {
  mgpu_status s = api_usable(b->ctx);
  if (!s && b->gen != b->ctx->run.gen)
    s = diag_set(&b->ctx->d, ERR_STATE, "", "the array was made before the GPU context was lost: its memory is gone");
  return s;
}

/* The GPU idle (see api_ready) and b's memory still there. */
static mgpu_status buffer_ready(mgpu_buffer *b) {
  mgpu_status s = api_ready(b->ctx);
  return s ? s : api_buffer_live(b);
}

/* Copies without entering the context (callers hold it). */
static mgpu_status raw_write(mgpu_buffer *b, uint64_t off, const void *src, uint64_t n) {
  if (!n) return MGPU_OK;
  if (api_gpu(b->ctx)) {
    mgpu_status s = buffer_ready(b);
    CUresult r = s ? CUDA_SUCCESS : b->ctx->drv->MemcpyHtoD(b->addr + off, src, n);
    return r ? api_drv_fail(b->ctx, "cuMemcpyHtoD", r) : s;
  }
  memcpy((char *)(uintptr_t)b->addr + off, src, n);
  return MGPU_OK;
}

static mgpu_status raw_read(mgpu_buffer *b, uint64_t off, void *dst, uint64_t n) {
  if (!n) return MGPU_OK;
  if (api_gpu(b->ctx)) {
    mgpu_status s = buffer_ready(b);
    CUresult r = s ? CUDA_SUCCESS : b->ctx->drv->MemcpyDtoH(dst, b->addr + off, n);
    return r ? api_drv_fail(b->ctx, "cuMemcpyDtoH", r) : s;
  }
  memcpy(dst, (const char *)(uintptr_t)b->addr + off, n);
  return MGPU_OK;
}

mgpu_status mgpu_buffer_write(mgpu_buffer *b, uint64_t off, const void *src, uint64_t n) {
  API_CHECK(b, MAGIC_BUF);
  if (!src && n) return diag_set(&b->ctx->d, ERR_NULL_ARG, "", "mgpu_buffer_write(src)");
  if (!in_range(b, off, n)) return range_err(b, "mgpu_buffer_write", off, n);
  if (!api_enter(b->ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = raw_write(b, off, src, n);
  api_leave(b->ctx);
  return s;
}

mgpu_status mgpu_buffer_read(mgpu_buffer *b, uint64_t off, void *dst, uint64_t n) {
  API_CHECK(b, MAGIC_BUF);
  if (!dst && n) return diag_set(&b->ctx->d, ERR_NULL_ARG, "", "mgpu_buffer_read(dst)");
  if (!in_range(b, off, n)) return range_err(b, "mgpu_buffer_read", off, n);
  if (!api_enter(b->ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = raw_read(b, off, dst, n);
  api_leave(b->ctx);
  return s;
}

mgpu_status mgpu_buffer_copy(mgpu_buffer *dst, uint64_t doff, mgpu_buffer *src, uint64_t soff, uint64_t n) {
  API_CHECK(dst, MAGIC_BUF);
  API_CHECK(src, MAGIC_BUF);
  mgpu_ctx *ctx = dst->ctx;
  if (src->ctx != ctx) return diag_set(&ctx->d, ERR_BAD_ARG, "", "mgpu_buffer_copy: buffers belong to different contexts");
  if (!in_range(dst, doff, n)) return range_err(dst, "mgpu_buffer_copy(dst)", doff, n);
  if (!in_range(src, soff, n)) return range_err(src, "mgpu_buffer_copy(src)", soff, n);
  if (!api_enter(ctx)) return MGPU_ERR_THREAD;
  mgpu_status s = MGPU_OK;
  if (n && api_gpu(ctx)) {
    if (!(s = buffer_ready(dst)) && !(s = api_buffer_live(src))) {
      CUresult r = ctx->drv->MemcpyDtoD(dst->addr + doff, src->addr + soff, n);
      if (r) s = api_drv_fail(ctx, "cuMemcpyDtoD", r);
    }
  } else if (n) {
    memmove((char *)(uintptr_t)dst->addr + doff, (const char *)(uintptr_t)src->addr + soff, n);
  }
  api_leave(ctx);
  return s;
}

/* -- Element access and fills ------------------------------------------------------- */

static mgpu_status elem_args(mgpu_buffer *b, int32_t dtype, uint64_t first, uint64_t count, const char *what) {
  if (!dt_valid(dtype)) return diag_set(&b->ctx->d, ERR_BAD_DTYPE, "", what, dtype);
  uint64_t es = dt_bytes(dtype);
  if (first > UINT64_MAX / es || count > UINT64_MAX / es || !in_range(b, first * es, count * es))
    return range_err(b, what, first * es, count * es);
  return MGPU_OK;
}

/* Write count elements from first through a host bounce buffer, chunk by
** chunk: enc(raw, dtype, i, n, ud) encodes elements i .. i+n-1 into raw. */
typedef void elem_encoder(unsigned char *raw, int dtype, uint64_t i0, uint64_t n, const void *ud);
static mgpu_status put_elems(mgpu_buffer *b, int dtype, uint64_t first, uint64_t count, elem_encoder *enc,
                             const void *ud) {
  int es = dt_bytes(dtype);
  uint64_t step = count < CHUNK ? count : CHUNK;
  unsigned char *raw = mem_realloc(&b->ctx->alloc, NULL, 0, (size_t)es * (step ? step : 1));
  mgpu_status s = raw ? MGPU_OK : diag_set(&b->ctx->d, ERR_NOMEM, "");
  for (uint64_t i = 0; !s && i < count; i += step) {
    uint64_t n = count - i < step ? count - i : step;
    enc(raw, dtype, first + i, n, ud);
    s = raw_write(b, (first + i) * es, raw, n * es);
  }
  mem_free(&b->ctx->alloc, raw, (size_t)es * (step ? step : 1));
  return s;
}

/* Read count elements from first, chunk by chunk: dec(raw, dtype, i, n, ud)
** decodes elements i .. i+n-1 from raw. */
typedef void elem_decoder(const unsigned char *raw, int dtype, uint64_t i0, uint64_t n, void *ud);
static mgpu_status get_elems(mgpu_buffer *b, int dtype, uint64_t first, uint64_t count, elem_decoder *dec, void *ud) {
  int es = dt_bytes(dtype);
  uint64_t step = count < CHUNK ? count : CHUNK;
  unsigned char *raw = mem_realloc(&b->ctx->alloc, NULL, 0, (size_t)es * (step ? step : 1));
  mgpu_status s = raw ? MGPU_OK : diag_set(&b->ctx->d, ERR_NOMEM, "");
  for (uint64_t i = 0; !s && i < count; i += step) {
    uint64_t n = count - i < step ? count - i : step;
    s = raw_read(b, (first + i) * es, raw, n * es);
    if (!s) dec(raw, dtype, i, n, ud);
  }
  mem_free(&b->ctx->alloc, raw, (size_t)es * (step ? step : 1));
  return s;
}

static void enc_f64(unsigned char *raw, int dtype, uint64_t i0, uint64_t n, const void *ud) {
  const double *in = ud;
  for (uint64_t j = 0; j < n; j++) dt_store(dtype, raw + j * dt_bytes(dtype), in[i0 + j]);
}

static void enc_i64(unsigned char *raw, int dtype, uint64_t i0, uint64_t n, const void *ud) {
  const int64_t *in = ud;
  for (uint64_t j = 0; j < n; j++) dt_store_int(dtype, raw + j * dt_bytes(dtype), dt_wrap_int(dtype, in[i0 + j]));
}

static void dec_f64(const unsigned char *raw, int dtype, uint64_t i0, uint64_t n, void *ud) {
  double *out = ud;
  for (uint64_t j = 0; j < n; j++) out[i0 + j] = dt_load(dtype, raw + j * dt_bytes(dtype));
}

static void dec_i64(const unsigned char *raw, int dtype, uint64_t i0, uint64_t n, void *ud) {
  int64_t *out = ud;
  for (uint64_t j = 0; j < n; j++) out[i0 + j] = dt_load_int(dtype, raw + j * dt_bytes(dtype));
}

/* Counter-based random numbers: element i of stream `seed` is a pure function
** of (seed, i), so fills are reproducible and independent of chunking. */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static double uniform01(uint64_t seed, uint64_t i) {
  return (double)(mix64(seed * 0x9e3779b97f4a7c15ULL + mix64(i + 0x632be59bd9b4e019ULL)) >> 11) * 0x1p-53;
}

static void enc_fill(unsigned char *raw, int dtype, uint64_t i0, uint64_t n, const void *ud) {
  const mgpu_fill *f = ud;
  for (uint64_t j = 0; j < n; j++) {
    uint64_t i = i0 + j;
    double x;
    switch (f->kind) {
    case MGPU_FILL_VALUE: x = f->a; break;
    case MGPU_FILL_IOTA: x = f->a + (double)i * f->b; break;
    case MGPU_FILL_UNIFORM: {
      double u = uniform01(f->seed, i);
      x = dt_isint(dtype) ? floor(f->a + (f->b - f->a) * u) : f->a + (f->b - f->a) * u;
      break;
    }
    default: {   /* Box-Muller on two independent streams */
      double u1 = uniform01(f->seed, 2 * i), u2 = uniform01(f->seed, 2 * i + 1);
      x = f->a + f->b * sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
      break;
    }
    }
    dt_store(dtype, raw + j * dt_bytes(dtype), x);
  }
}

/* Every value of a constant or iota fill fits an integer dtype (its first
** and last elements; iota's start and step are integers), and a uniform
** fill's bounds lie in its range; else an error naming the value.  (Normal
** fills of integer dtypes truncate and saturate: documented.) */
static mgpu_status fill_fits(mgpu_buffer *b, const mgpu_fill *f) {
  if (!dt_isint(f->dtype) || !f->count) return MGPU_OK;
  const char *what = NULL, *why = NULL;
  double x = f->a;
  if (f->kind == MGPU_FILL_VALUE) what = "value", why = dt_misfit(f->dtype, x);
  else if (f->kind == MGPU_FILL_IOTA) {
    what = "start", why = dt_misfit(f->dtype, x);
    if (!why && dt_misfit(MGPU_I64, f->b)) what = "step", x = f->b, why = "not an integer";
    if (!why) what = "last element", x = f->a + (double)(f->count - 1) * f->b, why = dt_misfit(f->dtype, x);
  } else if (f->kind == MGPU_FILL_UNIFORM) {
    what = "low bound", why = isfinite(x) ? dt_misfit(f->dtype, floor(x)) : "out of range";
    if (!why) what = "high bound", x = f->b, why = isfinite(x) ? dt_misfit(f->dtype, ceil(x) - 1) : "out of range";
  }
  if (!why) return MGPU_OK;
  char range[96], num[32];
  dt_range_str(f->dtype, range, sizeof range);
  dt_num_str(x, num, sizeof num);
  return diag_set(&b->ctx->d, ERR_FILL_MISFIT, "", "mgpu_buffer_fill", what, num, why, range);
}

mgpu_status mgpu_buffer_fill(mgpu_buffer *b, const mgpu_fill *f) {
  API_CHECK(b, MAGIC_BUF);
  if (!f) return diag_set(&b->ctx->d, ERR_NULL_ARG, "", "mgpu_buffer_fill(fill)");
  if (f->kind < MGPU_FILL_VALUE || f->kind > MGPU_FILL_NORMAL)
    return diag_set(&b->ctx->d, ERR_BAD_ARG, "", "mgpu_buffer_fill: unknown fill kind");
  mgpu_status s = elem_args(b, f->dtype, 0, f->count, "mgpu_buffer_fill");
  if (!s) s = fill_fits(b, f);
  if (s) return s;
  if (!api_enter(b->ctx)) return MGPU_ERR_THREAD;
  s = put_elems(b, f->dtype, 0, f->count, enc_fill, f);
  api_leave(b->ctx);
  return s;
}

mgpu_status mgpu_buffer_set_f64(mgpu_buffer *b, int32_t dtype, uint64_t first, uint64_t count, const double *in) {
  API_CHECK(b, MAGIC_BUF);
  if (!in && count) return diag_set(&b->ctx->d, ERR_NULL_ARG, "", "mgpu_buffer_set_f64(in)");
  mgpu_status s = elem_args(b, dtype, first, count, "mgpu_buffer_set_f64");
  if (s) return s;
  for (uint64_t i = 0; i < count; i++) {
    const char *why = dt_misfit(dtype, in[i]);
    if (!why) continue;
    char range[96], num[32];
    dt_range_str(dtype, range, sizeof range);
    dt_num_str(in[i], num, sizeof num);
    return diag_set(&b->ctx->d, ERR_ELEM_MISFIT, "", "mgpu_buffer_set_f64", (unsigned long long)(first + i), num, why,
                    range);
  }
  if (!api_enter(b->ctx)) return MGPU_ERR_THREAD;
  s = put_elems(b, dtype, first, count, enc_f64, in - first);
  api_leave(b->ctx);
  return s;
}

mgpu_status mgpu_buffer_get_f64(mgpu_buffer *b, int32_t dtype, uint64_t first, uint64_t count, double *out) {
  API_CHECK(b, MAGIC_BUF);
  if (!out && count) return diag_set(&b->ctx->d, ERR_NULL_ARG, "", "mgpu_buffer_get_f64(out)");
  mgpu_status s = elem_args(b, dtype, first, count, "mgpu_buffer_get_f64");
  if (s) return s;
  if (!api_enter(b->ctx)) return MGPU_ERR_THREAD;
  s = get_elems(b, dtype, first, count, dec_f64, out);
  api_leave(b->ctx);
  return s;
}

/* elem_args, and dtype is an integer dtype or pred. */
static mgpu_status int_elem_args(mgpu_buffer *b, int32_t dtype, uint64_t first, uint64_t count, const char *what) {
  if (dt_valid(dtype) && dt_isfloat(dtype))
    return diag_set(&b->ctx->d, ERR_NOT_INT_DTYPE, "", what, dt_name(dtype));
  return elem_args(b, dtype, first, count, what);
}

mgpu_status mgpu_buffer_set_i64(mgpu_buffer *b, int32_t dtype, uint64_t first, uint64_t count, const int64_t *in) {
  API_CHECK(b, MAGIC_BUF);
  if (!in && count) return diag_set(&b->ctx->d, ERR_NULL_ARG, "", "mgpu_buffer_set_i64(in)");
  mgpu_status s = int_elem_args(b, dtype, first, count, "mgpu_buffer_set_i64");
  if (s) return s;
  for (uint64_t i = 0; i < count; i++) {
    if (dt_int_fits(dtype, in[i])) continue;
    char range[96];
    dt_range_str(dtype, range, sizeof range);
    return diag_set(&b->ctx->d, ERR_ELEM_INT_RANGE, "", "mgpu_buffer_set_i64", (unsigned long long)(first + i),
                    (long long)in[i], range);
  }
  if (!api_enter(b->ctx)) return MGPU_ERR_THREAD;
  s = put_elems(b, dtype, first, count, enc_i64, in - first);
  api_leave(b->ctx);
  return s;
}

mgpu_status mgpu_buffer_get_i64(mgpu_buffer *b, int32_t dtype, uint64_t first, uint64_t count, int64_t *out) {
  API_CHECK(b, MAGIC_BUF);
  if (!out && count) return diag_set(&b->ctx->d, ERR_NULL_ARG, "", "mgpu_buffer_get_i64(out)");
  mgpu_status s = int_elem_args(b, dtype, first, count, "mgpu_buffer_get_i64");
  if (s) return s;
  if (!api_enter(b->ctx)) return MGPU_ERR_THREAD;
  s = get_elems(b, dtype, first, count, dec_i64, out);
  api_leave(b->ctx);
  return s;
}

/* -- Host views for the interpreter ------------------------------------------------- */

mgpu_status api_buffer_host_copy(mgpu_buffer *b, void **host) {
  if (!api_gpu(b->ctx)) { *host = (void *)(uintptr_t)b->addr; return MGPU_OK; }
  *host = mem_realloc(&b->ctx->alloc, NULL, 0, b->size ? (size_t)b->size : 1);
  if (!*host) return diag_set(&b->ctx->d, ERR_NOMEM, "");
  mgpu_status s = raw_read(b, 0, *host, b->size);
  if (s) { mem_free(&b->ctx->alloc, *host, b->size ? (size_t)b->size : 1); *host = NULL; }
  return s;
}

mgpu_status api_buffer_host_writeback(mgpu_buffer *b, void *host) {
  return api_gpu(b->ctx) ? raw_write(b, 0, host, b->size) : MGPU_OK;
}

void api_buffer_host_free(mgpu_buffer *b, void *host) {
  if (api_gpu(b->ctx) && host) mem_free(&b->ctx->alloc, host, b->size ? (size_t)b->size : 1);
}
