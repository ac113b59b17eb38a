/*
** lay.h -- register layouts: how a warpgroup's 128 threads hold an array.
**
** Three kinds.  SPLAT: one value, every element equal (constants).
** STRIDED(vec): the flattened array in vectors of `vec` consecutive
** elements, dealt to threads round-robin.  TILED: Pallas' tiled layouts.
**
** A tiled layout is written as a multi-level tiling of the array plus which
** tiled dimensions go to the 4 warps, the 32 lanes and the register vector
** (lay_parse accepts "tiled((64,8),(16,8),(8,8),(2));warp(-7);lane(-3,-2);vec(-1)").
** Internally it is kept applied: a list of levels in tiled-dimension
** order, each a factor of one logical dimension with a role.  For logical
** dim d, index_d = sum over its levels of level_index * level_stride, the
** stride of a level being the product of the sizes of the later levels of
** the same dim.  The first level of each tiled dim has size 0 ("the rest":
** shape[d] divided by the product of its other levels).  Warps and lanes
** are split over levels (major to minor) or replicated.  Registers are the
** REG levels in order, row-major.
*/
#ifndef MGPU_LAY_H
#define MGPU_LAY_H

#include "../core/core.h"

#define LAY_MAXLEV 24
#define LAY_MAXRANK 8

enum { LAY_NONE = 0, LAY_SPLAT, LAY_STRIDED, LAY_TILED };
enum { LR_REG = 0, LR_WARP, LR_LANE, LR_VEC };

typedef struct lay_level {
  int8_t ldim;      /* logical dim counted from the end (-1 = last) */
  uint8_t role;     /* LR_* */
  int32_t size;     /* 0: the rest of the dim */
} lay_level;

/* One factor of the warp (or lane) index: a level, or `rep` copies. */
typedef struct lay_part {
  int8_t lev;       /* level index, or -1 for a replication */
  int16_t rep;
} lay_part;

typedef struct lay_layout {
  uint8_t kind;
  uint8_t vec;                 /* STRIDED: elements per register vector */
  uint8_t nlev, nwarp, nlane;
  uint8_t rank;                /* TILED: trailing logical dims the levels cover */
  lay_level lev[LAY_MAXLEV];
  lay_part warp[4], lane[6];
} lay_layout;

/* A layout applied to an array shape: everything index math needs. */
typedef struct lay_fit {
  const lay_layout *l;
  int rank;                    /* logical rank */
  int64_t shape[LAY_MAXRANK];
  int nlev;                    /* levels including implicit leading ones */
  lay_level lev[LAY_MAXLEV + LAY_MAXRANK];
  int64_t size[LAY_MAXLEV + LAY_MAXRANK];     /* resolved sizes */
  int64_t stride[LAY_MAXLEV + LAY_MAXRANK];   /* within their logical dim */
  int ldim[LAY_MAXLEV + LAY_MAXRANK];         /* logical dim, from the start */
  int64_t nregs;               /* register vectors per thread */
  int vlen;                    /* elements per register vector */
  int vlev;                    /* level of the vector, or -1 */
} lay_fit;

/* Build layouts (false + message in why when invalid). */
void lay_splat(lay_layout *l);
void lay_strided(lay_layout *l, int vec);
bool lay_tiled(lay_layout *l, int ntiles, const int *tile_rank, const int (*tiles)[LAY_MAXRANK],
               int nwarp, const int *warp, int nlane, const int *lane, int vec_dim, char *why, size_t n);
/* Named layouts (Pallas' plgpu.Layout). */
void lay_wgmma(lay_layout *l);
void lay_wgmma_8bit(lay_layout *l);   /* the 8-bit wgmma A fragment (vectors of 4) */
void lay_wgmma_transposed(lay_layout *l);   /* WGMMA with each lane pair's 2x2 blocks transposed */
void lay_tcgen05(lay_layout *l);       /* WGMMA's fragments over 128 rows, 32 per warp (TMEM loads, 16x256b) */
void lay_tmem_native(lay_layout *l, int vec);   /* row t of 128 in thread t, vectors of vec (TMEM loads, 32x32b) */
/* Text form: "splat", "strided(8)", "wgmma", "wgmma_8bit", "wgmma_transposed", "wgmma.reduce(1)",
** "tcgen05", "tcgen05_native(2)", "tiled(...)...". */
bool lay_parse(const char *text, lay_layout *l, char *why, size_t n);
/* Canonical text (round-trips through lay_parse). */
void lay_print(const lay_layout *l, strbuf *sb);
bool lay_equal(const lay_layout *a, const lay_layout *b);

/* Apply to a shape of the given rank; false + why when it does not fit. */
bool lay_fit_shape(const lay_layout *l, const int64_t *shape, int rank, lay_fit *f, char *why, size_t n);
/* Logical index of element e of register r of thread (warp, lane). */
void lay_index(const lay_fit *f, int warp, int lane, int64_t reg, int e, int64_t *idx);
/* Does thread (warp, lane) hold a copy that counts (not a replica)?  For
** stores: only one thread writes each element. */
bool lay_owner(const lay_fit *f, int warp, int lane);

/* lay_name.c: the layout as the Lua API writes it (WG_SPLAT, WG_STRIDED(v),
** WGMMA, TILED{...}, X:reduce(1)): the named layouts, the rows layouts
** inference picks by default and `texts` (lay_parse's "tiled(...)" form,
** e.g. a kernel's layout_cast texts), or one of those reduced. */
void lay_name(const lay_layout *l, const char *const *texts, int ntexts, strbuf *sb);
/* "tiled((4,128),(4));warp(-3);lane(-2,rep4);vec(-1)" as "TILED{ tiling = {{4, 128}, {4}}, ... }". */
bool lay_tiled_api_text(const char *text, strbuf *sb);
/* The rows layout: rows over the 4 warps, 32 lanes x vec columns. */
void lay_rows_text(int vec, char *buf, size_t n);
/* The layouts mgpu names or picks itself, in this order: WGMMA, WGMMA_TRANSPOSED, WGMMA_8BIT,
** the rows layouts (vec 1 to 16: text set, name empty), TCGEN05, TCGEN05_TMEM_NATIVE(1 to 16).
** Fills out[0..LAY_NKNOWN) and returns the count. */
#define LAY_NKNOWN 16
typedef struct lay_known { lay_layout l; char name[40]; char text[64]; } lay_known;
int lay_known_layouts(lay_known *out);

/* The layout of the array reduced over logical dims `axes` (0-based, of
** an array of logical rank `rank`).  Dims split over warps or lanes become
** replications; register and vector factors disappear. */
void lay_reduce(const lay_layout *l, int rank, const int *axes, int naxes, lay_layout *out);

#endif
