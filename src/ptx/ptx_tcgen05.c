/*
** ptx_tcgen05.c -- Blackwell's tensor-core MMA (tcgen05.mma) and its
** completion on an mbarrier (tcgen05.commit).
**
** One thread issues them: the warpgroup's leader (lane 0 of its first
** warp), and for a cluster pair's 2-CTA MMA (cta_group::2) only the
** leader of the pair's first block, whose instruction reads A and B from
** both blocks' SMEM at the same offsets and writes both blocks' TMEM.  The
** accumulator is in TMEM; A comes from SMEM (a descriptor, ptx_mma.c, with
** Blackwell's version bit) or TMEM; B from SMEM.  An instruction covers
** M = 128 rows per block, up to 256 columns of N and 32 bytes of K; the
** instruction descriptor carries the dtypes, which operands are MN-major,
** N and M.  A commit makes one arrival on the barrier (on both blocks'
** barriers for the pair) once the issuing thread's MMAs so far are done.
*/
#include <stdio.h>
#include <string.h>

#include "ptx.h"

#define DESC_VERSION_HI (1u << 14)   /* descriptor bit 46: the sm_100 format */

/* Instruction-descriptor codes of an operand dtype within its kind. */
static uint32_t fmt(int dt) {
  switch (dt) {
  case MGPU_BF16: case MGPU_F8E5M2: case MGPU_I8: return 1;
  case MGPU_F32: return 2;   /* tf32 */
  default: return 0;         /* f16, f8e4m3, u8 */
  }
}

/* The 32-bit instruction descriptor (sparsity, saturation, negation and shifts off). */
static uint32_t idesc(int dc, int da, int db, bool a_mn, bool b_mn, int64_t M, int64_t N) {
  return (dc == MGPU_F32 ? 1u : 2u) << 4 | fmt(da) << 7 | fmt(db) << 10 | (uint32_t)a_mn << 15 | (uint32_t)b_mn << 16 |
         (uint32_t)(N >> 3) << 17 | (uint32_t)(M >> 4) << 24;
}

/* Predicate: this thread issues the kernel's tcgen05 work: the warpgroup's
** leader, in the pair's first block for collective work. */
static preg issuer(pe *e, bool pair) {
  preg p = pe_leader(e);
  if (pair) {
    preg q = pe_reg(e, PR_P);
    pe_ins(e, "setp.eq.u32", 3, R(q), R(e->cid[0]), I(0));
    pe_ins(e, "and.pred", 3, R(p), R(p), R(q));
  }
  return p;
}

void ptx_tcgen05_mma(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  const uint32_t *o = ir_opds(k, op);
  const int64_t *at = ir_ints(k, op);
  const ir_type *acct = ir_vtype(k, o[0]), *at_ = ir_vtype(k, o[1]), *bt = ir_vtype(k, o[2]);
  bool pair = at[1] != 0, atmem = at_->space == MGPU_SPACE_TMEM;
  int64_t M = acct->shape[0] * (pair ? 2 : 1), N = acct->shape[1], K = at_->shape[1], Nb = bt->shape[1];
  int kin = 32 / dt_bytes(at_->dtype), ns = (int)(K / kin);
  int64_t ng = pair ? N : 256;   /* D columns per instruction: a divisor of N, a multiple of 16, at most 256 */
  while (N % ng) ng -= 16;
  int ngroups = (int)(N / ng);
  const char *why, *kind = ir_mma_kind(at_->dtype, bt->dtype, acct->dtype, &why);
  mgpu_assert(kind);
  int64_t starts[4096];   /* per instruction: B's starts, then A's */
  if ((int64_t)ngroups * ns + ns > 4096) pe_failf(e, "tcgen05_mma: K = %lld is too long for one MMA; split it into several calls", (long long)K);
  pe_mma_operand A, B;
  memset(&A, 0, sizeof A);
  memset(&B, 0, sizeof B);
  B.op = "tcgen05_mma"; B.name = "B"; B.v = o[2]; B.r = &e->refs[o[2]]; B.bytes = dt_bytes(bt->dtype); B.is_b = true;
  B.start = starts;
  pe_smem_map(e, B.r->root, &B.m);
  pe_mma_plan(e, &B, Nb, K, pair ? Nb : ng, kin);
  pe_mma_desc db = pe_mma_descriptor(e, &B, DESC_VERSION_HI), da = { 0, 0 };
  preg a_tmem = 0;
  if (atmem) {
    a_tmem = pe_tmem_addr(e, o[1]);
  } else {
    A.op = "tcgen05_mma"; A.name = "A"; A.v = o[1]; A.r = &e->refs[o[1]]; A.bytes = dt_bytes(at_->dtype);
    A.start = starts + ngroups * ns;
    pe_smem_map(e, A.r->root, &A.m);
    pe_mma_plan(e, &A, acct->shape[0], K, acct->shape[0], kin);
    da = pe_mma_descriptor(e, &A, DESC_VERSION_HI);
  }
  preg d = pe_tmem_addr(e, o[0]), p = issuer(e, pair), yes = pe_reg(e, PR_P), first = yes, id = pe_reg(e, PR_R);
  pe_ins(e, "setp.ne.u32", 3, R(yes), R(e->lane), I(-1));   /* always true: accumulate */
  if (at[0] == 2) first = pe_vreg(e, o[3]);
  else if (at[0] == 0) {
    first = pe_reg(e, PR_P);
    pe_ins(e, "setp.eq.u32", 3, R(first), R(e->lane), I(-1));   /* always false: overwrite */
  }
  pe_ins(e, "mov.b32", 2, R(id), U(idesc(acct->dtype, at_->dtype, bt->dtype, !atmem && !A.kmajor, !B.kmajor, M, ng)));
  for (int g = 0; g < ngroups; g++) {
    preg dg = d;
    if (g) {
      dg = pe_reg(e, PR_R);
      pe_ins(e, "add.u32", 3, R(dg), R(d), I(g * ng));
    }
    for (int s = 0; s < ns; s++) {
      preg bd = pe_mma_desc_at(e, db, B.start[g * ns + s]);
      preg a;
      if (atmem) {
        a = pe_reg(e, PR_R);
        pe_ins(e, "add.u32", 3, R(a), R(a_tmem), I(8 * s));   /* 32 bytes of K: 8 columns */
      } else {
        a = pe_mma_desc_at(e, da, A.start[s]);
      }
      sb_printf(&e->body, "\t@%s tcgen05.mma.cta_group::%d.kind::%s [%s], %s%s%s, %s, %s, %s;\n", R(p).s, pair ? 2 : 1, kind,
                R(dg).s, atmem ? "[" : "", R(a).s, atmem ? "]" : "", R(bd).s, R(id).s, R(s ? yes : first).s);
    }
  }
}

void ptx_tcgen05_commit(pe *e, const ir_op *op) {
  bool pair = ir_ints(e->k, op)[0] != 0;
  preg bar = pe_barrier_addr(e, ir_opds(e->k, op)[0]), p = issuer(e, pair);
  if (!pair) {
    pe_pins(e, p, false, "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64", 1, ADDR(bar, 0));
    return;
  }
  preg base = pe_reg(e, PR_R), m32 = pe_reg(e, PR_R), mask = pe_reg(e, PR_H);   /* the pair: ranks 2i and 2i + 1 */
  pe_ins(e, "and.b32", 3, R(base), R(e->crank), I(~1));
  pe_ins(e, "shl.b32", 3, R(m32), I(3), R(base));
  pe_ins(e, "cvt.u16.u32", 2, R(mask), R(m32));
  pe_pins(e, p, false, "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64", 2,
          ADDR(bar, 0), R(mask));
}
