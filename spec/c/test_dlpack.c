/*
** test_dlpack.c -- DLPack export and import: zero-copy round trips, deleters
** called exactly once, and refusals of tensors mgpu cannot use.
*/
#include <dlpack/dlpack.h>
#include <stdlib.h>

#include "mgpu.h"
#include "test.h"

static int deleted;
static void count_deleter(DLManagedTensor *t) { deleted++; (void)t; }

void test_dlpack(void) {
  mgpu_ctx_options o = { MGPU_MODE_INTERPRET, 0, NULL, NULL };
  mgpu_ctx *c = NULL;
  CHECK(mgpu_ctx_create(&o, &c) == MGPU_OK);
  mgpu_buffer *b = NULL;
  CHECK(mgpu_buffer_alloc(c, 6 * 4, &b) == MGPU_OK);
  double vals[6] = { 1, 2, 3, 4, 5, 6 };
  mgpu_buffer_set_f64(b, MGPU_F32, 0, 6, vals);
  int64_t shape[2] = { 2, 3 };
  void *t = NULL;
  CHECK(mgpu_dlpack_export(b, MGPU_F32, shape, 2, &t) == MGPU_OK && t);
  DLManagedTensor *mt = t;
  CHECK(mt->dl_tensor.ndim == 2 && mt->dl_tensor.shape[1] == 3 && mt->dl_tensor.dtype.code == kDLFloat &&
        mt->dl_tensor.dtype.bits == 32 && mt->dl_tensor.device.device_type == kDLCPU);
  CHECK(((float *)mt->dl_tensor.data)[4] == 5.0f);          /* the same memory, no copy */
  mgpu_buffer_release(b);                                     /* the tensor keeps it alive */
  mgpu_buffer *back = NULL;
  mgpu_value_info vi;
  CHECK(mgpu_dlpack_import(c, t, &back, &vi) == MGPU_OK);
  CHECK(vi.dtype == MGPU_F32 && vi.rank == 2 && vi.shape[0] == 2 && vi.shape[1] == 3);
  double got[6];
  CHECK(mgpu_buffer_get_f64(back, MGPU_F32, 0, 6, got) == MGPU_OK && got[5] == 6);
  mgpu_buffer_release(back);                                  /* runs the export's deleter */

  /* a tensor from elsewhere: its deleter runs once, when the buffer goes */
  int16_t data[4] = { 1, -2, 3, -4 };
  int64_t s1[1] = { 4 };
  DLManagedTensor foreign = { { data, { kDLCPU, 0 }, 1, { kDLInt, 16, 1 }, s1, NULL, 0 }, NULL, count_deleter };
  deleted = 0;
  CHECK(mgpu_dlpack_import(c, &foreign, &back, &vi) == MGPU_OK && vi.dtype == MGPU_I16);
  CHECK(mgpu_buffer_get_f64(back, MGPU_I16, 1, 1, got) == MGPU_OK && got[0] == -2);
  CHECK(deleted == 0);
  mgpu_buffer *twice = NULL;                 /* consumed by its first import: a second is refused */
  CHECK(mgpu_dlpack_import(c, &foreign, &twice, &vi) == MGPU_ERR_ARG && !twice);
  CHECK_CONTAINS(mgpu_errmsg(c), "imported already");
  mgpu_buffer_release(back);
  CHECK(deleted == 1);

  /* refusals */
  foreign.dl_tensor.device.device_type = kDLCUDA;
  CHECK(mgpu_dlpack_import(c, &foreign, &back, &vi) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "not in CPU memory");
  foreign.dl_tensor.device.device_type = kDLCPU;
  int64_t s2[2] = { 2, 2 }, st[2] = { 1, 2 };   /* column-major */
  foreign.dl_tensor.ndim = 2;
  foreign.dl_tensor.shape = s2;
  foreign.dl_tensor.strides = st;
  CHECK(mgpu_dlpack_import(c, &foreign, &back, &vi) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "not C-contiguous");
  /* malformed tensors (found by fuzz/fuzz_dlpack): refused with a message, the deleter not run */
  foreign.dl_tensor.strides = NULL;
  foreign.dl_tensor.shape = NULL;                       /* rank 2 without a shape array */
  CHECK(mgpu_dlpack_import(c, &foreign, &back, &vi) == MGPU_ERR_ARG && !back);
  CHECK_CONTAINS(mgpu_errmsg(c), "no shape array");
  int64_t huge[2] = { INT64_C(1) << 40, INT64_C(1) << 40 };   /* 2^82 bytes */
  foreign.dl_tensor.shape = huge;
  CHECK(mgpu_dlpack_import(c, &foreign, &back, &vi) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "more than 2^63 - 1 bytes");
  int64_t empty[2] = { INT64_C(1) << 40, 0 };             /* no elements: any extent is fine */
  foreign.dl_tensor.shape = empty;
  foreign.dl_tensor.data = NULL;
  CHECK(mgpu_dlpack_import(c, &foreign, &back, &vi) == MGPU_OK && mgpu_buffer_size(back) == 0);
  mgpu_buffer_release(back);
  CHECK(deleted == 2);
  foreign.dl_tensor.shape = s2;                           /* bytes but no data */
  CHECK(mgpu_dlpack_import(c, &foreign, &back, &vi) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "data pointer is NULL");
  foreign.dl_tensor.data = data;
  foreign.dl_tensor.byte_offset = UINT64_MAX;
  CHECK(mgpu_dlpack_import(c, &foreign, &back, &vi) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "wraps around");
  CHECK(deleted == 2);
  mgpu_buffer *b2 = NULL;
  mgpu_buffer_alloc(c, 16, &b2);
  CHECK(mgpu_dlpack_export(b2, MGPU_F8E4M3, s1, 1, &t) == MGPU_ERR_ARG);
  CHECK(mgpu_dlpack_export(b2, MGPU_F64, s1, 1, &t) == MGPU_ERR_ARG);   /* 32 bytes > 16 */
  int64_t wrap[2] = { INT64_C(1) << 32, INT64_C(1) << 30 };   /* 4 * 2^62 bytes: 0 modulo 2^64 */
  CHECK(mgpu_dlpack_export(b2, MGPU_F32, wrap, 2, &t) == MGPU_ERR_ARG && !t);
  CHECK(mgpu_dlpack_export(b2, MGPU_F32, NULL, 0, &t) == MGPU_OK && t);   /* a scalar needs no shape array */
  ((DLManagedTensor *)t)->deleter(t);
  CHECK(deleted == 2);
  mgpu_buffer_release(b2);

  /* free: the deleter of a tensor no consumer took; not of one an import holds */
  DLManagedTensor kept = { { data, { kDLCPU, 0 }, 1, { kDLInt, 16, 1 }, s1, NULL, 0 }, NULL, count_deleter };
  CHECK(mgpu_dlpack_free(c, &kept) == MGPU_OK && deleted == 3);
  CHECK(mgpu_dlpack_free(c, NULL) == MGPU_ERR_ARG);
  CHECK(mgpu_dlpack_import(c, &kept, &back, &vi) == MGPU_OK);
  CHECK(mgpu_dlpack_free(c, &kept) == MGPU_ERR_ARG && deleted == 3);
  CHECK_CONTAINS(mgpu_errmsg(c), "an import holds this tensor");
  mgpu_buffer_release(back);
  CHECK(deleted == 4);
  mgpu_buffer *b3 = NULL;            /* an export kept back and freed: its buffer goes with it */
  CHECK(mgpu_buffer_alloc(c, 16, &b3) == MGPU_OK);
  CHECK(mgpu_dlpack_export(b3, MGPU_F32, s1, 1, &t) == MGPU_OK);
  mgpu_buffer_release(b3);
  CHECK(mgpu_dlpack_free(c, t) == MGPU_OK);

  /* an export whose deleter ran: a second free, an import and a second deleter
  ** call are refused or do nothing (once a double free and a read of freed memory) */
  CHECK(mgpu_buffer_alloc(c, 16, &b3) == MGPU_OK);
  CHECK(mgpu_dlpack_export(b3, MGPU_F32, s1, 1, &t) == MGPU_OK);
  CHECK(mgpu_dlpack_free(c, t) == MGPU_OK);
  CHECK(mgpu_dlpack_free(c, t) == MGPU_ERR_ARG);
  CHECK_CONTAINS(mgpu_errmsg(c), "mgpu_dlpack_free: the tensor was freed already");
  CHECK(mgpu_dlpack_import(c, t, &back, &vi) == MGPU_ERR_ARG && !back);
  CHECK_CONTAINS(mgpu_errmsg(c), "mgpu_dlpack_import: the tensor was freed already");
  ((DLManagedTensor *)t)->deleter(t);
  CHECK(mgpu_dlpack_export(b3, MGPU_F32, s1, 1, &t) == MGPU_OK);   /* imported, then the import released */
  CHECK(mgpu_dlpack_import(c, t, &back, &vi) == MGPU_OK);
  mgpu_buffer_release(back);
  CHECK(mgpu_dlpack_import(c, t, &back, &vi) == MGPU_ERR_ARG && !back);
  CHECK_CONTAINS(mgpu_errmsg(c), "freed already");
  CHECK(mgpu_dlpack_free(c, t) == MGPU_ERR_ARG);
  for (int i = 0; i < 300; i++) {   /* more released than are remembered: the oldest go, nothing leaks */
    CHECK(mgpu_dlpack_export(b3, MGPU_F32, s1, 1, &t) == MGPU_OK);
    CHECK(mgpu_dlpack_free(c, t) == MGPU_OK);
  }
  CHECK(mgpu_dlpack_free(c, t) == MGPU_ERR_ARG);
  mgpu_buffer_release(b3);
  mgpu_ctx_release(c);
}
