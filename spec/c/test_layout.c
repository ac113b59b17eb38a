/*
** test_layout.c -- the tiled-layout algebra: the WGMMA fragment matches
** the PTX accumulator formula, ownership is a bijection for named and
** random layouts, reductions broadcast back for free, and the text form
** round-trips.
*/
#include <stdlib.h>

#include "../../src/layout/lay.h"
#include "test.h"

/* Every element of the shape is held by exactly one owner, and every
** register element of every thread lies inside the shape. */
static bool bijection(const lay_layout *l, const int64_t *shape, int rank) {
  lay_fit f;
  char why[160];
  if (!lay_fit_shape(l, shape, rank, &f, why, sizeof why)) { fprintf(stderr, "  fit: %s\n", why); return false; }
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= shape[i];
  int *seen = calloc((size_t)numel, sizeof(int));
  bool ok = true;
  for (int w = 0; w < 4; w++)
    for (int ln = 0; ln < 32; ln++)
      for (int64_t r = 0; r < f.nregs; r++)
        for (int e = 0; e < f.vlen; e++) {
          int64_t idx[LAY_MAXRANK], flat = 0;
          lay_index(&f, w, ln, r, e, idx);
          bool in = true;
          for (int i = 0; i < rank; i++) { in &= idx[i] >= 0 && idx[i] < shape[i]; flat = flat * shape[i] + idx[i]; }
          if (!in) { if (l->kind != LAY_STRIDED) ok = false; continue; }   /* strided pads */
          if (lay_owner(&f, w, ln)) seen[flat]++;
        }
  for (int64_t i = 0; i < numel; i++) ok &= seen[i] == 1;
  free(seen);
  return ok;
}

/* Every thread holding (r, c) of the full array also holds r (or c) of
** the reduced one: broadcasting the reduction back costs nothing. */
static bool free_broadcast(const lay_layout *l, const int64_t *shape, int axis) {
  lay_layout red;
  int axes[1] = { axis };
  lay_reduce(l, 2, axes, 1, &red);
  int64_t rshape[1] = { shape[1 - axis] };
  lay_fit f, g;
  char why[128];
  if (!lay_fit_shape(l, shape, 2, &f, why, sizeof why) || !lay_fit_shape(&red, rshape, 1, &g, why, sizeof why)) return false;
  for (int w = 0; w < 4; w++)
    for (int ln = 0; ln < 32; ln++)
      for (int64_t r = 0; r < f.nregs; r++)
        for (int e = 0; e < f.vlen; e++) {
          int64_t idx[2], ridx[1];
          lay_index(&f, w, ln, r, e, idx);
          bool held = false;
          for (int64_t rr = 0; rr < g.nregs && !held; rr++)
            for (int ee = 0; ee < g.vlen && !held; ee++) {
              lay_index(&g, w, ln, rr, ee, ridx);
              held = ridx[0] == idx[1 - axis];
            }
          if (!held) return false;
        }
  return true;
}

static bool roundtrip(const lay_layout *l) {
  strbuf sb;
  mem_alloc a;
  mem_alloc_default(&a);
  sb_init(&sb, &a);
  lay_print(l, &sb);
  lay_layout back;
  char why[128];
  bool ok = lay_parse(sb_str(&sb), &back, why, sizeof why) && lay_equal(l, &back);
  if (!ok) fprintf(stderr, "  text %s: %s\n", sb_str(&sb), why);
  sb_free(&sb);
  return ok;
}

static unsigned rng = 12345;
static unsigned rnd(unsigned n) { rng = rng * 1103515245u + 12345u; return (rng >> 16) % n; }

/* A random valid tiled layout over (M, N) in level form. */
static void random_layout(lay_layout *l, int64_t *shape) {
  memset(l, 0, sizeof *l);
  l->kind = LAY_TILED;
  l->rank = 2;
  /* per dim: the rest, then fixed factors whose roles we assign */
  int wlog = 2, llog = 5;                         /* log2 of 4 warps, 32 lanes */
  int split_w = (int)rnd(3), split_l = (int)rnd(6), vlog = (int)rnd(4);
  int fac[2][3][2];   /* [dim][k] = {log2 size, role} */
  int nf[2] = { 0, 0 };
  int wd = (int)rnd(2), vd = (int)rnd(2);
  /* warps: split_w bits from dim wd, the rest from the other dim (or replicated) */
  int rep_w = (int)rnd(2);
  if (split_w) { fac[wd][nf[wd]][0] = split_w; fac[wd][nf[wd]++][1] = LR_WARP; }
  if (wlog - split_w && !rep_w) { fac[1 - wd][nf[1 - wd]][0] = wlog - split_w; fac[1 - wd][nf[1 - wd]++][1] = LR_WARP; }
  if (split_l) { fac[0][nf[0]][0] = split_l; fac[0][nf[0]++][1] = LR_LANE; }
  if (llog - split_l) { fac[1][nf[1]][0] = llog - split_l; fac[1][nf[1]++][1] = LR_LANE; }
  if (vlog) { fac[vd][nf[vd]][0] = vlog; fac[vd][nf[vd]++][1] = LR_VEC; }
  /* levels: both rests first, then the factors interleaved */
  l->lev[l->nlev++] = (lay_level){ -2, LR_REG, 0 };
  l->lev[l->nlev++] = (lay_level){ -1, LR_REG, 0 };
  int reg[2] = { (int)rnd(3), (int)rnd(3) };   /* extra register factors */
  int64_t fixed[2] = { 1, 1 };
  int widx[2] = { 0, 0 }, lidx[2] = { 0, 0 }, nw = 0, nl = 0;
  for (int d = 0; d < 2; d++) {
    if (reg[d]) { l->lev[l->nlev++] = (lay_level){ (int8_t)(d - 2), LR_REG, 1 << reg[d] }; fixed[d] <<= reg[d]; }
    for (int k = 0; k < nf[d]; k++) {
      int i = l->nlev++;
      l->lev[i] = (lay_level){ (int8_t)(d - 2), (uint8_t)fac[d][k][1], 1 << fac[d][k][0] };
      fixed[d] <<= fac[d][k][0];
      if (fac[d][k][1] == LR_WARP) widx[nw++] = i;
      if (fac[d][k][1] == LR_LANE) lidx[nl++] = i;
    }
  }
  for (int i = 0; i < nw; i++) l->warp[l->nwarp++] = (lay_part){ (int8_t)widx[i], 0 };
  if (rep_w && wlog - split_w) l->warp[l->nwarp++] = (lay_part){ -1, (int16_t)(1 << (wlog - split_w)) };
  if (rnd(2) && nl == 2) { int t = lidx[0]; lidx[0] = lidx[1]; lidx[1] = t; }   /* either lane order */
  for (int i = 0; i < nl; i++) l->lane[l->nlane++] = (lay_part){ (int8_t)lidx[i], 0 };
  for (int d = 0; d < 2; d++) shape[d] = fixed[d] * (1 + rnd(3));
}

void test_layouts(void) {
  lay_layout w;
  lay_wgmma(&w);
  int64_t s[2] = { 128, 64 };
  lay_fit f;
  char why[128];
  CHECK(lay_fit_shape(&w, s, 2, &f, why, sizeof why));
  CHECK(f.nregs == (128 / 64) * (64 / 8) * 2 && f.vlen == 2);
  int bad = 0;
  for (int wp = 0; wp < 4; wp++)
    for (int ln = 0; ln < 32; ln++)
      for (int64_t r = 0; r < f.nregs; r++)
        for (int e = 0; e < 2; e++) {
          int64_t idx[2];
          lay_index(&f, wp, ln, r, e, idx);
          int64_t row = idx[0], col = idx[1];
          int64_t reg = ((row / 64) * (64 / 8) + col / 8) * 2 + (row % 16) / 8;
          bad += wp != (row % 64) / 16 || ln != 4 * (row % 8) + (col % 8) / 2 || e != col % 2 || r != reg;
        }
  CHECK(bad == 0);   /* the PTX wgmma accumulator fragment */
  CHECK(bijection(&w, s, 2));
  /* WGMMA_TRANSPOSED: the same 2x2 blocks per lane pair (lanes 4r+c, 4(r+1)+c, r even),
     transposed: lane 8a + 4s + b holds rows 2a, 2a+1 (its vector) of column 2b + s */
  lay_layout wt;
  lay_wgmma_transposed(&wt);
  CHECK(lay_fit_shape(&wt, s, 2, &f, why, sizeof why));
  CHECK(f.nregs == (128 / 64) * (64 / 8) * 2 && f.vlen == 2);
  bad = 0;
  for (int wp = 0; wp < 4; wp++)
    for (int ln = 0; ln < 32; ln++)
      for (int64_t r = 0; r < f.nregs; r++)
        for (int e = 0; e < 2; e++) {
          int64_t idx[2];
          lay_index(&f, wp, ln, r, e, idx);
          int64_t row = idx[0], col = idx[1];
          int a = ln / 8, sub = (ln / 4) % 2, b = ln % 4;
          bad += wp != (row % 64) / 16 || row % 8 != 2 * a + e || col % 8 != 2 * b + sub;
        }
  CHECK(bad == 0);
  CHECK(bijection(&wt, s, 2) && roundtrip(&wt) && !lay_equal(&wt, &w));
  lay_layout pt;
  CHECK(lay_parse("wgmma_transposed", &pt, why, sizeof why) && lay_equal(&pt, &wt));
  int64_t s3[3] = { 3, 64, 16 };
  CHECK(bijection(&w, s3, 3));   /* a leading batch dim */
  lay_layout row, col, st, sp;
  int a1[1] = { 1 }, a0[1] = { 0 };
  lay_reduce(&w, 2, a1, 1, &row);
  lay_reduce(&w, 2, a0, 1, &col);
  int64_t r1[1] = { 128 }, c1[1] = { 64 };
  CHECK(bijection(&row, r1, 1) && bijection(&col, c1, 1));
  CHECK(free_broadcast(&w, s, 1) && free_broadcast(&w, s, 0));
  lay_strided(&st, 8);
  int64_t sst[2] = { 7, 300 };
  CHECK(bijection(&st, sst, 2));
  lay_splat(&sp);
  CHECK(roundtrip(&w) && roundtrip(&row) && roundtrip(&col) && roundtrip(&st) && roundtrip(&sp));
  lay_layout p;
  CHECK(lay_parse("wgmma.reduce(1)", &p, why, sizeof why) && lay_equal(&p, &row));
  CHECK(lay_parse("tiled((64,8),(16,8),(8,8),(2));warp(-7);lane(-3,-2);vec(-1)", &p, why, sizeof why) && lay_equal(&p, &w));
  CHECK(!lay_parse("tiled((64,8),(16,8));warp(-3);lane(-1)", &p, why, sizeof why));
  CHECK_CONTAINS(why, "warp dims must multiply to 4");
  CHECK(!lay_parse("strided(3)", &p, why, sizeof why));
  CHECK(!lay_parse("wgmma.reduce(2)", &p, why, sizeof why));
  int64_t odd[2] = { 100, 64 };
  CHECK(!lay_fit_shape(&w, odd, 2, &f, why, sizeof why));
  CHECK_CONTAINS(why, "dimension 0 of size 100 is not a multiple of the layout's tile (64)");
  /* a warp-per-row layout for row reductions: rows over warps, 8-wide vectors over lanes */
  CHECK(lay_parse("tiled((4,256),(8));warp(-3);lane(-2);vec(-1)", &p, why, sizeof why));
  int64_t rows[2] = { 8, 1024 };
  CHECK(bijection(&p, rows, 2) && free_broadcast(&p, rows, 1));
  /* random tiled layouts */
  int fails = 0;
  for (int i = 0; i < 300; i++) {
    lay_layout r;
    int64_t shape[2];
    random_layout(&r, shape);
    if (!bijection(&r, shape, 2) || !roundtrip(&r) || !free_broadcast(&r, shape, 0) || !free_broadcast(&r, shape, 1)) {
      strbuf sb;
      mem_alloc al;
      mem_alloc_default(&al);
      sb_init(&sb, &al);
      lay_print(&r, &sb);
      fprintf(stderr, "  random layout %s on %lldx%lld\n", sb_str(&sb), (long long)shape[0], (long long)shape[1]);
      sb_free(&sb);
      if (++fails > 3) break;
    }
  }
  CHECK(fails == 0);
}
