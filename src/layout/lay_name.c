/*
** lay_name.c -- layouts as the Lua API writes them, for messages and
** MGPU_DEBUG=layout: WG_SPLAT, WG_STRIDED(v), WGMMA, WGMMA:reduce(1),
** TILED{ tiling = {...}, ... }.  The level form lay_print writes is the
** engine's own and never shown to users.
*/
#include <stdio.h>
#include <string.h>

#include "lay.h"

void lay_rows_text(int vec, char *buf, size_t n) {
  snprintf(buf, n, "tiled((4,%d),(%d));warp(-3);lane(-2);vec(-1)", 32 * vec, vec);
}

/* A list of dims "(-3,rep4)" as "{-3, mgpu.Replicated(4)}"; p just past '('. */
static const char *dims_api(const char *p, strbuf *sb) {
  sb_putc(sb, '{');
  for (bool first = true; *p && *p != ')'; first = false) {
    if (*p == ',') p++;
    if (!first) sb_puts(sb, ", ");
    if (!strncmp(p, "rep", 3)) {
      p += 3;
      sb_puts(sb, "mgpu.Replicated(");
      while (*p && *p != ',' && *p != ')') sb_putc(sb, *p++);
      sb_putc(sb, ')');
    } else {
      while (*p && *p != ',' && *p != ')') sb_putc(sb, *p++);
    }
  }
  sb_putc(sb, '}');
  return *p ? p + 1 : p;
}

bool lay_tiled_api_text(const char *text, strbuf *sb) {
  if (strncmp(text, "tiled(", 6)) return false;
  const char *p = text + 6;
  sb_puts(sb, "TILED{ tiling = {");
  for (bool first = true; *p == '(' || *p == ','; first = false) {
    if (*p == ',') p++;
    if (*p != '(') return false;
    if (!first) sb_puts(sb, ", ");
    p = dims_api(p + 1, sb);
  }
  if (*p++ != ')') return false;
  sb_putc(sb, '}');
  static const char *const keys[3][2] = { { ";warp(", "warp_dims" }, { ";lane(", "lane_dims" }, { ";vec(", "vector_dim" } };
  for (int i = 0; i < 3; i++) {
    size_t kl = strlen(keys[i][0]);
    if (strncmp(p, keys[i][0], kl)) continue;
    sb_printf(sb, ", %s = ", keys[i][1]);
    p += kl;
    if (i < 2) p = dims_api(p, sb);
    else {
      while (*p && *p != ')') sb_putc(sb, *p++);
      if (*p) p++;
    }
  }
  sb_puts(sb, " }");
  return *p == 0;
}

int lay_known_layouts(lay_known *out) {
  int n = 0;
  memset(out, 0, sizeof(lay_known) * LAY_NKNOWN);
  lay_wgmma(&out[n].l); snprintf(out[n++].name, sizeof out->name, "WGMMA");
  lay_wgmma_transposed(&out[n].l); snprintf(out[n++].name, sizeof out->name, "WGMMA_TRANSPOSED");
  lay_wgmma_8bit(&out[n].l); snprintf(out[n++].name, sizeof out->name, "WGMMA_8BIT");
  for (int v = 1; v <= 16; v *= 2) {   /* the rows layouts inference picks by default */
    lay_rows_text(v, out[n].text, sizeof out->text);
    if (lay_parse(out[n].text, &out[n].l, NULL, 0)) n++;
  }
  lay_tcgen05(&out[n].l); snprintf(out[n++].name, sizeof out->name, "TCGEN05");
  for (int v = 1; v <= 16; v *= 2) {
    lay_tmem_native(&out[n].l, v);
    snprintf(out[n++].name, sizeof out->name, "TCGEN05_TMEM_NATIVE(%d)", v);
  }
  return n;
}

/* Does l equal base reduced over some proper subset of its axes?  Writes
** the axes ("1" or "0,2") into ax. */
static bool reduced_from(const lay_layout *l, const lay_layout *base, char *ax, size_t n) {
  int rank = base->rank;
  if (base->kind != LAY_TILED || rank < 2 || rank > 6) return false;
  for (int mask = 1; mask < (1 << rank) - 1; mask++) {
    int axes[8], k = 0;
    for (int a = 0; a < rank; a++) if (mask >> a & 1) axes[k++] = a;
    lay_layout r;
    lay_reduce(base, rank, axes, k, &r);
    if (!lay_equal(&r, l)) continue;
    size_t used = 0;
    for (int i = 0; i < k && used < n; i++) used += (size_t)snprintf(ax + used, n - used, i ? ",%d" : "%d", axes[i]);
    return true;
  }
  return false;
}

void lay_name(const lay_layout *l, const char *const *texts, int ntexts, strbuf *sb) {
  switch (l->kind) {
  case LAY_SPLAT: sb_puts(sb, "WG_SPLAT"); return;
  case LAY_STRIDED: sb_printf(sb, "WG_STRIDED(%d)", l->vec); return;
  case LAY_TILED: break;
  default: sb_puts(sb, "no layout"); return;
  }
  lay_known base[LAY_NKNOWN];
  int nb = lay_known_layouts(base);
  char ax[32];
  for (int pass = 0; pass < 2; pass++) {   /* equal first, then reduced */
    for (int i = 0; i < nb + ntexts; i++) {
      lay_layout tl;
      const lay_layout *b;
      const char *text;
      if (i < nb) { b = &base[i].l; text = base[i].text[0] ? base[i].text : NULL; }
      else {
        text = texts[i - nb];
        if (!text || strncmp(text, "tiled(", 6) || !lay_parse(text, &tl, NULL, 0)) continue;
        b = &tl;
      }
      bool hit = pass == 0 ? lay_equal(b, l) : reduced_from(l, b, ax, sizeof ax);
      if (!hit) continue;
      if (!text) sb_puts(sb, base[i].name);
      else if (!lay_tiled_api_text(text, sb)) sb_puts(sb, "TILED{...}");
      if (pass) sb_printf(sb, ":reduce(%s)", ax);
      return;
    }
  }
  sb_puts(sb, "a TILED layout");
}
