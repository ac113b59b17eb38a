/*
** embed.c -- mgpu from a C program: run a Lua file that defines a kernel,
** fetch the kernel for concrete argument shapes, and launch it twice on
** buffers this program allocates and fills, checking both results.
**
**   embed [kernels.lua] [n]      (default examples/embed_kernels.lua, 10000)
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <mgpu.h>

/* Report a failed call with the engine's message; returns 1 on failure. */
static int failed(mgpu_ctx *ctx, mgpu_status st, const char *what) {
  if (st == MGPU_OK) return 0;
  fprintf(stderr, "embed: %s failed (status %d): %s\n", what, (int)st, mgpu_errmsg(ctx));
  return 1;
}

/* One launch of scale_add with fresh data; returns ||out - ref|| / ||ref||
** (NaN if any output was not written). */
static double run_once(mgpu_ctx *ctx, mgpu_kernel *k, mgpu_buffer *x, mgpu_buffer *y, mgpu_buffer *out,
                       int64_t n, float a, unsigned seed) {
  float *hx = malloc(sizeof(float) * (size_t)n), *hy = malloc(sizeof(float) * (size_t)n);
  float *ho = malloc(sizeof(float) * (size_t)n);
  double worst = INFINITY;
  if (!hx || !hy || !ho) goto done;
  srand(seed);
  for (int64_t i = 0; i < n; i++) {
    hx[i] = (float)rand() / RAND_MAX - 0.5f;
    hy[i] = (float)rand() / RAND_MAX * 4.0f;
    ho[i] = NAN;   /* poison */
  }
  if (failed(ctx, mgpu_buffer_write(x, 0, hx, sizeof(float) * (uint64_t)n), "writing x") ||
      failed(ctx, mgpu_buffer_write(y, 0, hy, sizeof(float) * (uint64_t)n), "writing y") ||
      failed(ctx, mgpu_buffer_write(out, 0, ho, sizeof(float) * (uint64_t)n), "poisoning out"))
    goto done;
  mgpu_arg args[4] = { { .scalar = a }, { .buffer = x }, { .buffer = y }, { .buffer = out } };
  mgpu_launch_args launch = { args, 4, 0 };
  if (failed(ctx, mgpu_kernel_launch(k, &launch), "launching scale_add") ||
      failed(ctx, mgpu_buffer_read(out, 0, ho, sizeof(float) * (uint64_t)n), "reading out"))
    goto done;
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    double want = (double)a * hx[i] + hy[i];
    num += (ho[i] - want) * (ho[i] - want);
    den += want * want;
  }
  worst = sqrt(num / den);
done:
  free(hx);
  free(hy);
  free(ho);
  return worst;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "examples/embed_kernels.lua";
  int64_t n = argc > 2 ? atoll(argv[2]) : 10000;
  if (n < 1) { fprintf(stderr, "embed: n must be at least 1\n"); return 2; }

  mgpu_ctx *ctx = NULL;
  if (mgpu_ctx_create(NULL, &ctx) != MGPU_OK) {
    fprintf(stderr, "embed: no context: %s\n", mgpu_errmsg(NULL));
    return 1;
  }
  mgpu_device_info info;
  mgpu_device_query(ctx, &info);
  printf("embed: mgpu %s, %s\n", mgpu_version(),
         info.mode == MGPU_MODE_GPU ? info.name : "no GPU: interpret mode");

  int rc = 1;
  mgpu_script *script = NULL;
  mgpu_kernel *k = NULL;
  mgpu_buffer *x = NULL, *y = NULL, *out = NULL;
  if (failed(ctx, mgpu_script_create(ctx, &script), "creating the script state") ||
      failed(ctx, mgpu_script_run_file(script, path, NULL, 0), path))
    goto done;

  /* scale_add(a: f32 scalar, x: f32[n], y: f32[n]) -> f32[n] */
  mgpu_value_info sig[3] = {
    { MGPU_VALUE_SCALAR, MGPU_F32, MGPU_SPACE_NONE, 0, { 0 } },
    { MGPU_VALUE_REF, MGPU_F32, MGPU_SPACE_GMEM, 1, { n } },
    { MGPU_VALUE_REF, MGPU_F32, MGPU_SPACE_GMEM, 1, { n } },
  };
  if (failed(ctx, mgpu_script_kernel(script, "scale_add", sig, 3, &k), "fetching scale_add")) goto done;
  printf("embed: scale_add has %d parameters\n", (int)mgpu_kernel_param_count(k));

  uint64_t bytes = sizeof(float) * (uint64_t)n;
  if (failed(ctx, mgpu_buffer_alloc(ctx, bytes, &x), "allocating x") ||
      failed(ctx, mgpu_buffer_alloc(ctx, bytes, &y), "allocating y") ||
      failed(ctx, mgpu_buffer_alloc(ctx, bytes, &out), "allocating out"))
    goto done;

  /* A mistake is reported, not fatal: one argument too few. */
  mgpu_arg short_args[3] = { { .scalar = 1.0 }, { .buffer = x }, { .buffer = y } };
  mgpu_launch_args bad = { short_args, 3, 0 };
  mgpu_status st = mgpu_kernel_launch(k, &bad);
  printf("embed: a launch with 3 arguments is refused: %s\n", st ? mgpu_errmsg(ctx) : "(accepted?)");
  if (st == MGPU_OK) goto done;

  double e1 = run_once(ctx, k, x, y, out, n, 2.5f, 1);
  double e2 = run_once(ctx, k, x, y, out, n, -0.75f, 2);
  printf("embed: launch 1 (a = 2.5): relative error %.2e\n", e1);
  printf("embed: launch 2 (a = -0.75): relative error %.2e\n", e2);
  if (e1 <= 1e-6 && e2 <= 1e-6) {
    printf("embed: ok\n");
    rc = 0;
  } else {
    fprintf(stderr, "embed: results differ from the reference\n");
  }
done:
  mgpu_buffer_release(x);
  mgpu_buffer_release(y);
  mgpu_buffer_release(out);
  mgpu_kernel_release(k);
  mgpu_script_release(script);
  mgpu_ctx_release(ctx);
  return rc;
}
