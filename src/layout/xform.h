/*
** xform.h -- SMEM transforms: how a logical array is laid out in shared
** memory (Pallas' TilingTransform, TransposeTransform, SwizzleTransform).
**
** A chain of steps is applied to the logical shape in order; the result is
** the physical shape, stored row-major.  tiling(t0,..,tk-1) splits the
** trailing k dims (..., d0, .., dk-1) into (..., d0/t0, .., dk-1/tk-1, t0, ..,
** tk-1): each tile contiguous, tiles row-major.  transpose(p0,..) permutes
** the dims (new dim j is old dim p[j]).  swizzle(S), S in 32/64/128, must
** come last and needs a minor dimension of exactly S bytes; it XORs the
** 16-byte chunk index inside each 128-byte line with the line index modulo
** S/16, the pattern TMA and wgmma use on addresses that are 1024-byte
** aligned.  Text form: "tiling(8,64);swizzle(128)", "" for none.
*/
#ifndef MGPU_XFORM_H
#define MGPU_XFORM_H

#include "../core/core.h"

#define XF_MAXSTEP 4
#define XF_MAXRANK 16   /* physical rank: logical rank 8, every dim tiled */

enum { XF_TILING = 1, XF_TRANSPOSE, XF_SWIZZLE };

typedef struct xf_step {
  uint8_t kind;
  uint8_t n;                 /* tile rank, permutation length; swizzle: 1 */
  int64_t v[XF_MAXRANK];     /* tile sizes, permutation, or swizzle bytes */
} xf_step;

typedef struct xf_chain {
  int n;
  xf_step s[XF_MAXSTEP];
} xf_chain;

/* A chain applied to a logical shape and dtype: everything an address needs. */
typedef struct xf_map {
  xf_chain c;
  int rank;                  /* logical */
  int64_t shape[XF_MAXRANK];
  int bytes;                 /* element size */
  int swizzle;               /* 0, 32, 64 or 128 */
  int prank;                 /* physical */
  int64_t pshape[XF_MAXRANK];
  int64_t pstride[XF_MAXRANK];  /* elements */
  int64_t size;              /* bytes */
  int nr[XF_MAXSTEP + 1];    /* rank before each step (and after the last) */
  int64_t sh[XF_MAXSTEP + 1][XF_MAXRANK];
} xf_map;

/* Parse the text form; false + why when malformed. */
bool xf_parse(const char *text, xf_chain *c, char *why, size_t n);
/* Canonical text (round-trips through xf_parse). */
void xf_print(const xf_chain *c, strbuf *sb);
/* Apply to a logical shape; false + why when a step does not fit it (a tile
** that does not divide its dim, a bad permutation, a swizzle that is not
** last or does not match the minor dimension). */
bool xf_apply(const xf_chain *c, const int64_t *shape, int rank, int bytes, xf_map *m, char *why, size_t n);
/* Byte offset of the element at logical index idx (swizzle included). */
int64_t xf_offset(const xf_map *m, const int64_t *idx);
/* The same before the swizzle. */
int64_t xf_linear(const xf_map *m, const int64_t *idx);
/* The physical index (before the swizzle) of a logical index. */
void xf_physical(const xf_map *m, const int64_t *idx, int64_t *pidx);
/* The swizzle of S bytes applied to a byte offset from a 1024-aligned base. */
int64_t xf_swizzle(int swizzle, int64_t off);

#endif
