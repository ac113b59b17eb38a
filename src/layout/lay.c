/*
** lay.c -- the tiled-layout algebra: construction from tiles, the
** canonical level form, fitting to shapes, per-thread ownership, reduce,
** and the text form shared with the Lua front end.
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lay.h"

static bool failw(char *why, size_t n, const char *msg) {
  if (why && n) snprintf(why, n, "%s", msg);
  return false;
}

void lay_splat(lay_layout *l) { memset(l, 0, sizeof *l); l->kind = LAY_SPLAT; }
void lay_strided(lay_layout *l, int vec) { memset(l, 0, sizeof *l); l->kind = LAY_STRIDED; l->vec = (uint8_t)vec; }

/* -- Canonical form ------------------------------------------------------------------ */

/* Drop size-1 factors (they change no index), merge neighbouring
** replications, and renumber the parts' level references. */
static void canonical(lay_layout *l) {
  int map[LAY_MAXLEV];
  int n = 0;
  for (int i = 0; i < l->nlev; i++) {
    if (l->lev[i].size == 1) { map[i] = -1; continue; }
    map[i] = n;
    l->lev[n++] = l->lev[i];
  }
  l->nlev = (uint8_t)n;
  lay_part *lists[2] = { l->warp, l->lane };
  uint8_t *counts[2] = { &l->nwarp, &l->nlane };
  for (int k = 0; k < 2; k++) {
    lay_part *p = lists[k];
    int m = 0;
    for (int i = 0; i < *counts[k]; i++) {
      lay_part q = p[i];
      if (q.lev >= 0) {
        if (map[q.lev] < 0) continue;      /* a factor of one */
        q.lev = (int8_t)map[q.lev];
      } else if (q.rep == 1) {
        continue;
      }
      if (q.lev < 0 && m > 0 && p[m - 1].lev < 0) { p[m - 1].rep = (int16_t)(p[m - 1].rep * q.rep); continue; }
      p[m++] = q;
    }
    *counts[k] = (uint8_t)m;
  }
}

bool lay_tiled(lay_layout *l, int ntiles, const int *tile_rank, const int (*tiles)[LAY_MAXRANK],
               int nwarp, const int *warp, int nlane, const int *lane, int vec_dim, char *why, size_t n) {
  memset(l, 0, sizeof *l);
  l->kind = LAY_TILED;
  if (ntiles < 1 || ntiles > 4) return failw(why, n, "a tiled layout needs 1 to 4 tiles");
  int r0 = tile_rank[0];
  if (r0 < 1 || r0 > LAY_MAXRANK) return failw(why, n, "the first tile must have rank 1 to 8");
  /* tiled dims: (ldim, size) with size 0 = the rest of the logical dim */
  int td = 0;
  lay_level dims[LAY_MAXLEV];
  for (int j = 0; j < r0; j++) dims[td++] = (lay_level){ (int8_t)(j - r0), LR_REG, 0 };
  for (int t = 0; t < ntiles; t++) {
    int r = tile_rank[t];
    if (r < 1 || r > td || (t > 0 && r > tile_rank[t - 1])) return failw(why, n, "tile ranks must not increase");
    if (td + r > LAY_MAXLEV) return failw(why, n, "too many tiled dimensions");
    lay_level inner[LAY_MAXRANK];
    for (int j = 0; j < r; j++) {
      lay_level *d = &dims[td - r + j];
      int ts = tiles[t][j];
      if (ts < 1) return failw(why, n, "tile sizes must be at least 1");
      if (d->size && d->size % ts) return failw(why, n, "a tile does not divide the dimension it tiles");
      inner[j] = (lay_level){ d->ldim, LR_REG, ts };
      d->size = d->size ? d->size / ts : 0;
    }
    for (int j = 0; j < r; j++) dims[td++] = inner[j];
  }
  memcpy(l->lev, dims, sizeof(lay_level) * (size_t)td);
  l->nlev = (uint8_t)td;
  l->rank = (uint8_t)r0;
  /* roles; entries > 0 are replications, < 0 tiled dims from the end */
  const int *lists[2] = { warp, lane };
  int counts[2] = { nwarp, nlane }, want[2] = { 4, 32 }, maxp[2] = { 4, 6 };
  lay_part *parts[2] = { l->warp, l->lane };
  for (int k = 0; k < 2; k++) {
    if (counts[k] > maxp[k]) return failw(why, n, k ? "too many lane dims" : "too many warp dims");
    int64_t prod = 1;
    for (int i = 0; i < counts[k]; i++) {
      int e = lists[k][i];
      if (e > 0) { parts[k][i] = (lay_part){ -1, (int16_t)e }; prod *= e; continue; }
      int d = td + e;
      if (e == 0 || d < 0) return failw(why, n, "a warp or lane dim is out of range");
      if (l->lev[d].role != LR_REG || l->lev[d].size == 0)
        return failw(why, n, "warp and lane dims must be distinct tiled dims of fixed size");
      l->lev[d].role = (uint8_t)(k ? LR_LANE : LR_WARP);
      parts[k][i] = (lay_part){ (int8_t)d, 0 };
      prod *= l->lev[d].size;
    }
    if (prod != want[k]) return failw(why, n, k ? "lane dims must multiply to 32" : "warp dims must multiply to 4");
  }
  l->nwarp = (uint8_t)nwarp;
  l->nlane = (uint8_t)nlane;
  if (vec_dim) {
    int d = td + vec_dim;
    if (vec_dim > 0 || d < 0 || l->lev[d].role != LR_REG || l->lev[d].size == 0)
      return failw(why, n, "the vector dim must be a tiled dim of fixed size with no other role");
    l->lev[d].role = LR_VEC;
  }
  canonical(l);
  return true;
}

void lay_wgmma(lay_layout *l) {
  static const int tr[4] = { 2, 2, 2, 1 };
  static const int tiles[4][LAY_MAXRANK] = { { 64, 8 }, { 16, 8 }, { 8, 8 }, { 2 } };
  static const int warp[1] = { -7 }, lane[2] = { -3, -2 };
  bool ok = lay_tiled(l, 4, tr, tiles, 1, warp, 2, lane, -1, NULL, 0);
  mgpu_assert(ok);
}

/* Pallas' WGMMA_LAYOUT_8BIT: the 8-bit A fragment, each warp's 16 rows in
** 8x16 submatrices whose rows are 4 lanes x vectors of 4. */
void lay_wgmma_8bit(lay_layout *l) {
  static const int tr[4] = { 2, 2, 2, 1 };
  static const int tiles[4][LAY_MAXRANK] = { { 64, 16 }, { 16, 16 }, { 8, 16 }, { 4 } };
  static const int warp[1] = { -7 }, lane[2] = { -3, -2 };
  bool ok = lay_tiled(l, 4, tr, tiles, 1, warp, 2, lane, -1, NULL, 0);
  mgpu_assert(ok);
}

/* Pallas' WGMMA_TRANSPOSED: the WGMMA layout with every lane pair's 2x2
** submatrices transposed (lanes 4r+c and 4(r+1)+c, r even, swap their
** off-diagonal elements), so that each thread's vector of 2 runs down a
** column: lane 8a + 4s + b holds rows 2a, 2a+1 of column 2b + s of its
** warp's 8x8 blocks.  Loads and stores through a transposed SMEM ref move
** those pairs as 32-bit words. */
void lay_wgmma_transposed(lay_layout *l) {
  static const int tr[4] = { 2, 2, 2, 2 };
  static const int tiles[4][LAY_MAXRANK] = { { 64, 8 }, { 16, 8 }, { 8, 8 }, { 2, 2 } };
  static const int warp[1] = { -8 }, lane[3] = { -4, -1, -3 };
  bool ok = lay_tiled(l, 4, tr, tiles, 1, warp, 3, lane, -2, NULL, 0);
  mgpu_assert(ok);
}

/* Pallas' TCGEN05 layout: WGMMA's fragments over 128 rows, warp w holding
** rows 32w..32w+31 (tcgen05.ld/st 16x256b). */
void lay_tcgen05(lay_layout *l) {
  static const int tr[4] = { 2, 2, 2, 1 };
  static const int tiles[4][LAY_MAXRANK] = { { 128, 8 }, { 32, 8 }, { 8, 8 }, { 2 } };
  static const int warp[1] = { -7 }, lane[2] = { -3, -2 };
  bool ok = lay_tiled(l, 4, tr, tiles, 1, warp, 2, lane, -1, NULL, 0);
  mgpu_assert(ok);
}

/* Pallas' TMEM_NATIVE layout: thread t holds row t of 128, in vectors of
** vec (tcgen05.ld/st 32x32b). */
void lay_tmem_native(lay_layout *l, int vec) {
  static const int tr[2] = { 2, 2 };
  int tiles[2][LAY_MAXRANK] = { { 128, vec }, { 32, vec } };
  static const int warp[1] = { -4 }, lane[1] = { -2 };
  bool ok = lay_tiled(l, 2, tr, (const int (*)[LAY_MAXRANK])tiles, 1, warp, 1, lane, -1, NULL, 0);
  mgpu_assert(ok);
}

bool lay_equal(const lay_layout *a, const lay_layout *b) {
  if (a->kind != b->kind) return false;
  if (a->kind == LAY_STRIDED) return a->vec == b->vec;
  if (a->kind != LAY_TILED) return true;
  if (a->nlev != b->nlev || a->nwarp != b->nwarp || a->nlane != b->nlane || a->rank != b->rank) return false;
  for (int i = 0; i < a->nlev; i++)
    if (a->lev[i].ldim != b->lev[i].ldim || a->lev[i].role != b->lev[i].role || a->lev[i].size != b->lev[i].size) return false;
  for (int i = 0; i < a->nwarp; i++) if (a->warp[i].lev != b->warp[i].lev || a->warp[i].rep != b->warp[i].rep) return false;
  for (int i = 0; i < a->nlane; i++) if (a->lane[i].lev != b->lane[i].lev || a->lane[i].rep != b->lane[i].rep) return false;
  return true;
}

/* -- Reduce ---------------------------------------------------------------------------- */

void lay_reduce(const lay_layout *l, int rank, const int *axes, int naxes, lay_layout *out) {
  *out = *l;
  if (l->kind != LAY_TILED) {
    if (l->kind == LAY_STRIDED) {
      bool all = naxes == rank;
      if (all) lay_splat(out); else memset(out, 0, sizeof *out);   /* partial: no layout */
    }
    return;
  }
  int sorted[LAY_MAXRANK];
  for (int a = 0; a < naxes; a++) sorted[a] = axes[a];
  for (int a = 0; a < naxes; a++)           /* highest axis first: lower ones keep their place */
    for (int b = a + 1; b < naxes; b++)
      if (sorted[b] > sorted[a]) { int t = sorted[a]; sorted[a] = sorted[b]; sorted[b] = t; }
  for (int a = 0; a < naxes; a++) {
    int q = sorted[a] - rank + out->rank;   /* position among the covered dims */
    if (q < 0) { rank--; continue; }        /* a leading, untiled dim */
    int ld = q - out->rank;                 /* negative ldim */
    for (int i = 0; i < out->nlev; i++) {
      lay_level *v = &out->lev[i];
      if (v->ldim != ld) continue;
      lay_part *lists[2] = { out->warp, out->lane };
      uint8_t counts[2] = { out->nwarp, out->nlane };
      for (int k = 0; k < 2; k++)
        for (int j = 0; j < counts[k]; j++)
          if (lists[k][j].lev == i) lists[k][j] = (lay_part){ -1, (int16_t)v->size };
      v->size = 1;                          /* removed by canonical() */
      v->role = LR_REG;
    }
    for (int i = 0; i < out->nlev; i++)
      if (out->lev[i].ldim < ld) out->lev[i].ldim++;
    out->rank--;
    rank--;
  }
  canonical(out);
  if (out->rank == 0) lay_splat(out);
}

/* -- Fitting to a shape --------------------------------------------------------------------- */

bool lay_fit_shape(const lay_layout *l, const int64_t *shape, int rank, lay_fit *f, char *why, size_t n) {
  memset(f, 0, sizeof *f);
  f->l = l;
  f->rank = rank;
  memcpy(f->shape, shape, sizeof(int64_t) * (size_t)rank);
  f->vlev = -1;
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= shape[i];
  switch (l->kind) {
  case LAY_SPLAT: f->nregs = 1; f->vlen = 1; return true;
  case LAY_STRIDED: f->vlen = l->vec; f->nregs = (numel + 128 * l->vec - 1) / (128 * l->vec); return true;
  case LAY_TILED: break;
  default: return failw(why, n, "no layout");
  }
  if (rank < l->rank) return failw(why, n, "the layout tiles more dimensions than the array has");
  int lead = rank - l->rank;
  for (int i = 0; i < lead; i++) {   /* untiled leading dims: one register level each */
    f->lev[f->nlev] = (lay_level){ (int8_t)(i - rank), LR_REG, (int32_t)shape[i] };
    f->ldim[f->nlev] = i;
    f->size[f->nlev++] = shape[i];
  }
  int first = f->nlev;
  for (int i = 0; i < l->nlev; i++) {
    f->lev[f->nlev] = l->lev[i];
    f->ldim[f->nlev] = rank + l->lev[i].ldim;
    f->size[f->nlev++] = l->lev[i].size;
  }
  for (int d = lead; d < rank; d++) {   /* resolve "the rest" */
    int64_t fixed = 1;
    int rest = -1;
    for (int i = first; i < f->nlev; i++) {
      if (f->ldim[i] != d) continue;
      if (f->size[i] == 0) rest = i; else fixed *= f->size[i];
    }
    if (shape[d] % fixed) {
      char msg[160];
      snprintf(msg, sizeof msg, "dimension %d of size %lld is not a multiple of the layout's tile (%lld)", d,
               (long long)shape[d], (long long)fixed);
      return failw(why, n, msg);
    }
    if (rest >= 0) f->size[rest] = shape[d] / fixed;
    else if (fixed != shape[d]) {
      char msg[160];
      snprintf(msg, sizeof msg, "dimension %d must have size %lld for this layout, not %lld", d, (long long)fixed,
               (long long)shape[d]);
      return failw(why, n, msg);
    }
  }
  f->nregs = 1;
  f->vlen = 1;
  for (int i = 0; i < f->nlev; i++) {
    int64_t s = 1;
    for (int j = i + 1; j < f->nlev; j++) if (f->ldim[j] == f->ldim[i]) s *= f->size[j];
    f->stride[i] = s;
    if (f->lev[i].role == LR_REG) f->nregs *= f->size[i];
    if (f->lev[i].role == LR_VEC) { f->vlen = (int)f->size[i]; f->vlev = i; }
  }
  return true;
}

/* Spread index x over parts (major first); write each level's share into lidx. */
static void split(const lay_part *p, int np, const lay_fit *f, int first, int64_t x, int64_t *lidx, int64_t total) {
  for (int i = 0; i < np; i++) {
    int64_t s = p[i].lev >= 0 ? f->size[first + p[i].lev] : p[i].rep;
    total /= s;
    int64_t q = x / total;
    x %= total;
    if (p[i].lev >= 0) lidx[first + p[i].lev] = q;
  }
}

void lay_index(const lay_fit *f, int warp, int lane, int64_t reg, int e, int64_t *idx) {
  for (int i = 0; i < f->rank; i++) idx[i] = 0;
  const lay_layout *l = f->l;
  if (l->kind == LAY_SPLAT) return;
  if (l->kind == LAY_STRIDED) {
    int64_t flat = (reg * 128 + (int64_t)(warp * 32 + lane)) * l->vec + e;
    for (int i = f->rank - 1; i > 0; i--) { idx[i] = flat % f->shape[i]; flat /= f->shape[i]; }
    if (f->rank) idx[0] = flat;   /* past the end for padding elements */
    return;
  }
  int64_t lidx[LAY_MAXLEV + LAY_MAXRANK] = { 0 };
  int first = f->nlev - l->nlev;
  split(l->warp, l->nwarp, f, first, warp, lidx, 4);
  split(l->lane, l->nlane, f, first, lane, lidx, 32);
  for (int i = f->nlev - 1; i >= 0; i--) {   /* registers, last level fastest */
    if (f->lev[i].role == LR_REG) { lidx[i] = reg % f->size[i]; reg /= f->size[i]; }
    if (f->lev[i].role == LR_VEC) lidx[i] = e;
  }
  for (int i = 0; i < f->nlev; i++) idx[f->ldim[i]] += lidx[i] * f->stride[i];
}

bool lay_owner(const lay_fit *f, int warp, int lane) {
  const lay_layout *l = f->l;
  if (l->kind == LAY_SPLAT) return warp == 0 && lane == 0;
  if (l->kind != LAY_TILED) return true;
  const lay_part *lists[2] = { l->warp, l->lane };
  int np[2] = { l->nwarp, l->nlane }, x[2] = { warp, lane }, total[2] = { 4, 32 };
  int first = f->nlev - l->nlev;
  for (int k = 0; k < 2; k++) {
    int64_t t = total[k], v = x[k];
    for (int i = 0; i < np[k]; i++) {
      int64_t s = lists[k][i].lev >= 0 ? f->size[first + lists[k][i].lev] : lists[k][i].rep;
      t /= s;
      if (lists[k][i].lev < 0 && v / t) return false;
      v %= t;
    }
  }
  return true;
}

/* -- Text form ------------------------------------------------------------------------------ */

static const char role_ch[] = { 0, 'w', 'l', 'v' };

void lay_print(const lay_layout *l, strbuf *sb) {
  switch (l->kind) {
  case LAY_SPLAT: sb_puts(sb, "splat"); return;
  case LAY_STRIDED: sb_printf(sb, "strided(%d)", l->vec); return;
  case LAY_TILED: break;
  default: sb_puts(sb, "none"); return;
  }
  sb_printf(sb, "levels%d(", l->rank);
  for (int i = 0; i < l->nlev; i++) {
    const lay_level *v = &l->lev[i];
    if (i) sb_putc(sb, ' ');
    if (v->size) sb_printf(sb, "%d:%d", v->ldim, v->size);
    else sb_printf(sb, "%d:*", v->ldim);
    if (v->role) sb_putc(sb, role_ch[v->role]);
  }
  sb_puts(sb, ")");
  const lay_part *lists[2] = { l->warp, l->lane };
  int np[2] = { l->nwarp, l->nlane };
  for (int k = 0; k < 2; k++) {
    sb_puts(sb, k ? " lane(" : " warp(");
    for (int i = 0; i < np[k]; i++) {
      if (i) sb_putc(sb, ',');
      if (lists[k][i].lev >= 0) sb_printf(sb, "%d", lists[k][i].lev);
      else sb_printf(sb, "rep%d", lists[k][i].rep);
    }
    sb_putc(sb, ')');
  }
}

typedef struct reader { const char *p; } reader;

static void skip(reader *r) { while (isspace((unsigned char)*r->p)) r->p++; }
static bool eat(reader *r, const char *s) {
  skip(r);
  size_t n = strlen(s);
  if (strncmp(r->p, s, n)) return false;
  r->p += n;
  return true;
}
static bool num(reader *r, long *v) {
  skip(r);
  char *end;
  *v = strtol(r->p, &end, 10);
  if (end == r->p) return false;
  r->p = end;
  return true;
}

/* "(a,b,...)" of integers */
static int int_list(reader *r, int *out, int max) {
  if (!eat(r, "(")) return -1;
  int n = 0;
  if (eat(r, ")")) return 0;
  do {
    long v;
    if (n >= max || !num(r, &v)) return -1;
    out[n++] = (int)v;
  } while (eat(r, ","));
  return eat(r, ")") ? n : -1;
}

/* tiled((64,8),(16,8));warp(-7);lane(-3,-2);vec(-1) -- replications as rep4 */
static bool parse_tiled(reader *r, lay_layout *l, char *why, size_t n) {
  int tr[4], tiles[4][LAY_MAXRANK], nt = 0;
  if (!eat(r, "(")) return failw(why, n, "expected '(' after tiled");
  do {
    if (nt >= 4) return failw(why, n, "at most 4 tiles");
    int k = int_list(r, tiles[nt], LAY_MAXRANK);
    if (k < 1) return failw(why, n, "a tile is a parenthesised list of sizes");
    tr[nt++] = k;
  } while (eat(r, ","));
  if (!eat(r, ")")) return failw(why, n, "expected ')' after the tiles");
  int warp[4], lane[6], nw = 0, nl = 0, vec = 0;
  const char *names[2] = { "warp(", "lane(" };
  int *lists[2] = { warp, lane }, *counts[2] = { &nw, &nl }, maxs[2] = { 4, 6 };
  for (int k = 0; k < 2; k++) {
    if (!eat(r, ";") || !eat(r, names[k])) return failw(why, n, k ? "expected ;lane(...)" : "expected ;warp(...)");
    if (!eat(r, ")")) {
      do {
        long v;
        if (*counts[k] >= maxs[k]) return failw(why, n, "too many warp or lane dims");
        if (eat(r, "rep")) { if (!num(r, &v) || v < 1) return failw(why, n, "rep needs a count"); }
        else if (!num(r, &v) || v >= 0) return failw(why, n, "warp and lane dims are negative indices or repN");
        lists[k][(*counts[k])++] = (int)v;
      } while (eat(r, ","));
      if (!eat(r, ")")) return failw(why, n, "expected ')'");
    }
  }
  if (eat(r, ";")) {
    long v;
    if (!eat(r, "vec(") || !num(r, &v) || !eat(r, ")")) return failw(why, n, "expected ;vec(dim)");
    vec = (int)v;
  }
  return lay_tiled(l, nt, tr, (const int (*)[LAY_MAXRANK])tiles, nw, warp, nl, lane, vec, why, n);
}

/* levelsR(ldim:size[role] ...) warp(...) lane(...) -- lay_print's form */
static bool parse_levels(reader *r, lay_layout *l, char *why, size_t n) {
  memset(l, 0, sizeof *l);
  l->kind = LAY_TILED;
  long rank;
  if (!num(r, &rank) || rank < 1 || rank > LAY_MAXRANK || !eat(r, "(")) return failw(why, n, "expected levelsR(");
  l->rank = (uint8_t)rank;
  while (!eat(r, ")")) {
    long ld, size = 0;
    if (l->nlev >= LAY_MAXLEV || !num(r, &ld) || ld >= 0 || ld < -rank || !eat(r, ":")) return failw(why, n, "bad level");
    if (!eat(r, "*") && (!num(r, &size) || size < 1)) return failw(why, n, "bad level size");
    lay_level *v = &l->lev[l->nlev++];
    v->ldim = (int8_t)ld;
    v->size = (int32_t)size;
    if (eat(r, "w")) v->role = LR_WARP;
    else if (eat(r, "l")) v->role = LR_LANE;
    else if (eat(r, "v")) v->role = LR_VEC;
  }
  const char *names[2] = { "warp(", "lane(" };
  lay_part *lists[2] = { l->warp, l->lane };
  uint8_t *counts[2] = { &l->nwarp, &l->nlane };
  int maxs[2] = { 4, 6 }, want[2] = { 4, 32 };
  for (int k = 0; k < 2; k++) {
    if (!eat(r, names[k])) return failw(why, n, "expected warp(...) and lane(...)");
    int64_t prod = 1;
    if (!eat(r, ")")) {
      do {
        long v;
        if (*counts[k] >= maxs[k]) return failw(why, n, "too many parts");
        lay_part p;
        if (eat(r, "rep")) { if (!num(r, &v) || v < 1) return failw(why, n, "bad rep"); p = (lay_part){ -1, (int16_t)v }; prod *= v; }
        else {
          if (!num(r, &v) || v < 0 || v >= l->nlev) return failw(why, n, "bad level reference");
          p = (lay_part){ (int8_t)v, 0 };
          prod *= l->lev[v].size;
        }
        lists[k][(*counts[k])++] = p;
      } while (eat(r, ","));
      if (!eat(r, ")")) return failw(why, n, "expected ')'");
    }
    if (prod != want[k]) return failw(why, n, k ? "lanes must multiply to 32" : "warps must multiply to 4");
  }
  canonical(l);
  return true;
}

bool lay_parse(const char *text, lay_layout *l, char *why, size_t n) {
  reader r = { text };
  long v;
  memset(l, 0, sizeof *l);
  if (eat(&r, "splat")) lay_splat(l);
  else if (eat(&r, "strided(")) {
    if (!num(&r, &v) || v < 1 || v > 16 || (v & (v - 1)) || !eat(&r, ")")) return failw(why, n, "strided(vec): vec is 1, 2, 4, 8 or 16");
    lay_strided(l, (int)v);
  } else if (eat(&r, "tcgen05_native(")) {
    if (!num(&r, &v) || v < 1 || v > 16 || (v & (v - 1)) || !eat(&r, ")")) return failw(why, n, "tcgen05_native(vec): vec is 1, 2, 4, 8 or 16");
    lay_tmem_native(l, (int)v);
  } else if (eat(&r, "tcgen05")) lay_tcgen05(l);
  else if (eat(&r, "wgmma_8bit")) lay_wgmma_8bit(l);
  else if (eat(&r, "wgmma_transposed")) lay_wgmma_transposed(l);
  else if (eat(&r, "wgmma")) lay_wgmma(l);
  else if (eat(&r, "tiled")) { if (!parse_tiled(&r, l, why, n)) return false; }
  else if (eat(&r, "levels")) { if (!parse_levels(&r, l, why, n)) return false; }
  else return failw(why, n, "unknown layout (expected splat, strided(v), wgmma, tcgen05, tcgen05_native(v), tiled(...) or levels...)");
  while (eat(&r, ".reduce")) {
    int axes[LAY_MAXRANK];
    int k = int_list(&r, axes, LAY_MAXRANK);
    if (k < 1) return failw(why, n, "reduce needs a list of axes");
    if (l->kind != LAY_TILED) return failw(why, n, "only tiled layouts can be reduced by name");
    for (int i = 0; i < k; i++)
      if (axes[i] < 0 || axes[i] >= l->rank) return failw(why, n, "reduce axis out of range for the layout");
    lay_layout out;
    lay_reduce(l, l->rank, axes, k, &out);
    *l = out;
  }
  skip(&r);
  if (*r.p) return failw(why, n, "unexpected text after the layout");
  return true;
}
