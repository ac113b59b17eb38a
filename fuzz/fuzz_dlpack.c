/*
** fuzz_dlpack.c -- mgpu_dlpack_import on DLManagedTensors built from the
** input: device, dtype (code, bits, lanes), rank, shape, strides (or none),
** byte offset, a shape or stride array that may be missing.  The data
** pointer is a real host array; an accepted tensor must describe exactly
** the bytes its buffer reports, which are read back when they lie inside
** that array.  Refused tensors keep their deleter unrun; accepted ones run
** it exactly once, when the buffer goes.  Exports of buffers with fuzzed
** shapes are imported back the same way.  Sequences of frees, imports and
** releases on a few exports check that a second free, an import after the
** deleter ran and a free of an imported tensor are refused with a message.
*/
#include <dlpack/dlpack.h>
#include <stdbool.h>

#include "fuzz.h"

#define DATA_BYTES 4096

static int deleted;
static void count_deleter(DLManagedTensor *t) { (void)t; deleted++; }

static const int64_t dims[] = { 0, 1, 2, 3, 4, 8, 16, 64, 1000, -1, INT64_MAX, INT64_MIN, (int64_t)1 << 32, (int64_t)1 << 62, 255, 7 };
static const uint8_t bits[] = { 8, 16, 32, 64, 1, 0, 4, 128, 24, 255 };

static int64_t read_dim(fz_reader *r) {
  uint8_t b = fz_byte(r);
  if (b < 0xf0) return dims[b % (sizeof dims / sizeof dims[0])];
  return (int64_t)fz_u64(r);
}

static void check_accepted(mgpu_ctx *ctx, mgpu_buffer *buf, const mgpu_value_info *vi, const DLTensor *t,
                           const unsigned char *base) {
  if (vi->kind != MGPU_VALUE_REF || vi->rank != t->ndim || vi->dtype < 0 || vi->dtype >= MGPU_DTYPE_COUNT) abort();
  uint64_t bytes = (uint64_t)mgpu_dtype_size(vi->dtype);
  for (int i = 0; i < vi->rank; i++) {
    if (vi->shape[i] != t->shape[i] || vi->shape[i] < 0) abort();
    bytes *= (uint64_t)vi->shape[i];
  }
  if (mgpu_buffer_size(buf) != bytes) abort();
  if (mgpu_buffer_address(buf) != (uint64_t)(uintptr_t)t->data + t->byte_offset) abort();
  unsigned char got[DATA_BYTES];
  if (t->data == base && t->byte_offset <= DATA_BYTES && bytes <= DATA_BYTES - t->byte_offset) {
    fz_check_status(ctx, mgpu_buffer_read(buf, 0, got, bytes));
    if (memcmp(got, base + t->byte_offset, (size_t)bytes)) abort();
  }
  /* reading past the end is refused */
  if (mgpu_buffer_read(buf, bytes, got, 1) != MGPU_ERR_ARG) abort();
}

static void import_one(fz_reader *r, mgpu_ctx *ctx, unsigned char *data) {
  int64_t shape[10], strides[10];
  DLManagedTensor mt;
  memset(&mt, 0, sizeof mt);
  DLTensor *t = &mt.dl_tensor;
  uint8_t f = fz_byte(r);
  t->data = f & 1 ? NULL : data;
  t->device.device_type = (DLDeviceType)(f & 2 ? fz_byte(r) % 16 : kDLCPU);
  t->device.device_id = f & 4 ? (int32_t)fz_u32(r) : 0;
  t->dtype.code = (uint8_t)(fz_byte(r) % 8);
  t->dtype.bits = bits[fz_byte(r) % sizeof bits];
  t->dtype.lanes = (uint16_t)(f & 8 ? fz_u16(r) : 1);
  uint8_t rb = fz_byte(r);
  t->ndim = rb % 10;
  if (rb >= 0xf0) t->ndim = (int32_t)fz_u32(r);
  int n = t->ndim >= 0 && t->ndim <= 10 ? t->ndim : 10;
  for (int i = 0; i < n; i++) shape[i] = read_dim(r);
  int64_t stride = 1;   /* C-contiguous strides, sometimes disturbed */
  for (int i = n - 1; i >= 0; i--) {
    strides[i] = fz_byte(r) < 0xe0 ? stride : read_dim(r);
    if (shape[i] > 0 && stride < (INT64_C(1) << 40)) stride *= shape[i] < (INT64_C(1) << 20) ? shape[i] : 1;
  }
  t->shape = f & 0x10 ? NULL : shape;
  t->strides = f & 0x20 ? strides : NULL;
  t->byte_offset = f & 0x40 ? (fz_byte(r) == 0xff ? fz_u64(r) : fz_u16(r) % (DATA_BYTES + 16)) : 0;
  mt.deleter = f & 0x80 ? NULL : count_deleter;
  mgpu_buffer *buf = NULL;
  mgpu_value_info vi;
  deleted = 0;
  mgpu_status s = mgpu_dlpack_import(ctx, &mt, &buf, &vi);
  fz_check_status(ctx, s);
  if (deleted) abort();
  if (s) {
    if (buf) abort();
    return;
  }
  check_accepted(ctx, buf, &vi, t, data);
  mgpu_buffer_release(buf);
  if (mt.deleter && deleted != 1) abort();
}

static void export_one(fz_reader *r, mgpu_ctx *ctx) {
  mgpu_buffer *buf = NULL;
  uint64_t nbytes = fz_u16(r) % 2048;
  if (mgpu_buffer_alloc(ctx, nbytes, &buf)) return;
  int32_t dtype = (int32_t)(fz_byte(r) % 17) - 1;
  int32_t rank = (int32_t)(fz_byte(r) % 11) - 1;
  int64_t shape[10] = { 0 };
  for (int i = 0; i < rank; i++) shape[i] = read_dim(r);
  void *tensor = NULL;
  mgpu_status s = mgpu_dlpack_export(buf, dtype, fz_byte(r) == 0xff ? NULL : shape, rank, &tensor);
  fz_check_status(ctx, s);
  mgpu_buffer_release(buf);   /* the tensor keeps the memory */
  if (s) {
    if (tensor) abort();
    return;
  }
  mgpu_buffer *back = NULL;
  mgpu_value_info vi;
  s = mgpu_dlpack_import(ctx, tensor, &back, &vi);
  fz_check_status(ctx, s);
  if (s) {   /* refused (an exported pred comes back as u8): the deleter is the caller's to run */
    DLManagedTensor *mt = tensor;
    mt->deleter(mt);
    return;
  }
  if (mgpu_buffer_size(back) > nbytes) abort();
  mgpu_buffer_release(back);
}

/* Step status s of a free or import on a tensor: refused exactly when
** `refused` is set, with a message holding `why`. */
static void expect_step(mgpu_ctx *ctx, mgpu_status s, const char *refused) {
  fz_check_status(ctx, s);
  if ((s != MGPU_OK) != (refused != NULL)) abort();
  if (refused && (s != MGPU_ERR_ARG || !strstr(mgpu_errmsg(ctx), refused))) abort();
}

static void sequence_one(fz_reader *r, mgpu_ctx *ctx) {
  enum { SLOTS = 4, FLOATS = 16 };
  mgpu_buffer *buf = NULL;
  if (mgpu_buffer_alloc(ctx, FLOATS * 4, &buf)) return;
  double vals[FLOATS];
  for (int i = 0; i < FLOATS; i++) vals[i] = i + 0.5;
  fz_check_status(ctx, mgpu_buffer_set_f64(buf, MGPU_F32, 0, FLOATS, vals));
  int64_t shape[1] = { FLOATS };
  void *t[SLOTS];
  mgpu_buffer *imp[SLOTS] = { NULL };
  bool gone[SLOTS] = { false };   /* the deleter ran */
  for (int i = 0; i < SLOTS; i++)
    if (mgpu_dlpack_export(buf, MGPU_F32, shape, 1, &t[i])) abort();
  mgpu_buffer_release(buf);
  for (int n = fz_byte(r) % 32; n > 0; n--) {
    uint8_t op = fz_byte(r);
    int i = (op >> 2) % SLOTS;
    const char *refused = gone[i] ? "freed already" : imp[i] ? "" : NULL;
    mgpu_value_info vi;
    mgpu_buffer *b = NULL;
    switch (op & 3) {
    case 0:
      expect_step(ctx, mgpu_dlpack_free(ctx, t[i]), refused && !*refused ? "an import holds" : refused);
      if (!refused) gone[i] = true;
      break;
    case 1:
      expect_step(ctx, mgpu_dlpack_import(ctx, t[i], &b, &vi), refused && !*refused ? "imported already" : refused);
      if (refused) break;
      double got[FLOATS];
      fz_check_status(ctx, mgpu_buffer_get_f64(b, MGPU_F32, 0, FLOATS, got));
      if (vi.rank != 1 || vi.shape[0] != FLOATS || memcmp(got, vals, sizeof got)) abort();
      imp[i] = b;
      break;
    default:   /* releasing an import runs the export's deleter */
      if (imp[i]) mgpu_buffer_release(imp[i]), imp[i] = NULL, gone[i] = true;
    }
  }
  for (int i = 0; i < SLOTS; i++) {
    if (imp[i]) mgpu_buffer_release(imp[i]);
    else if (!gone[i] && mgpu_dlpack_free(ctx, t[i])) abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size) {
  fz_reader r = { in, size };
  size_t live;
  mgpu_ctx *ctx = fz_ctx(&live);
  if (!ctx) abort();
  static unsigned char data[DATA_BYTES];
  for (size_t i = 0; i < DATA_BYTES; i++) data[i] = (unsigned char)(i * 7 + 1);
  for (int i = 0; i < 16 && r.n; i++) {
    uint8_t op = fz_byte(&r);
    if (op & 1) export_one(&r, ctx);
    else if (op % 4 == 2) sequence_one(&r, ctx);
    else import_one(&r, ctx, data);
  }
  mgpu_ctx_release(ctx);
  if (live) abort();
  return 0;
}
