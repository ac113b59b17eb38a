/*
** script_test.c -- the script layer (libmgpu_script) and the allocator
** hook: scripts run from strings and files, kernels are fetched by name,
** Lua errors come back as MGPU_ERR_SCRIPT with their location, and every
** byte the context and its Lua state allocate goes through the caller's
** allocator and is returned.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgpu.h"

static int failed, checks;
#define CHECK(c) do { checks++; if (!(c)) { failed++; fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); } } while (0)
#define CONTAINS(h, n) do { checks++; if (!strstr((h), (n))) { failed++; fprintf(stderr, "%s:%d: \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, (h), (n)); } } while (0)

static long live_blocks;
static size_t live_bytes;

static void *counting_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  (void)ud;
  if (p) { live_blocks--; live_bytes -= osize; }
  if (nsize == 0) { free(p); return NULL; }
  void *q = realloc(p, nsize);
  if (q) { live_blocks++; live_bytes += nsize; }
  else if (p) { live_blocks++; live_bytes += osize; }
  return q;
}

int main(void) {
  mgpu_ctx_options o = { MGPU_MODE_INTERPRET, 0, counting_alloc, NULL };
  mgpu_ctx *ctx = NULL;
  CHECK(mgpu_ctx_create(&o, &ctx) == MGPU_OK);
  CHECK(live_blocks > 0);                       /* the context itself came from the hook */
  mgpu_script *s = NULL;
  CHECK(mgpu_script_create(ctx, &s) == MGPU_OK);
  long with_lua = live_blocks;
  CHECK(with_lua > 10);                         /* so did the Lua state */

  CHECK(mgpu_script_run_string(s, "x = 1 +", "=oops") == MGPU_ERR_SCRIPT);
  CONTAINS(mgpu_errmsg(ctx), "oops:1: unexpected symbol near <eof>");
  CHECK(mgpu_script_run_string(s, "error('from the script')", "=boom") == MGPU_ERR_SCRIPT);
  CONTAINS(mgpu_errmsg(ctx), "boom:1: from the script");
  CHECK(mgpu_script_run_file(s, "/nonexistent/k.lua", NULL, 0) == MGPU_ERR_SCRIPT);
  CONTAINS(mgpu_errmsg(ctx), "cannot open /nonexistent/k.lua");

  const char *code =
    "local mgpu = require 'mgpu'\n"
    "lib = { neg = mgpu.kernel{ name = 'neg', grid = { 1 },\n"
    "  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,\n"
    "  body = function(x, o) o:store(-x:load()) end } }\n"
    "not_a_kernel = 42\n";
  CHECK(mgpu_script_run_string(s, code, "=lib") == MGPU_OK);
  mgpu_value_info sig[1] = { { MGPU_VALUE_REF, MGPU_I32, MGPU_SPACE_GMEM, 1, { 300 } } };
  mgpu_kernel *k = NULL;
  CHECK(mgpu_script_kernel(s, "lib.neg", sig, 1, &k) == MGPU_OK && k);
  mgpu_kernel *none = NULL;
  CHECK(mgpu_script_kernel(s, "not_a_kernel", sig, 1, &none) == MGPU_ERR_SCRIPT && !none);
  CONTAINS(mgpu_errmsg(ctx), "'not_a_kernel' is neither an mgpu kernel nor a function that returns one (number)");
  CHECK(mgpu_script_kernel(s, "missing.deeper", sig, 1, &none) == MGPU_ERR_SCRIPT);
  CONTAINS(mgpu_errmsg(ctx), "does not name a kernel");
  mgpu_value_info bad[1] = { { MGPU_VALUE_REF, MGPU_F32, MGPU_SPACE_GMEM, 1, { 128 } } };
  mgpu_kernel *k2 = NULL;
  CHECK(mgpu_script_kernel(s, "lib.neg", bad, 1, &k2) == MGPU_OK);   /* another signature, another trace */
  mgpu_kernel_release(k2);
  CHECK(mgpu_kernel_param_count(k) == 2);
  mgpu_value_info two[2] = { sig[0], sig[0] };   /* a mistake in the call: placed at the kernel's definition */
  CHECK(mgpu_script_kernel(s, "lib.neg", two, 2, &none) == MGPU_ERR_SCRIPT);
  CONTAINS(mgpu_errmsg(ctx), "lib:2: kernel 'neg' takes 1 input, got 2 arguments");

  /* a function of the argument specs that returns the kernel for them (one built per shape) */
  const char *factory =
    "local mgpu = require 'mgpu'\n"
    "built = 0\n"
    "function make(x, s)\n"
    "  assert(x.shape[1] == 64 and s.dtype == 'f32', 'specs reach the function')\n"
    "  built = built + 1\n"
    "  return mgpu.kernel{ name = 'scaled', grid = { 1 },\n"
    "    out_shape = { mgpu.shape({ x.shape[1] }, 'f32'), mgpu.shape({ 2 }, 'i32') },\n"
    "    body = function(x, s, o, p) o:store(x:load():astype('f32') * s) end }\n"
    "end\n"
    "function broken() return 7 end\n"
    "keeps = mgpu.kernel{ name = 'keeps', grid = { 1 }, out_shape = mgpu.shape({ 16 }, 'f32'),\n"
    "  scratch_shapes = { mgpu.GMEM({ 16 }, 'f32') }, body = function(o, w) o:store(w:load()) end }\n";
  CHECK(mgpu_script_run_string(s, factory, "=factory") == MGPU_OK);
  mgpu_value_info fsig[2] = { { MGPU_VALUE_REF, MGPU_I16, MGPU_SPACE_GMEM, 1, { 64 } },
                              { MGPU_VALUE_SCALAR, MGPU_F32, MGPU_SPACE_NONE, 0, { 0 } } };
  mgpu_kernel *fk = NULL;
  CHECK(mgpu_script_kernel(s, "make", fsig, 2, &fk) == MGPU_OK && fk);
  mgpu_param_info fp;
  CHECK(mgpu_kernel_param_count(fk) == 4);
  CHECK(mgpu_kernel_param(fk, 1, &fp) == MGPU_OK && fp.role == MGPU_PARAM_SCALAR && fp.value.dtype == MGPU_F32);
  CHECK(mgpu_kernel_param(fk, 3, &fp) == MGPU_OK && fp.role == MGPU_PARAM_OUTPUT && fp.value.dtype == MGPU_I32 &&
        fp.value.rank == 1 && fp.value.shape[0] == 2);
  mgpu_kernel_release(fk);
  fsig[0].shape[0] = 65;
  CHECK(mgpu_script_kernel(s, "make", fsig, 2, &fk) == MGPU_ERR_SCRIPT && !fk);
  CONTAINS(mgpu_errmsg(ctx), "specs reach the function");
  CHECK(mgpu_script_kernel(s, "broken", fsig, 2, &fk) == MGPU_ERR_SCRIPT);
  CONTAINS(mgpu_errmsg(ctx), "the function 'broken' returned number, not an mgpu kernel");
  /* GMEM scratch lives in the Lua call: a C caller could not provide it */
  CHECK(mgpu_script_kernel(s, "keeps", NULL, 0, &fk) == MGPU_ERR_SCRIPT && !fk);
  CONTAINS(mgpu_errmsg(ctx), "kernel 'keeps' launches with arrays kept between launches (mgpu.GMEM scratch or semaphores)");

  /* the kernel outlives the script that defined it */
  mgpu_script_release(s);
  CHECK(live_blocks < with_lua);
  mgpu_buffer *x = NULL, *out = NULL;
  CHECK(mgpu_buffer_alloc(ctx, 1200, &x) == MGPU_OK && mgpu_buffer_alloc(ctx, 1200, &out) == MGPU_OK);
  mgpu_fill f = { MGPU_FILL_IOTA, MGPU_I32, 300, -7, 3, 0 };
  mgpu_buffer_fill(x, &f);
  mgpu_launch_args la = { (mgpu_arg[]){ { .buffer = x }, { .buffer = out } }, 2, 0 };
  CHECK(mgpu_kernel_launch(k, &la) == MGPU_OK);
  double v[2];
  CHECK(mgpu_buffer_get_f64(out, MGPU_I32, 298, 2, v) == MGPU_OK && v[0] == 7 - 3 * 298 && v[1] == 7 - 3 * 299);
  mgpu_buffer_release(x);
  mgpu_buffer_release(out);
  mgpu_kernel_release(k);
  mgpu_ctx_release(ctx);
  CHECK(live_blocks == 0 && live_bytes == 0);   /* everything returned through the hook */
  printf("%d passed, %d failed\n", checks - failed, failed);
  return failed ? 1 : 0;
}
