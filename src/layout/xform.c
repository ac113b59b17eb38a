/*
** xform.c -- SMEM transforms: parsing, applying a chain to a shape, and the
** address of an element (tiling, transpose and swizzle math).
*/
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xform.h"

MGPU_PRINTF(3, 4) static bool failw(char *why, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (why && n) vsnprintf(why, n, fmt, ap);
  va_end(ap);
  return false;
}

static const char *const step_names[] = { "", "tiling", "transpose", "swizzle" };

bool xf_parse(const char *text, xf_chain *c, char *why, size_t n) {
  memset(c, 0, sizeof *c);
  const char *p = text ? text : "";
  while (*p) {
    while (isspace((unsigned char)*p)) p++;
    if (!*p) break;
    int kind = 0;
    for (int k = XF_TILING; k <= XF_SWIZZLE; k++) {
      size_t len = strlen(step_names[k]);
      if (strncmp(p, step_names[k], len) == 0 && p[len] == '(') { kind = k; p += len + 1; break; }
    }
    if (!kind) return failw(why, n, "unknown transform at \"%.20s\" (expected tiling, transpose or swizzle)", p);
    if (c->n == XF_MAXSTEP) return failw(why, n, "at most %d transforms", XF_MAXSTEP);
    xf_step *s = &c->s[c->n++];
    s->kind = (uint8_t)kind;
    for (;;) {
      char *end;
      long long v = strtoll(p, &end, 10);
      if (end == p) return failw(why, n, "transform %d: expected a number", c->n);
      if (s->n == XF_MAXRANK) return failw(why, n, "transform %d has more than %d numbers", c->n, XF_MAXRANK);
      s->v[s->n++] = v;
      p = end;
      while (isspace((unsigned char)*p)) p++;
      if (*p == ',') { p++; continue; }
      if (*p == ')') { p++; break; }
      return failw(why, n, "transform %d: expected ',' or ')'", c->n);
    }
    while (isspace((unsigned char)*p)) p++;
    if (*p == ';') p++;
    else if (*p) return failw(why, n, "transforms must be separated by ';' (after transform %d)", c->n);
  }
  return true;
}

void xf_print(const xf_chain *c, strbuf *sb) {
  for (int i = 0; i < c->n; i++) {
    const xf_step *s = &c->s[i];
    sb_printf(sb, "%s%s(", i ? ";" : "", step_names[s->kind]);
    for (int j = 0; j < s->n; j++) sb_printf(sb, "%s%lld", j ? "," : "", (long long)s->v[j]);
    sb_puts(sb, ")");
  }
}

bool xf_apply(const xf_chain *c, const int64_t *shape, int rank, int bytes, xf_map *m, char *why, size_t n) {
  memset(m, 0, sizeof *m);
  m->c = *c;
  m->rank = rank;
  m->bytes = bytes;
  memcpy(m->shape, shape, sizeof(int64_t) * (size_t)rank);
  int r = rank;
  int64_t cur[XF_MAXRANK];
  memcpy(cur, shape, sizeof(int64_t) * (size_t)rank);
  for (int i = 0; i < c->n; i++) {
    const xf_step *s = &c->s[i];
    m->nr[i] = r;
    memcpy(m->sh[i], cur, sizeof cur);
    switch (s->kind) {
    case XF_TILING: {
      if (s->n > r) return failw(why, n, "tiling of rank %d applied to an array of rank %d", s->n, r);
      if (r + s->n > XF_MAXRANK) return failw(why, n, "tiling makes %d dimensions (at most %d)", r + s->n, XF_MAXRANK);
      int first = r - s->n;
      for (int j = 0; j < s->n; j++) {
        if (s->v[j] < 1) return failw(why, n, "tile size %lld must be positive (tile dim %d)", (long long)s->v[j], j);
        if (cur[first + j] % s->v[j])
          return failw(why, n, "tiling: tile size %lld does not divide dimension %d of size %lld", (long long)s->v[j], first + j, (long long)cur[first + j]);
      }
      for (int j = 0; j < s->n; j++) { cur[r + j] = s->v[j]; cur[first + j] /= s->v[j]; }
      r += s->n;
      break;
    }
    case XF_TRANSPOSE: {
      if (s->n != r) return failw(why, n, "transpose has %d axes but the array has rank %d", s->n, r);
      bool seen[XF_MAXRANK] = { false };
      int64_t t[XF_MAXRANK];
      for (int j = 0; j < r; j++) {
        if (s->v[j] < 0 || s->v[j] >= r || seen[s->v[j]])
          return failw(why, n, "transpose: the axes are not a permutation of 0..%d", r - 1);
        seen[s->v[j]] = true;
        t[j] = cur[s->v[j]];
      }
      memcpy(cur, t, sizeof(int64_t) * (size_t)r);
      break;
    }
    case XF_SWIZZLE: {
      int64_t sw = s->v[0];
      if (s->n != 1 || (sw != 32 && sw != 64 && sw != 128 && sw != 16))
        return failw(why, n, "swizzle must be 16, 32, 64 or 128 bytes, got %lld", (long long)sw);
      if (i != c->n - 1) return failw(why, n, "swizzle must be the last transform (it is number %d of %d)", i + 1, c->n);
      if (r < 1 || cur[r - 1] * bytes != sw)
        return failw(why, n, "swizzle(%lld) needs a minor dimension of exactly %lld bytes, but it has %lld (%lld elements of %d bytes); find_swizzle picks one that fits",
                     (long long)sw, (long long)sw, (long long)(r ? cur[r - 1] * bytes : 0), (long long)(r ? cur[r - 1] : 0), bytes);
      m->swizzle = sw == 16 ? 0 : (int)sw;
      break;
    }
    default:
      return failw(why, n, "unknown transform kind %d", s->kind);
    }
  }
  m->nr[c->n] = r;
  memcpy(m->sh[c->n], cur, sizeof cur);
  m->prank = r;
  memcpy(m->pshape, cur, sizeof(int64_t) * (size_t)r);
  int64_t st = 1;
  for (int j = r - 1; j >= 0; j--) { m->pstride[j] = st; st *= cur[j]; }
  m->size = st * bytes;
  return true;
}

void xf_physical(const xf_map *m, const int64_t *idx, int64_t *pidx) {
  int64_t cur[XF_MAXRANK];
  int r = m->rank;
  memcpy(cur, idx, sizeof(int64_t) * (size_t)r);
  for (int i = 0; i < m->c.n; i++) {
    const xf_step *s = &m->c.s[i];
    if (s->kind == XF_TILING) {
      int first = r - s->n;
      for (int j = 0; j < s->n; j++) { cur[r + j] = cur[first + j] % s->v[j]; cur[first + j] /= s->v[j]; }
      r += s->n;
    } else if (s->kind == XF_TRANSPOSE) {
      int64_t t[XF_MAXRANK];
      for (int j = 0; j < r; j++) t[j] = cur[s->v[j]];
      memcpy(cur, t, sizeof(int64_t) * (size_t)r);
    }
  }
  memcpy(pidx, cur, sizeof(int64_t) * (size_t)r);
}

int64_t xf_swizzle(int swizzle, int64_t off) {
  if (!swizzle) return off;
  int64_t mask = swizzle / 16 - 1;
  return off ^ (((off >> 7) & mask) << 4);
}

int64_t xf_linear(const xf_map *m, const int64_t *idx) {
  int64_t p[XF_MAXRANK], off = 0;
  xf_physical(m, idx, p);
  for (int j = 0; j < m->prank; j++) off += p[j] * m->pstride[j];
  return off * m->bytes;
}

int64_t xf_offset(const xf_map *m, const int64_t *idx) { return xf_swizzle(m->swizzle, xf_linear(m, idx)); }
