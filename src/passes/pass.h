/*
** pass.h -- what the passes compute about a finished kernel, and the one
** function that runs them in order (pass_pipeline.c).
*/
#ifndef MGPU_PASS_H
#define MGPU_PASS_H

#include "../ir/ir.h"
#include "../layout/lay.h"

/* Facts about every value, indexed by value id, and the SMEM plan. */
typedef struct kinfo {
  lay_layout *lay;  /* arrays: register layout */
  int64_t *div;     /* integer scalars: known to be a multiple of div (0: the value is 0) */
  int64_t *smem_off;        /* results of smem_alloc: byte offset of the allocation (else 0) */
  int64_t smem_bytes;       /* dynamic SMEM per block */
  int64_t red_offset;       /* byte offset of the cross-warp reduction scratch */
  int64_t red_bytes;        /* its size per warpgroup */
  int32_t maxnreg;          /* registers per thread the PTX caps with .maxnreg (0: none); set by the caller */
  int64_t *tmem_off;        /* results of tmem_alloc: the allocation's first 32-bit TMEM column */
  int32_t tmem_cols;        /* TMEM columns the kernel allocates at entry (a power of 2, 32 to 512), 0: none */
  int32_t cta_group;        /* tcgen05 work: 1 per block, 2 per cluster pair, 0: none */
  int64_t tmem_slot;        /* SMEM byte offset of the word tcgen05.alloc writes the TMEM address into */
} kinfo;

/* Verify, then infer layouts and alignment.  On failure `d` holds the
** message and ki is left empty. */
mgpu_status pass_run(const ir_kernel *k, kinfo *ki, int64_t smem_limit, diag *d);
void pass_free(const ir_kernel *k, kinfo *ki);

/* pass_layout.c */
mgpu_status pass_layout(const ir_kernel *k, kinfo *ki, diag *d);
/* The layout as the Lua API writes it, naming the script's TILED layouts. */
void pass_layout_name(const ir_kernel *k, const lay_layout *l, char *buf, size_t n);
/* pass_smem.c: the SMEM plan, checked against the limit (bytes); and the
** TMEM plan (before it: the SMEM plan holds the TMEM address word). */
mgpu_status pass_smem(const ir_kernel *k, kinfo *ki, int64_t limit, diag *d);
mgpu_status pass_tmem(const ir_kernel *k, kinfo *ki, diag *d);

/* pass_divisibility.c */
void pass_divisibility(const ir_kernel *k, kinfo *ki);

/* gcd with 0 as the identity ("multiple of everything"). */
int64_t pass_gcd(int64_t a, int64_t b);

#endif
