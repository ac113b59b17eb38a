/*
** test_core.c -- element encodings: exact bit patterns, round-to-nearest-
** even ties, subnormals, saturation and integer wrapping.
*/
#include <math.h>

#include "../../src/core/core.h"
#include "test.h"

static uint32_t enc(int dt, double x) {
  unsigned char raw[8] = { 0 };
  dt_store(dt, raw, x);
  return (uint32_t)raw[0] | ((uint32_t)raw[1] << 8) | ((uint32_t)raw[2] << 16) | ((uint32_t)raw[3] << 24);
}

void test_dtype_conversions(void) {
  CHECK(enc(MGPU_BF16, 1.0) == 0x3F80);
  CHECK(enc(MGPU_BF16, -2.0) == 0xC000);
  CHECK(enc(MGPU_F16, 1.0) == 0x3C00);
  CHECK(enc(MGPU_F16, 65504.0) == 0x7BFF);
  CHECK(enc(MGPU_F16, 65520.0) == 0x7C00);            /* rounds up to inf */
  CHECK(enc(MGPU_F16, 5.960464477539063e-08) == 0x0001);   /* smallest subnormal */
  CHECK(enc(MGPU_F8E4M3, 448.0) == 0x7E);
  CHECK(enc(MGPU_F8E4M3, 1e6) == 0x7E);                /* saturates */
  CHECK(enc(MGPU_F8E4M3, -1.0) == 0xB8);
  CHECK(enc(MGPU_F8E5M2, 57344.0) == 0x7B);
  CHECK(enc(MGPU_F8E5M2, 1.0) == 0x3C);
  CHECK((enc(MGPU_F16, NAN) & 0x7C00) == 0x7C00 && (enc(MGPU_F16, NAN) & 0x3FF));
  /* decode everything back */
  for (int dt = MGPU_F16; dt <= MGPU_F8E5M2; dt++) {
    if (dt == MGPU_F32 || dt == MGPU_F64) continue;
    int bits = dt_table[dt].bits;
    for (uint32_t u = 0; u < (1u << bits); u += (bits == 16 ? 7 : 1)) {
      unsigned char raw[2] = { (unsigned char)u, (unsigned char)(u >> 8) };
      double x = dt_load(dt, raw);
      if (isnan(x) || isinf(x)) continue;   /* f8 conversions saturate infinities */
      CHECK(enc(dt, x) == u);   /* every finite code round-trips */
      if (enc(dt, x) != u) { fprintf(stderr, "  dtype %s code 0x%x\n", dt_name(dt), u); break; }
    }
  }
  CHECK(dt_lookup("bf16") == MGPU_BF16 && dt_lookup("float32") == MGPU_F32 && dt_lookup("nope") == -1);
}

void test_dtype_rounding(void) {
  /* ties to even: 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7 */
  CHECK(dt_round(MGPU_BF16, 1.0 + 0x1p-8) == 1.0);
  CHECK(dt_round(MGPU_BF16, 1.0 + 3 * 0x1p-8) == 1.0 + 0x1p-6);
  CHECK(dt_round(MGPU_F16, 2049.0) == 2048.0);
  CHECK(dt_round(MGPU_F16, 2051.0) == 2052.0);
  CHECK(dt_round(MGPU_F32, 1.0 + 0x1p-24) == 1.0);
  CHECK(dt_round(MGPU_I32, 1e12) == 2147483647.0);     /* float -> int saturates */
  CHECK(dt_round(MGPU_U8, -5.0) == 0.0);
  CHECK(dt_round(MGPU_I32, NAN) == 0.0);
  CHECK(dt_round(MGPU_I8, -3.7) == -3.0);               /* truncates */
  CHECK(dt_wrap_int(MGPU_I8, 200) == -56);
  CHECK(dt_wrap_int(MGPU_U16, -1) == 65535);
  CHECK(dt_wrap_int(MGPU_PRED, 7) == 1);
  CHECK(dt_f16_to_f32(dt_f32_to_f16(0.1f)) == (float)dt_round(MGPU_F16, 0.1f));
  CHECK(dt_bf16_to_f32(dt_f32_to_bf16(3.0f)) == 3.0f);
}
