/*
** ptx_mma.c -- SMEM matrix operands of wgmma and tcgen05.mma, and their
** 64-bit descriptors.
**
** Each operand's layout is checked element by element against what the
** descriptor makes the tensor cores read: K-major operands in atoms of 8
** rows x swizzle bytes with the 8-row groups SBO apart; MN-major ones in
** atoms of 8 K-rows x swizzle bytes of M or N, atoms LBO apart along M/N and
** SBO apart along K.  Blackwell's descriptors are Hopper's with a version
** bit set (ptx_tcgen05.c).
**
** A descriptor is kept as two parts: the low word (address field and
** leading byte offset) in a u32 register, and the high word (stride byte
** offset and swizzle mode), a constant.  Instructions add start >> 4 to the
** low word alone: the address field is 14 bits of an address under 256 KB,
** so the sum never carries out of it, and 32-bit arithmetic keeps ptxas
** from spending 64-bit adds and moves per instruction.
*/
#include <stdio.h>
#include <string.h>

#include "ptx.h"

/* Root index of operand element (mn, k). */
static void root_of(const pe_mma_operand *o, int64_t mn, int64_t k, int64_t *ridx) {
  for (int d = 0; d < o->m.rank; d++) ridx[d] = o->r->soff[d];
  ridx[o->r->dim[o->is_b ? 1 : 0]] += mn;
  ridx[o->r->dim[o->is_b ? 0 : 1]] += k;
}

static int64_t lin(const pe_mma_operand *o, int64_t mn, int64_t k) {
  int64_t ridx[XF_MAXRANK];
  root_of(o, mn, k, ridx);
  return xf_linear(&o->m, ridx);
}

void pe_mma_plan(pe *e, pe_mma_operand *o, int64_t MN, int64_t K, int64_t rows, int kin) {
  int S = o->m.swizzle;
  int64_t d_k = lin(o, 0, 1) - lin(o, 0, 0), d_mn = lin(o, 1, 0) - lin(o, 0, 0);
  o->kmajor = d_k == o->bytes;
  if (!o->kmajor && d_mn != o->bytes)
    pe_failf(e, "%s: operand %s has neither K nor %s contiguous in SMEM", o->op, o->name, o->is_b ? "N" : "M");
  if (!S)
    pe_failf(e, "%s: operand %s needs swizzled SMEM: transforms { tiling{8, %d}, swizzle(128) } (or 64/32 bytes: "
          "tiling{8, swizzle / %d})", o->op, o->name, 128 / o->bytes, o->bytes);
  if (!o->kmajor && o->bytes != 2)
    pe_failf(e, "%s: %s operands must be K-major (%s): operand %s is %s-major; only 16-bit operands may be",
          o->op, o->bytes == 1 ? "8-bit" : "tf32", o->is_b ? "B transposed: an (N, K) SMEM ref seen through transpose_ref(b, {1, 0})"
          : "A stored (M, K)", o->name, o->is_b ? "N" : "M");
  int64_t atom = S / o->bytes;   /* elements of one swizzle atom row */
  if (o->kmajor) {
    o->lbo = 0;
    o->sbo = rows > 8 ? lin(o, 8, 0) - lin(o, 0, 0) : 8 * S;
  } else {
    o->lbo = MN > atom ? lin(o, atom, 0) - lin(o, 0, 0) : 8 * S;
    o->sbo = lin(o, 0, 8) - lin(o, 0, 0);
  }
  int nb = (int)(MN / rows), ns = (int)(K / kin);
  for (int b = 0; b < nb; b++)
    for (int s = 0; s < ns; s++) {
      int64_t mn0 = b * rows, k0 = (int64_t)s * kin, st = lin(o, mn0, k0);
      o->start[b * ns + s] = st;
      if (st % 16) pe_failf(e, "%s: operand %s is not 16-byte aligned at row %lld, column %lld", o->op, o->name, (long long)mn0, (long long)k0);
      for (int64_t mn = 0; mn < rows; mn++)
        for (int64_t k = 0; k < kin; k++) {
          int64_t model;
          if (o->kmajor) model = st + (mn / 8) * o->sbo + (mn % 8) * S + k * o->bytes;
          else model = st + ((mn * o->bytes) / S) * o->lbo + (k / 8) * o->sbo + (k % 8) * S + (mn * o->bytes) % S;
          int64_t ridx[XF_MAXRANK];
          root_of(o, mn0 + mn, k0 + k, ridx);
          if (xf_offset(&o->m, ridx) != xf_swizzle(S, model))
            pe_failf(e, "%s: operand %s's SMEM layout is not one the tensor cores can read (element (%lld, %lld) of %s); "
                  "tile it {8, %lld} with a %d-byte swizzle, as TMA writes it", o->op, o->name, (long long)(o->is_b ? k0 + k : mn0 + mn),
                  (long long)(o->is_b ? mn0 + mn : k0 + k), o->name, (long long)atom, S);
        }
    }
  if (o->lbo % 16 || o->sbo % 16 || o->lbo < 0 || o->sbo < 0 || o->lbo >= (1 << 18) || o->sbo >= (1 << 18))
    pe_failf(e, "%s: operand %s's tiles are too far apart for a descriptor (strides %lld and %lld bytes)", o->op, o->name,
          (long long)o->lbo, (long long)o->sbo);
}

pe_mma_desc pe_mma_descriptor(pe *e, const pe_mma_operand *o, uint32_t hi_bits) {
  preg addr = pe_smem_origin(e, o->r, &o->m, 1024, o->op);
  pe_mma_desc d = { pe_reg(e, PR_R), 0 };
  int code = o->m.swizzle == 128 ? 1 : o->m.swizzle == 64 ? 2 : 3;
  uint32_t lbo = (uint32_t)(o->lbo >> 4) << 16;
  d.hi = (uint32_t)(o->sbo >> 4) | ((uint32_t)code << 30) | hi_bits;
  pe_ins(e, "bfe.u32", 4, R(d.lo), R(addr), I(4), I(14));   /* (addr >> 4) & 0x3fff */
  if (lbo) pe_ins(e, "or.b32", 3, R(d.lo), R(d.lo), U(lbo));
  return d;
}

preg pe_mma_desc_at(pe *e, pe_mma_desc d, int64_t start) {
  preg lo = pe_reg(e, PR_R), hi = pe_reg(e, PR_R), r = pe_reg(e, PR_RD);
  pe_ins(e, "add.u32", 3, R(lo), R(d.lo), I(start >> 4));
  pe_ins(e, "mov.b32", 2, R(hi), U(d.hi));
  pe_ins(e, "mov.b64", 2, R(r), RV((preg[]){ lo, hi }, 2));
  return r;
}
