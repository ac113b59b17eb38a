/*
** fuzz_ir.c -- the builder, verifier, passes, PTX emitter and interpreter
** through the C API.  The input is a little program: kernel options, the
** parameters, then ops (name, operands picked among the values made so
** far, integer, number and text attributes from tables of telling values).
** A kernel that finishes is printed, compiled to PTX, queried and, when its
** arrays are small, launched in the interpreter under the work limit.
** Every call must end in MGPU_OK or an error with a message.
*/
#include <math.h>

#include "fuzz.h"
#include "../src/interp/interp.h"
#include "../src/ir/ir.h"

#define MAXVALS 1024
#define MAXOPS 200

static const int64_t special_ints[] = {
  128, 192, 256, 512, 1024, 4096, 65535, 65536, INT64_C(1) << 24, (INT64_C(1) << 24) + 1, INT32_MAX,
  (int64_t)INT32_MAX + 1, INT32_MIN, INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_C(1) << 40, INT64_C(1) << 62,
  160, 48, 96, 24, 200, 255, 1023, 232448, 144, 136, 3 * 64, 1 << 20, -128, -1024,
};

static const double numbers[] = {
  0, 1, -1, 2, 0.5, -0.0, 1e300, -1e300, INFINITY, -INFINITY, NAN, 3.5, 65504, 1e-40, 9007199254740992.0,
  9223372036854775808.0, -9223372036854775808.0, 18446744073709551616.0, 255, 256, 7, 100, -129, 4294967296.0,
};

static const char *const texts[] = {
  NULL, "", "wgmma", "splat", "strided(8)", "strided(1)", "wgmma.reduce(0)", "wgmma.reduce(1)",
  "tiled((64,8),(16,8),(8,8),(2));warp(-7);lane(-3,-2);vec(-1)", "tiling(8,64);swizzle(128)",
  "tiling(8,32);swizzle(64)", "tiling(8,16);swizzle(32)", "transpose(1,0)", "tiling(64)", "swizzle(128)",
  "{}", "{} {}", "x={} y={} z={}", "{{}} {}", "{", "}", "%s%n%d {}", "tiled((", "strided(0)", "strided(-1)",
  "tiling(0)", "tiling(99999999999999999999)", "wgmma.reduce(5)", "tiled((2),(1));warp(rep4);lane(rep32)",
  "levels2(-1:*,-2:8)", "wgmma_8bit", "tiling(1,1,1,1,1,1,1,1,1)", "transpose(0,0)", "tiling(8,64);swizzle(128);tiling(2)",
};

static const char *const names[] = { "k", "fuzz_kernel", "1bad", "", NULL, "a b", "_" };
static const int64_t dims[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 3, 5, 0, -1, 1 << 20, 64, 128 };
static const int32_t grid_dims[] = { 1, 1, 2, 3, 4, 1, 2, 0, 65536 };

static int64_t read_int(fz_reader *r) {
  uint8_t b = fz_byte(r);
  if (b < 0x80) return (int64_t)b - 8;
  if (b < 0xf0) return special_ints[(b - 0x80) % (sizeof special_ints / sizeof special_ints[0])];
  return (int64_t)fz_u64(r);
}

typedef struct prog {
  mgpu_ctx *ctx;
  mgpu_builder *b;
  int32_t vals[MAXVALS];
  int nvals;
} prog;

static void add_value(prog *p, int32_t v) {
  if (p->nvals < MAXVALS) p->vals[p->nvals++] = v;
  else p->vals[v % MAXVALS] = v;
}

/* A value id: usually one made recently, sometimes one that is not valid. */
static int32_t read_operand(fz_reader *r, const prog *p) {
  uint8_t b = fz_byte(r);
  if (b >= 0xf8 || !p->nvals) {
    static const int32_t bad[] = { 0, -1, 99999, INT32_MAX, INT32_MIN, 1, 2, 3 };
    return bad[b % 8];
  }
  return p->vals[p->nvals - 1 - b % p->nvals];
}

static void options(fz_reader *r, mgpu_kernel_options *o) {
  memset(o, 0, sizeof *o);
  uint8_t f = fz_byte(r);
  o->name = FZ_PICK(r, names);
  o->grid_rank = f % 4;
  if (f & 0x80) o->grid_rank = 4 + fz_byte(r) % 6;   /* 4..9: folded grids, and one too many */
  for (int i = 0; i < o->grid_rank && i < 8; i++) o->grid[i] = FZ_PICK(r, grid_dims);
  o->num_threads = 1 + fz_byte(r) % 3;
  if (f & 0x40) o->num_threads = fz_byte(r) % 10;
  o->approx_math = f >> 2 & 1;
  o->lowering_semantics = f >> 3 & 1;
  o->unsafe_no_auto_barriers = f >> 4 & 1;
  o->interpret = 1;
  if (f & 0x20) {
    o->cluster_rank = fz_byte(r) % 4;
    for (int i = 0; i < o->cluster_rank; i++) o->cluster[i] = 1 + fz_byte(r) % 3;
    o->reduction_scratch_bytes = (int32_t)read_int(r);
    o->disable_bounds_checks = fz_byte(r) & 1;
  }
}

static void params(fz_reader *r, prog *p) {
  int n = fz_byte(r) % 5;
  for (int i = 0; i < n; i++) {
    uint8_t rb = fz_byte(r);
    int role = rb % 4, rank = (rb >> 2) % 4;
    if (rb >> 4 == 0xf) rank = 9;
    int dtype = fz_byte(r) % 16;
    int64_t shape[9];
    for (int d = 0; d < rank; d++) shape[d] = FZ_PICK(r, dims);
    int32_t v = 0;
    mgpu_status s = mgpu_builder_param(p->b, role, dtype, shape, rank, &v);
    fz_check_status(p->ctx, s);
    if (!s) add_value(p, v);
  }
}

/* One op; false when the input is used up. */
static bool one_op(fz_reader *r, prog *p) {
  if (!r->n) return false;
  uint8_t code = fz_byte(r);
  const char *name = code % (IR__COUNT + 2) < IR__COUNT ? ir_optab[code % (IR__COUNT + 2)].name
                   : code % (IR__COUNT + 2) == IR__COUNT ? "else" : "no_such_op";
  uint8_t shape = fz_byte(r);
  int32_t opds[16];
  int64_t ints[16];
  int nopd = shape % 8, nints = (shape >> 3) % 12;
  if (shape >> 7 && nopd < 4) nopd += 8;   /* long operand lists (loops, prints) now and then */
  for (int i = 0; i < nopd; i++) opds[i] = read_operand(r, p);
  for (int i = 0; i < nints; i++) ints[i] = read_int(r);
  uint8_t extra = fz_byte(r);
  mgpu_op_args a = { opds, nopd, ints, nints, extra & 1 ? FZ_PICK(r, numbers) : 0, NULL };
  if (extra & 2) a.text = FZ_PICK(r, texts);
  if (extra & 4) {   /* a source location, as the front end sets them */
    static const char *const locs[] = { "fuzz.lua:1", "", NULL, "x.lua:99999999" };
    mgpu_status s = mgpu_builder_set_loc(p->b, FZ_PICK(r, locs));
    fz_check_status(p->ctx, s);
  }
  int32_t res[80], nres = 0;
  int32_t maxres = extra & 8 ? (int32_t)(extra >> 4) : 80;
  mgpu_status s = mgpu_builder_op(p->b, name, extra & 0x80 && !(extra & 1) ? NULL : &a, res, maxres, &nres);
  fz_check_status(p->ctx, s);
  if (!s)
    for (int i = 0; i < nres; i++) add_value(p, res[i]);
  if (extra == 0x40) {   /* look a value up */
    mgpu_value_info vi;
    fz_check_status(p->ctx, mgpu_builder_value(p->b, read_operand(r, p), &vi));
  }
  return true;
}

/* Launch k in the interpreter on small buffers (skipped when the arrays are large). */
static void launch(fz_reader *r, prog *p, mgpu_kernel *k) {
  int n = mgpu_kernel_param_count(k);
  if (n < 0 || n > 8) return;
  mgpu_arg args[8];
  mgpu_buffer *bufs[8] = { 0 };
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    mgpu_param_info pi;
    fz_check_status(p->ctx, mgpu_kernel_param(k, i, &pi));
    args[i] = (mgpu_arg){ .scalar = FZ_PICK(r, numbers) };
    if (pi.role == MGPU_PARAM_SCALAR) continue;
    uint64_t bytes = (uint64_t)mgpu_dtype_size(pi.value.dtype);
    for (int d = 0; d < pi.value.rank; d++) bytes *= (uint64_t)pi.value.shape[d];
    if (bytes > ((uint64_t)1 << 20) || (total += bytes) > ((uint64_t)4 << 20)) goto out;
    if (fz_byte(r) == 0xff && bytes > 1) bytes--;   /* a buffer one byte short */
    if (mgpu_buffer_alloc(p->ctx, bytes, &bufs[i])) goto out;
    mgpu_fill f = { MGPU_FILL_IOTA, pi.value.dtype, bytes / (uint64_t)mgpu_dtype_size(pi.value.dtype), 0, 1, 0 };
    if (pi.value.dtype != MGPU_PRED) fz_check_status(p->ctx, mgpu_buffer_fill(bufs[i], &f));
    args[i].buffer = bufs[i];
  }
  mgpu_launch_args la = { args, n, 0 };
  fz_check_status(p->ctx, mgpu_kernel_launch(k, &la));
out:
  for (int i = 0; i < n; i++) mgpu_buffer_release(bufs[i]);
}

static void finished(fz_reader *r, prog *p, mgpu_kernel *k) {
  const char *text = NULL;
  fz_check_status(p->ctx, mgpu_kernel_text(k, MGPU_TEXT_IR, &text));
  if (getenv("MGPU_FUZZ_VERBOSE")) fputs(text, stderr);
  mgpu_status s = mgpu_kernel_text(k, MGPU_TEXT_PTX, &text);
  fz_check_status(p->ctx, s);
  if (!s && (!text || !strstr(text, ".target sm_90a"))) abort();
  for (int i = 0; i < p->nvals; i++) {
    char lay[256];
    fz_check_status(p->ctx, mgpu_kernel_layout(k, p->vals[i], lay, sizeof lay));
  }
  mgpu_kernel_resources res;
  fz_check_status(p->ctx, mgpu_kernel_resources_get(k, &res));
  launch(r, p, k);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  interp_set_work_limit(FZ_WORK_LIMIT);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_reader r = { data, size };
  size_t live;
  prog p;
  memset(&p, 0, sizeof p);
  if (!(p.ctx = fz_ctx(&live))) abort();
  mgpu_kernel_options o;
  options(&r, &o);
  mgpu_status s = mgpu_builder_create(p.ctx, &o, &p.b);
  fz_check_status(p.ctx, s);
  if (!s) {
    params(&r, &p);
    for (int i = 0; i < MAXOPS && one_op(&r, &p); i++) {}
    mgpu_kernel *k = NULL;
    s = mgpu_builder_finish(p.b, &k);
    fz_check_status(p.ctx, s);
    if (!s) {
      finished(&r, &p, k);
      int32_t res[4], nres;
      if (mgpu_builder_op(p.b, "thread_id", NULL, res, 4, &nres) != MGPU_ERR_STATE) abort();   /* finished */
      mgpu_kernel_release(k);
    }
    mgpu_builder_release(p.b);
  }
  mgpu_ctx_release(p.ctx);
  if (live) abort();   /* everything went back through the allocator */
  return 0;
}
