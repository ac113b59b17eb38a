/*
** test_api.c -- the public C API: handle and argument errors return a
** status with a message and never abort; buffers, fills and host arrays.
*/
#include <math.h>
#include <stdlib.h>

#include "mgpu.h"
#include "test.h"

static mgpu_ctx *interp_ctx(void) {
  mgpu_ctx_options o = { MGPU_MODE_INTERPRET, 0, NULL, NULL };
  mgpu_ctx *c = NULL;
  CHECK(mgpu_ctx_create(&o, &c) == MGPU_OK && c);
  return c;
}

void test_api_errors(void) {
  mgpu_ctx_options bad = { 42, 0, NULL, NULL };
  mgpu_ctx *c = NULL;
  CHECK(mgpu_ctx_create(&bad, &c) == MGPU_ERR_ARG && c == NULL);
  CHECK_CONTAINS(mgpu_errmsg(NULL), "mode 42");
  c = interp_ctx();
  mgpu_device_info info;
  CHECK(mgpu_device_query(c, &info) == MGPU_OK && info.mode == MGPU_MODE_INTERPRET);
  CHECK(mgpu_device_query(c, NULL) == MGPU_ERR_ARG);
  CHECK(mgpu_buffer_alloc(NULL, 16, NULL) == MGPU_ERR_ARG);
  CHECK(mgpu_buffer_read(NULL, 0, NULL, 0) == MGPU_ERR_ARG);
  CHECK(mgpu_kernel_launch(NULL, NULL) == MGPU_ERR_ARG);
  CHECK(mgpu_builder_op(NULL, "add", NULL, NULL, 0, NULL) == MGPU_ERR_ARG);
  CHECK(mgpu_empty_cache(NULL) == MGPU_ERR_ARG);
  CHECK(mgpu_empty_cache(c) == MGPU_OK);     /* no GPU: nothing to hand back */
  /* a released handle is recognised as invalid */
  mgpu_buffer *b = NULL;
  CHECK(mgpu_buffer_alloc(c, UINT64_C(1) << 62, &b) == MGPU_ERR_NOMEM && !b);   /* says what was free */
  CHECK_CONTAINS(mgpu_errmsg(c), "out of memory allocating 4611686018427387904 bytes (");
  CHECK_CONTAINS(mgpu_errmsg(c), " memory");
  CHECK(mgpu_buffer_alloc(c, 64, &b) == MGPU_OK);
  char raw[64];
  CHECK(mgpu_buffer_read(b, 60, raw, 8) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "range [60, 68) is outside the buffer of 64 bytes");
  mgpu_buffer_release(b);
  /* builder options */
  mgpu_kernel_options ko = { "bad name", 1, { 1, 0, 0 }, 1, 0, 0, 0, 0, 0, 0, { 0, 0, 0 }, 0, 0 };
  mgpu_builder *bl = NULL;
  CHECK(mgpu_builder_create(c, &ko, &bl) == MGPU_ERR_ARG && !bl);
  CHECK_CONTAINS(mgpu_errmsg(c), "kernel name may contain only");
  ko.name = "k";
  ko.grid[0] = 0;
  CHECK(mgpu_builder_create(c, &ko, &bl) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "grid[1] = 0");
  ko.grid_rank = 9;                                  /* ranks past 3 fold into z, up to 8 */
  CHECK(mgpu_builder_create(c, &ko, &bl) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "at most 8 dimensions");
  ko.grid_rank = 4;
  ko.grid[0] = 300; ko.grid[1] = 300; ko.grid[2] = 2; ko.grid[3] = 2;
  CHECK(mgpu_builder_create(c, &ko, &bl) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "axes 0, 1 fold into CUDA's z dimension, 90000 blocks (at most 65535)");
  ko.grid[1] = 200;
  ko.cluster_rank = 3; ko.cluster[0] = 1; ko.cluster[1] = 1; ko.cluster[2] = 2;
  CHECK(mgpu_builder_create(c, &ko, &bl) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "120000 blocks counting the cluster");
  ko.cluster_rank = 0;
  ko.grid_rank = 1;
  ko.grid[0] = 2;
  ko.num_threads = 9;
  CHECK(mgpu_builder_create(c, &ko, &bl) == MGPU_ERR_ARG);
  ko.num_threads = 1;
  ko.grid[0] = 1;   /* (every block stores the whole output: two would race) */
  CHECK(mgpu_builder_create(c, &ko, &bl) == MGPU_OK);
  int64_t shape[1] = { 256 };
  int32_t x, o;
  CHECK(mgpu_builder_param(bl, MGPU_PARAM_INPUT, MGPU_F32, shape, 1, &x) == MGPU_OK);
  CHECK(mgpu_builder_param(bl, MGPU_PARAM_OUTPUT, MGPU_F32, shape, 1, &o) == MGPU_OK);
  CHECK(mgpu_builder_param(bl, MGPU_PARAM_INPUT, 99, shape, 1, &x) == MGPU_ERR_ARG);
  int32_t res[4], nres;
  mgpu_op_args la = { &x, 1, NULL, 0, 0, NULL };
  CHECK(mgpu_builder_op(bl, "load", &la, res, 4, &nres) == MGPU_OK && nres == 1);
  int32_t xl = res[0];
  mgpu_op_args sa = { (int32_t[]){ o, xl }, 2, NULL, 0, 0, NULL };
  CHECK(mgpu_builder_op(bl, "store", &sa, res, 4, &nres) == MGPU_OK && nres == 0);
  mgpu_value_info vi;
  CHECK(mgpu_builder_value(bl, xl, &vi) == MGPU_OK && vi.kind == MGPU_VALUE_ARRAY && vi.shape[0] == 256);
  CHECK(mgpu_builder_value(bl, 9999, &vi) == MGPU_ERR_ARG);
  mgpu_kernel *k = NULL;
  CHECK(mgpu_builder_finish(bl, &k) == MGPU_OK && k);
  mgpu_kernel *k2 = NULL;
  CHECK(mgpu_builder_finish(bl, &k2) == MGPU_ERR_STATE && !k2);
  mgpu_builder_release(bl);
  /* launch argument checks */
  mgpu_buffer *small = NULL, *big = NULL;
  mgpu_buffer_alloc(c, 100, &small);
  mgpu_buffer_alloc(c, 1024, &big);
  mgpu_launch_args one = { (mgpu_arg[]){ { .buffer = big } }, 1, 0 };
  CHECK(mgpu_kernel_launch(k, &one) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "expects 2 arguments");
  mgpu_launch_args two = { (mgpu_arg[]){ { .buffer = big }, { .buffer = small } }, 2, 0 };
  CHECK(mgpu_kernel_launch(k, &two) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "argument 2 holds 100 bytes but parameter 2 (gmem f32[256]) needs 1024");
  mgpu_launch_args dead = { (mgpu_arg[]){ { .buffer = big }, { .buffer = NULL } }, 2, 0 };
  CHECK(mgpu_kernel_launch(k, &dead) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "argument 2 (gmem f32[256]) has neither a valid buffer handle nor an address");
  mgpu_param_info pi;
  CHECK(mgpu_kernel_param_count(k) == 2);
  CHECK(mgpu_kernel_param(k, 1, &pi) == MGPU_OK && pi.role == MGPU_PARAM_OUTPUT && pi.value.shape[0] == 256);
  CHECK(mgpu_kernel_param(k, 2, &pi) == MGPU_ERR_ARG);
  mgpu_buffer *out = NULL;
  mgpu_buffer_alloc(c, 1024, &out);
  mgpu_fill f = { MGPU_FILL_IOTA, MGPU_F32, 256, 1, 2, 0 };
  CHECK(mgpu_buffer_fill(big, &f) == MGPU_OK);
  mgpu_launch_args ok = { (mgpu_arg[]){ { .buffer = big }, { .buffer = out } }, 2, 0 };
  CHECK(mgpu_kernel_launch(k, &ok) == MGPU_OK);
  double v[3];
  CHECK(mgpu_buffer_get_f64(out, MGPU_F32, 253, 3, v) == MGPU_OK && v[0] == 507 && v[2] == 511);
  /* arrays by address: another framework's memory (host memory when interpreting), no buffers */
  _Alignas(16) float hin[257], hout[257];
  for (int i = 0; i < 256; i++) hin[i] = (float)i - 100, hout[i] = -1;
  mgpu_launch_args byaddr = { (mgpu_arg[]){ { .address = (uint64_t)(uintptr_t)hin }, { .address = (uint64_t)(uintptr_t)hout } },
                              2, 0 };
  CHECK(mgpu_kernel_launch(k, &byaddr) == MGPU_OK);
  CHECK(hout[0] == -100 && hout[255] == 155);
  mgpu_launch_args mixed = { (mgpu_arg[]){ { .buffer = big }, { .address = (uint64_t)(uintptr_t)hout } }, 2, 0 };
  CHECK(mgpu_kernel_launch(k, &mixed) == MGPU_OK && hout[0] == 1 && hout[255] == 511);
  mgpu_launch_args both = { (mgpu_arg[]){ { .buffer = big, .address = (uint64_t)(uintptr_t)hin }, { .buffer = out } }, 2, 0 };
  CHECK(mgpu_kernel_launch(k, &both) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "argument 1 gives both a buffer and an address");
  mgpu_launch_args skew = { (mgpu_arg[]){ { .address = (uint64_t)(uintptr_t)(hin + 1) }, { .buffer = out } }, 2, 0 };
  CHECK(mgpu_kernel_launch(k, &skew) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "argument 1 is not 16-byte aligned");
  const char *text = NULL;
  CHECK(mgpu_kernel_text(k, MGPU_TEXT_PTX, &text) == MGPU_OK);
  CHECK_CONTAINS(text, ".target sm_90a");
  CHECK(mgpu_kernel_text(k, 7, &text) == MGPU_ERR_ARG);
  /* a replaced PTX: the interpreter runs the IR; the written PTX stays what mgpu_kernel_text gives */
  CHECK(mgpu_kernel_set_ptx(NULL, "x") == MGPU_ERR_ARG);
  CHECK(mgpu_kernel_set_ptx(k, "// not PTX") == MGPU_OK && mgpu_kernel_set_ptx(k, "// again") == MGPU_OK);
  CHECK(mgpu_kernel_launch(k, &ok) == MGPU_OK);
  CHECK(mgpu_kernel_text(k, MGPU_TEXT_PTX, &text) == MGPU_OK);
  CHECK_CONTAINS(text, ".target sm_90a");
  CHECK(mgpu_kernel_set_ptx(k, NULL) == MGPU_OK);
  /* faults and the watchdog: an interpreting context is never lost; a timeout bounds launches */
  CHECK(!mgpu_ctx_lost(c) && mgpu_ctx_recover(c) == MGPU_OK);
  CHECK(mgpu_ctx_set_timeout(c, -1) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "ms must be 0 (no timeout) or positive");
  CHECK(mgpu_ctx_set_timeout(c, 60000) == MGPU_OK && mgpu_kernel_launch(k, &ok) == MGPU_OK);
  CHECK(mgpu_ctx_set_timeout(c, 0) == MGPU_OK);
  mgpu_kernel_release(k);
  mgpu_buffer_release(small);
  mgpu_buffer_release(big);
  mgpu_buffer_release(out);
  mgpu_ctx_release(c);
  CHECK(mgpu_abi_version() == MGPU_ABI_VERSION);
}

void test_api_buffers(void) {
  mgpu_ctx *c = interp_ctx();
  mgpu_buffer *a = NULL, *b = NULL;
  CHECK(mgpu_buffer_alloc(c, 4000, &a) == MGPU_OK);
  CHECK(mgpu_buffer_alloc(c, 4000, &b) == MGPU_OK);
  mgpu_fill f = { MGPU_FILL_NORMAL, MGPU_F32, 1000, 0, 1, 1234 };
  CHECK(mgpu_buffer_fill(a, &f) == MGPU_OK);
  CHECK(mgpu_buffer_fill(b, &f) == MGPU_OK);
  double x[1000], y[1000];
  mgpu_buffer_get_f64(a, MGPU_F32, 0, 1000, x);
  mgpu_buffer_get_f64(b, MGPU_F32, 0, 1000, y);
  int same = 1;
  double mean = 0, var = 0;
  for (int i = 0; i < 1000; i++) { same &= x[i] == y[i]; mean += x[i]; }
  mean /= 1000;
  for (int i = 0; i < 1000; i++) var += (x[i] - mean) * (x[i] - mean);
  var /= 1000;
  CHECK(same);                                  /* the same seed reproduces */
  CHECK(fabs(mean) < 0.15 && fabs(var - 1) < 0.2);
  f.seed = 1235;
  mgpu_buffer_fill(b, &f);
  mgpu_buffer_get_f64(b, MGPU_F32, 0, 1000, y);
  int differ = 0;
  for (int i = 0; i < 1000; i++) differ += x[i] != y[i];
  CHECK(differ > 990);                          /* another seed does not */
  f.kind = MGPU_FILL_UNIFORM; f.dtype = MGPU_BF16; f.count = 2000; f.a = -1; f.b = 1;
  CHECK(mgpu_buffer_fill(a, &f) == MGPU_OK);
  mgpu_buffer_get_f64(a, MGPU_BF16, 0, 1000, x);
  int inrange = 1;
  for (int i = 0; i < 1000; i++) inrange &= x[i] >= -1 && x[i] <= 1;
  CHECK(inrange);
  f.count = 2001;
  CHECK(mgpu_buffer_fill(a, &f) == MGPU_ERR_ARG);
  /* values that do not fit an integer dtype are refused, naming the element (they once truncated and saturated) */
  double in[3] = { 1, -2, 1e9 };
  CHECK(mgpu_buffer_set_f64(a, MGPU_I16, 10, 3, in) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "mgpu_buffer_set_f64: element 12 is 1000000000, out of range (i16 holds integers "
                                 "from -32768 to 32767)");
  static const double misfits[] = { 2.7, NAN, INFINITY, -INFINITY, 1e300, -0.5 };
  static const char *const said[] = { "is 2.7, not an integer", "is nan, not an integer", "is inf, out of range",
                                      "is -inf, out of range", "is 1e+300, out of range", "is -0.5, not an integer" };
  for (int i = 0; i < 6; i++) {
    CHECK(mgpu_buffer_set_f64(a, MGPU_U64, 0, 1, &misfits[i]) == MGPU_ERR_ARG);
    CHECK_CONTAINS(mgpu_errmsg(c), said[i]);
  }
  double edges[4] = { 0x1p64 - 2048, 0, -0x1p63, 0x1p63 - 1024 };
  CHECK(mgpu_buffer_set_f64(a, MGPU_U64, 0, 2, edges) == MGPU_OK);
  CHECK(mgpu_buffer_set_f64(a, MGPU_I64, 0, 2, edges + 2) == MGPU_OK);
  CHECK(mgpu_buffer_set_f64(a, MGPU_U64, 0, 1, edges + 2) == MGPU_ERR_ARG);   /* -2^63 */
  in[2] = 32767;
  CHECK(mgpu_buffer_set_f64(a, MGPU_I16, 10, 3, in) == MGPU_OK);
  CHECK(mgpu_buffer_get_f64(a, MGPU_I16, 10, 3, x) == MGPU_OK && x[0] == 1 && x[1] == -2 && x[2] == 32767);
  mgpu_fill bad = { MGPU_FILL_VALUE, MGPU_I32, 4, 1e10, 0, 0 };
  CHECK(mgpu_buffer_fill(a, &bad) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "mgpu_buffer_fill: value 10000000000 is out of range (i32 holds integers from "
                                 "-2147483648 to 2147483647)");
  bad = (mgpu_fill){ MGPU_FILL_IOTA, MGPU_U8, 300, 0, 1, 0 };
  CHECK(mgpu_buffer_fill(a, &bad) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "mgpu_buffer_fill: last element 299 is out of range (u8 holds integers from 0 to 255)");
  bad.b = 0.5;
  CHECK(mgpu_buffer_fill(a, &bad) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "mgpu_buffer_fill: step 0.5 is not an integer");
  bad = (mgpu_fill){ MGPU_FILL_UNIFORM, MGPU_I8, 10, -200, 0, 1 };
  CHECK(mgpu_buffer_fill(a, &bad) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "mgpu_buffer_fill: low bound -200 is out of range (i8");
  bad.a = -128, bad.b = 128;                    /* [-128, 128): every i8 */
  CHECK(mgpu_buffer_fill(a, &bad) == MGPU_OK);
  CHECK(mgpu_buffer_copy(b, 0, a, 20, 8) == MGPU_OK);
  CHECK(mgpu_buffer_get_f64(b, MGPU_I16, 0, 1, y) == MGPU_OK && y[0] == 1);
  mgpu_buffer *w = NULL;
  CHECK(mgpu_buffer_wrap(c, mgpu_buffer_address(a), 64, &w) == MGPU_OK);
  CHECK(mgpu_buffer_get_f64(w, MGPU_I16, 10, 1, y) == MGPU_OK && y[0] == 1);
  mgpu_buffer_release(w);                       /* does not free a's memory */
  CHECK(mgpu_buffer_get_f64(a, MGPU_I16, 10, 1, y) == MGPU_OK && y[0] == 1);
  /* exact 64-bit integers (a double holds them only up to 2^53) */
  int64_t big[4] = { (INT64_C(1) << 53) + 1, INT64_MAX, INT64_MIN, -1 }, got[4];
  CHECK(mgpu_buffer_set_i64(a, MGPU_I64, 0, 4, big) == MGPU_OK);
  CHECK(mgpu_buffer_get_i64(a, MGPU_I64, 0, 4, got) == MGPU_OK && !memcmp(got, big, sizeof big));
  CHECK(mgpu_buffer_set_i64(a, MGPU_U64, 0, 4, big) == MGPU_OK);   /* u64: bit patterns */
  CHECK(mgpu_buffer_get_i64(a, MGPU_U64, 0, 4, got) == MGPU_OK && !memcmp(got, big, sizeof big));
  CHECK(mgpu_buffer_get_f64(a, MGPU_U64, 3, 1, x) == MGPU_OK && x[0] == 0x1p64);
  int64_t small[2] = { -128, 128 };
  CHECK(mgpu_buffer_set_i64(a, MGPU_I8, 0, 2, small) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "mgpu_buffer_set_i64: element 1 is 128, out of range (i8 holds integers from -128 to 127)");
  CHECK(mgpu_buffer_get_i64(a, MGPU_I8, 0, 1, got) == MGPU_OK && got[0] == 1);   /* nothing was written (2^53 + 1: 1) */
  CHECK(mgpu_buffer_get_i64(a, MGPU_F32, 0, 1, got) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "mgpu_buffer_get_i64: f32 is not an integer dtype");
  mgpu_buffer_release(a);
  mgpu_buffer_release(b);
  mgpu_ctx_release(c);
}

void test_host_arrays(void) {
  mgpu_ctx *c = interp_ctx();
  mgpu_host *a = NULL, *row = NULL, *sum = NULL, *mx = NULL, *t = NULL, *m = NULL;
  int64_t s23[2] = { 2, 3 }, s3[1] = { 3 }, s32[2] = { 3, 2 };
  CHECK(mgpu_host_create(c, s23, 2, &a) == MGPU_OK);
  CHECK(mgpu_host_create(c, s3, 1, &row) == MGPU_OK);
  double *av = mgpu_host_data(a), *rv = mgpu_host_data(row);
  for (int i = 0; i < 6; i++) av[i] = i;           /* [[0,1,2],[3,4,5]] */
  rv[0] = 10; rv[1] = 20; rv[2] = 30;
  CHECK(mgpu_host_map(MGPU_HOST_ADD, a, row, 0, &t) == MGPU_OK);   /* broadcast over rows */
  CHECK(mgpu_host_data(t)[4] == 24 && mgpu_host_rank(t) == 2 && mgpu_host_dim(t, 1) == 3);
  CHECK(mgpu_host_reduce(MGPU_HOST_SUM, a, -1, 0, &sum) == MGPU_OK);
  CHECK(mgpu_host_rank(sum) == 1 && mgpu_host_data(sum)[0] == 3 && mgpu_host_data(sum)[1] == 12);
  CHECK(mgpu_host_reduce(MGPU_HOST_MAX, a, 0, 1, &mx) == MGPU_OK);
  CHECK(mgpu_host_dim(mx, 0) == 1 && mgpu_host_data(mx)[2] == 5);
  mgpu_host *b = NULL;
  CHECK(mgpu_host_create(c, s32, 2, &b) == MGPU_OK);
  for (int i = 0; i < 6; i++) mgpu_host_data(b)[i] = 1;
  CHECK(mgpu_host_matmul(a, b, &m) == MGPU_OK && mgpu_host_data(m)[0] == 3 && mgpu_host_data(m)[3] == 12);
  mgpu_host *tr = NULL;
  CHECK(mgpu_host_transpose(a, &tr) == MGPU_OK && mgpu_host_dim(tr, 0) == 3 && mgpu_host_data(tr)[1] == 3);
  mgpu_host *m2 = NULL;
  CHECK(mgpu_host_transpose(row, &m2) == MGPU_ERR_ARG && !m2);
  CHECK_CONTAINS(mgpu_errmsg(c), "host transpose: needs a 2-D array, got shape [3]");
  CHECK(mgpu_host_matmul(a, a, &m2) == MGPU_ERR_ARG && !m2);
  CHECK_CONTAINS(mgpu_errmsg(c), "host matmul: needs (M, K) and (K, N) arrays, got shapes [2,3] and [2,3]");
  double e;
  CHECK(mgpu_host_relerr(a, a, &e) == MGPU_OK && e == 0);
  CHECK(mgpu_host_relerr(a, b, &e) == MGPU_ERR_ARG && isnan(e));
  CHECK_CONTAINS(mgpu_errmsg(c), "relerr: shapes [2,3] and [3,2] differ");
  mgpu_host *no = NULL;
  CHECK(mgpu_host_reduce(MGPU_HOST_SUM, a, 2, 0, &no) == MGPU_ERR_ARG && !no);
  CHECK_CONTAINS(mgpu_errmsg(c), "axis 2 is out of range for shape [2,3]");
  CHECK(mgpu_host_slice(a, 1, 2, &no) == MGPU_ERR_ARG && !no);
  CHECK_CONTAINS(mgpu_errmsg(c), "rows [1, 3) are out of range for shape [2,3]");
  int64_t big[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, neg[2] = { 2, -1 };
  CHECK(mgpu_host_create(c, big, 9, &no) == MGPU_ERR_ARG && !no);
  CHECK_CONTAINS(mgpu_errmsg(c), "rank must be 0 to 8, got 9");
  CHECK(mgpu_host_create(c, neg, 2, &no) == MGPU_ERR_ARG && !no);
  CHECK_CONTAINS(mgpu_errmsg(c), "dimension 1 of shape [2,-1] is negative");
  CHECK(mgpu_host_map(MGPU_HOST_ADD, a, (const mgpu_host *)c, 0, &no) == MGPU_ERR_ARG && !no);
  CHECK_CONTAINS(mgpu_errmsg(c), "the second operand is not a host array");
  mgpu_host *r = NULL;
  CHECK(mgpu_host_map(MGPU_HOST_ROUND, row, NULL, MGPU_BF16, &r) == MGPU_OK);
  mgpu_host *bad = NULL;
  CHECK(mgpu_host_map(MGPU_HOST_ADD, a, b, 0, &bad) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "host arrays: shapes [2,3] and [3,2] do not broadcast (dimension 1: 3 and 2)");
  mgpu_host *sl = NULL;
  CHECK(mgpu_host_slice(a, 1, 1, &sl) == MGPU_OK && mgpu_host_data(sl)[0] == 3);
  mgpu_host *hs[] = { a, row, sum, mx, t, m, b, r, sl, tr };
  for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) mgpu_host_release(hs[i]);
  mgpu_ctx_release(c);
}
