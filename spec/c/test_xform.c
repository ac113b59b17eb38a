/*
** test_xform.c -- SMEM transforms: the swizzle matches the hardware's
** 16-byte-chunk XOR pattern, every chain maps logical indices one-to-one
** onto the allocation, tiling and transposes place elements where the
** formulas say, and bad chains are refused with a reason.
*/
#include <stdlib.h>

#include "../../src/layout/xform.h"
#include "test.h"

static bool apply(const char *text, const int64_t *shape, int rank, int bytes, xf_map *m) {
  xf_chain c;
  char why[300];
  if (!xf_parse(text, &c, why, sizeof why)) { fprintf(stderr, "  parse %s: %s\n", text, why); return false; }
  if (!xf_apply(&c, shape, rank, bytes, m, why, sizeof why)) { fprintf(stderr, "  apply %s: %s\n", text, why); return false; }
  return true;
}

/* Every logical index lands on a distinct element-aligned byte of the allocation. */
static bool one_to_one(const xf_map *m) {
  int64_t n = 1;
  for (int i = 0; i < m->rank; i++) n *= m->shape[i];
  if (m->size != n * m->bytes) return false;
  unsigned char *seen = calloc((size_t)n, 1);
  bool ok = true;
  for (int64_t e = 0; e < n && ok; e++) {
    int64_t idx[XF_MAXRANK], rem = e;
    for (int i = m->rank - 1; i >= 0; i--) { idx[i] = rem % m->shape[i]; rem /= m->shape[i]; }
    int64_t off = xf_offset(m, idx);
    ok = off >= 0 && off < m->size && off % m->bytes == 0 && !seen[off / m->bytes];
    if (ok) seen[off / m->bytes] = 1;
  }
  free(seen);
  return ok;
}

static void swizzle_pattern(void) {
  /* 128 B: chunk (bits 4-6) ^= line (bits 7-9); the byte in the chunk stays */
  for (int64_t line = 0; line < 16; line++)
    for (int64_t chunk = 0; chunk < 8; chunk++)
      for (int64_t b = 0; b < 16; b += 4) {
        int64_t off = line * 128 + chunk * 16 + b;
        CHECK(xf_swizzle(128, off) == line * 128 + ((chunk ^ (line % 8)) * 16) + b);
      }
  /* 64 B rows: two rows per 128-byte line, chunk (bits 4-5) ^= line % 4 */
  for (int64_t row = 0; row < 16; row++)
    for (int64_t chunk = 0; chunk < 4; chunk++) {
      int64_t off = row * 64 + chunk * 16;
      CHECK(xf_swizzle(64, off) == row * 64 + ((chunk ^ ((row / 2) % 4)) * 16));
    }
  /* 32 B rows: four rows per line, chunk (bit 4) ^= line % 2 */
  for (int64_t row = 0; row < 16; row++)
    for (int64_t chunk = 0; chunk < 2; chunk++) {
      int64_t off = row * 32 + chunk * 16;
      CHECK(xf_swizzle(32, off) == row * 32 + ((chunk ^ ((row / 4) % 2)) * 16));
    }
  /* each swizzle is an involution and permutes the bytes of every 1024-byte period */
  static const int sizes[] = { 32, 64, 128 };
  for (int s = 0; s < 3; s++) {
    unsigned char seen[1024] = { 0 };
    bool ok = true;
    for (int64_t off = 0; off < 1024; off++) {
      int64_t w = xf_swizzle(sizes[s], off + 4096);
      ok &= w >= 4096 && w < 5120 && !seen[w - 4096] && xf_swizzle(sizes[s], w) == off + 4096;
      if (w >= 4096 && w < 5120) seen[w - 4096] = 1;
    }
    CHECK(ok);
  }
  CHECK(xf_swizzle(0, 12345) == 12345);
}

static void placement(void) {
  xf_map m;
  /* tiling (8, 64) of a bf16 (64, 128): 1 KiB tiles, row-major over (8, 2) */
  int64_t s2[2] = { 64, 128 };
  CHECK(apply("tiling(8,64)", s2, 2, 2, &m));
  CHECK(m.prank == 4 && m.pshape[0] == 8 && m.pshape[1] == 2 && m.pshape[2] == 8 && m.pshape[3] == 64);
  bool ok = true;
  for (int64_t i = 0; i < 64; i++)
    for (int64_t j = 0; j < 128; j++) {
      int64_t idx[2] = { i, j };
      ok &= xf_offset(&m, idx) == ((i / 8) * 2 + j / 64) * 1024 + (i % 8) * 128 + (j % 64) * 2;
    }
  CHECK(ok);
  /* + swizzle(128): the same, with the chunk XOR inside each tile */
  CHECK(apply("tiling(8,64);swizzle(128)", s2, 2, 2, &m));
  ok = true;
  for (int64_t i = 0; i < 64; i++)
    for (int64_t j = 0; j < 128; j++) {
      int64_t idx[2] = { i, j }, c = (j % 64) / 8;
      ok &= xf_offset(&m, idx) == ((i / 8) * 2 + j / 64) * 1024 + (i % 8) * 128 + ((c ^ (i % 8)) * 16) + (j % 8) * 2;
    }
  CHECK(ok);
  CHECK(m.swizzle == 128 && m.size == 64 * 128 * 2);
  /* transpose: element (i, j) of a (16, 32) f32 at physical (j, i) */
  int64_t s3[2] = { 16, 32 };
  CHECK(apply("transpose(1,0)", s3, 2, 4, &m));
  ok = m.pshape[0] == 32 && m.pshape[1] == 16;
  for (int64_t i = 0; i < 16; i++)
    for (int64_t j = 0; j < 32; j++) {
      int64_t idx[2] = { i, j };
      ok &= xf_offset(&m, idx) == (j * 16 + i) * 4;
    }
  CHECK(ok);
}

static void bijections(void) {
  static const struct { const char *text; int64_t shape[4]; int rank, bytes; } chains[] = {
    { "", { 5, 7, 3 }, 3, 4 },
    { "tiling(8,64);swizzle(128)", { 2, 64, 128 }, 3, 2 },
    { "tiling(8,32);swizzle(64)", { 32, 96 }, 2, 2 },
    { "tiling(8,16);swizzle(32)", { 16, 48 }, 2, 2 },
    { "tiling(8,32);swizzle(128)", { 64, 64 }, 2, 4 },
    { "transpose(1,0);tiling(8,64);swizzle(128)", { 128, 64 }, 2, 2 },
    { "tiling(64,64);tiling(8,64);swizzle(128)", { 128, 128 }, 2, 2 },
    { "tiling(4);transpose(1,0)", { 64 }, 1, 8 },
    { "tiling(8,128);swizzle(128)", { 32, 256 }, 2, 1 },
  };
  for (size_t i = 0; i < sizeof chains / sizeof chains[0]; i++) {
    xf_map m;
    bool ok = apply(chains[i].text, chains[i].shape, chains[i].rank, chains[i].bytes, &m) && one_to_one(&m);
    if (!ok) fprintf(stderr, "  chain %s\n", chains[i].text);
    CHECK(ok);
  }
}

static void text_and_errors(void) {
  xf_chain c;
  char why[300];
  CHECK(xf_parse(" tiling(8, 64) ; swizzle(128)", &c, why, sizeof why));
  strbuf sb;
  mem_alloc a;
  mem_alloc_default(&a);
  sb_init(&sb, &a);
  xf_print(&c, &sb);
  CHECK_STR(sb_str(&sb), "tiling(8,64);swizzle(128)");
  sb_free(&sb);
  CHECK(xf_parse("", &c, why, sizeof why) && c.n == 0);
  CHECK(!xf_parse("tile(8)", &c, why, sizeof why));
  CHECK_CONTAINS(why, "unknown transform");
  CHECK(!xf_parse("tiling(8", &c, why, sizeof why));
  xf_map m;
  int64_t s[2] = { 64, 64 };
  CHECK(!apply("tiling(8,64);swizzle(128)", s, 2, 4, &m));   /* 256-byte minor dim */
  CHECK(xf_parse("tiling(8,64);swizzle(128)", &c, why, sizeof why) && !xf_apply(&c, s, 2, 4, &m, why, sizeof why));
  CHECK_CONTAINS(why, "needs a minor dimension of exactly 128 bytes, but it has 256");
  CHECK(xf_parse("swizzle(128);tiling(8,32)", &c, why, sizeof why) && !xf_apply(&c, s, 2, 4, &m, why, sizeof why));
  CHECK_CONTAINS(why, "must be the last transform");
  CHECK(xf_parse("tiling(7,8)", &c, why, sizeof why) && !xf_apply(&c, s, 2, 4, &m, why, sizeof why));
  CHECK_CONTAINS(why, "does not divide");
  CHECK(xf_parse("transpose(0,0)", &c, why, sizeof why) && !xf_apply(&c, s, 2, 4, &m, why, sizeof why));
  CHECK_CONTAINS(why, "permutation");
  CHECK(xf_parse("swizzle(48)", &c, why, sizeof why) && !xf_apply(&c, s, 2, 4, &m, why, sizeof why));
  CHECK(xf_parse("tiling(1,1,1)", &c, why, sizeof why) && !xf_apply(&c, s, 2, 4, &m, why, sizeof why));
}

void test_transforms(void) {
  swizzle_pattern();
  placement();
  bijections();
  text_and_errors();
}
