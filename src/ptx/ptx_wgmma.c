/*
** ptx_wgmma.c -- wgmma accumulators and the wgmma op.
**
** An accumulator owns fixed registers, in the order the instruction lists
** them for each 64-row block (f16 accumulators in packed pairs), so
** wgmma updates them in place across loops and nothing touches them while
** a wgmma is in flight; reading it waits for every group, then copies them
** into an array in the WGMMA layout.
**
** SMEM operands are described by matrix descriptors (ptx_mma.c).  Each
** instruction covers 64 rows of A and k = 32 bytes of K.
*/
#include <stdio.h>
#include <string.h>

#include "ptx.h"

void pe_pack4(pe *e, preg d, const preg *x) {
  preg lo = pe_reg(e, PR_R), hi = pe_reg(e, PR_R);
  pe_ins(e, "prmt.b32", 4, R(lo), R(x[0]), R(x[1]), I(0x40));
  pe_ins(e, "prmt.b32", 4, R(hi), R(x[2]), R(x[3]), I(0x40));
  pe_ins(e, "prmt.b32", 4, R(d), R(lo), R(hi), I(0x5410));
}

/* -- Accumulators -------------------------------------------------------------------- */

static int acc_per_block(int dtype, int64_t N) { return (int)(dtype == MGPU_F16 ? N / 4 : N / 2); }

/* Row and column offsets (warp 0, lane 0) of element h (0 or 1 of a packed
** pair) of accumulator register i of a 64-row block. */
static void acc_coords(int dtype, int i, int h, int64_t *row, int64_t *col) {
  if (dtype == MGPU_F16) { *row = 8 * (i % 2); *col = 8 * (i / 2) + h; return; }
  int q = i % 4;
  *row = 8 * (q / 2);
  *col = 8 * (i / 4) + q % 2;
}

/* The register element of fit f (a WGMMA-layout array) at constant
** coordinates (row, col). */
static uint32_t slot(pe *e, const lay_fit *f, int64_t row, int64_t col) {
  for (int64_t r = 0; r < f->nregs; r++)
    for (int el = 0; el < f->vlen; el++) {
      int64_t idx[LAY_MAXRANK];
      lay_index(f, 0, 0, r, el, idx);
      if (idx[f->rank - 2] == row && idx[f->rank - 1] == col) return (uint32_t)(r * f->vlen + el);
    }
  pe_fail(e, "internal: a wgmma fragment element has no register");
}

void ptx_acc_alloc(pe *e, const ir_op *op) {
  ptx_alloc(e, op);
  const ir_type *t = ir_vtype(e->k, op->res);
  int n = acc_per_block(t->dtype, t->shape[1]) * (int)(t->shape[0] / 64);
  bool bits = t->dtype != MGPU_F32;   /* f16 pairs and s32 live in b32 registers */
  preg a = pe_regs(e, bits ? PR_R : PR_F, (uint32_t)n);
  e->acc[op->res] = a;
  for (int i = 0; i < n; i++) pe_ins(e, bits ? "mov.b32" : "mov.f32", 2, R(a + (uint32_t)i), bits ? I(0) : F32(0));
  e->wg_fence = true;
}

/* The first register of accumulator ref accv (a slice starts at a 64-row
** block and an 8-column group; ir_build checks that) and, in *ld, the
** registers of one 64-row block of the whole accumulator. */
static preg acc_first(pe *e, uint32_t accv, int *ld) {
  const pref *r = &e->refs[accv];
  const ir_type *root = ir_vtype(e->k, r->root);
  int per = acc_per_block(root->dtype, root->shape[1]), group = per / (int)(root->shape[1] / 8);
  *ld = per;
  return e->acc[r->root] + (uint32_t)((r->soff[0] / 64) * per + (r->soff[1] / 8) * group);
}

/* Move between the accumulator of ref acc and the WGMMA-layout registers
** of value v (scalar: the same register everywhere). */
static void acc_move(pe *e, uint32_t accv, uint32_t v, bool to_acc) {
  const ir_type *t = ir_vtype(e->k, accv);
  bool half = t->dtype == MGPU_F16, scalar = ir_vtype(e->k, v)->kind == MGPU_VALUE_SCALAR;
  lay_fit f;
  if (!scalar) pe_fit(e, v, &f);
  int ld;
  preg a = acc_first(e, accv, &ld), x = pe_vreg(e, v);
  int per = acc_per_block(t->dtype, t->shape[1]);
  for (int64_t g = 0; g < t->shape[0] / 64; g++)
    for (int i = 0; i < per; i++) {
      preg ar = a + (uint32_t)(g * ld + i);
      preg el[2];
      for (int h = 0; h < (half ? 2 : 1); h++) {
        int64_t row, col;
        acc_coords(t->dtype, i, h, &row, &col);
        el[h] = scalar ? x : x + slot(e, &f, 64 * g + row, col);
      }
      if (half) pe_ins(e, "mov.b32", 2, to_acc ? R(ar) : RV(el, 2), to_acc ? RV(el, 2) : R(ar));
      else pe_ins(e, t->dtype == MGPU_I32 ? "mov.b32" : "mov.f32", 2, to_acc ? R(ar) : R(el[0]), to_acc ? R(el[0]) : R(ar));
    }
}

/* How many wgmma groups may still be in flight when the accumulator of ref
** accv is read by op i: those issued after its last wgmma, in the same
** region, into other accumulators (so S can be read while P V runs); -1
** when an explicit wgmma_wait between already completed that wgmma (it left
** at most as many groups pending as were issued after it); 0 when anything
** between could hide a group (a nested region, a region's start). */
static int acc_pending(const pe *e, uint32_t i, uint32_t accv) {
  const ir_kernel *k = e->k;
  uint32_t root = e->refs[accv].root;
  int n = 0, nw = 0, after[8];            /* groups issued after each explicit wait met, up to the read */
  int64_t left[8];                        /* ... and the groups that wait left pending */
  while (i-- > 0) {
    const ir_op *op = &k->ops.v[i];
    if (op->code == IR_wgmma) {
      if (e->refs[ir_opds(k, op)[0]].root == root) {
        for (int w = 0; w < nw; w++) if (n - after[w] >= left[w]) return -1;
        return n < 7 ? n : 7;
      }
      n++;
    } else if (op->code == IR_wgmma_wait) {
      if (nw == 8) return 0;
      after[nw] = n;
      left[nw++] = ir_ints(k, op)[0];
    } else if (op->body[0] || op->body[1] || op->code == IR_yield) {
      return 0;
    }
  }
  return 0;
}

void ptx_acc_load(pe *e, const ir_op *op) {
  uint32_t accv = ir_opds(e->k, op)[0];
  int pending = acc_pending(e, (uint32_t)(op - e->k->ops.v), accv);
  if (pending >= 0) pe_ins(e, "wgmma.wait_group.sync.aligned", 1, I(pending));
  acc_move(e, accv, op->res, false);
}

void ptx_acc_store(pe *e, const ir_op *op) {
  const uint32_t *o = ir_opds(e->k, op);
  pe_ins(e, "wgmma.wait_group.sync.aligned", 1, I(0));
  acc_move(e, o[0], o[1], true);
  e->wg_fence = true;
}

static const char *mma_type(int dt) {
  switch (dt) {
  case MGPU_BF16: return "bf16";
  case MGPU_F16: return "f16";
  case MGPU_F8E4M3: return "e4m3";
  case MGPU_F8E5M2: return "e5m2";
  case MGPU_I8: return "s8";
  case MGPU_U8: return "u8";
  default: return "tf32";
  }
}

void ptx_wgmma(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  const uint32_t *o = ir_opds(k, op);
  const ir_type *acct = ir_vtype(k, o[0]), *at = ir_vtype(k, o[1]), *bt = ir_vtype(k, o[2]);
  int64_t M = acct->shape[0], N = acct->shape[1], K = at->shape[1];
  bool areg = at->kind == MGPU_VALUE_ARRAY;
  int bytes = dt_bytes(bt->dtype), kin = 32 / bytes;
  int nb = (int)(M / 64), ns = (int)(K / kin);
  pe_mma_operand A, B;
  memset(&A, 0, sizeof A);
  memset(&B, 0, sizeof B);
  int64_t starts[2048];
  if (nb * ns + ns > 2048) pe_failf(e, "wgmma: K = %lld is too long for one wgmma; split it into several calls", (long long)K);
  B.op = "wgmma"; B.name = "B"; B.v = o[2]; B.r = &e->refs[o[2]]; B.bytes = bytes; B.is_b = true; B.start = starts + nb * ns;
  pe_smem_map(e, B.r->root, &B.m);
  pe_mma_plan(e, &B, N, K, N, kin);
  if (!areg) {
    A.op = "wgmma"; A.name = "A"; A.v = o[1]; A.r = &e->refs[o[1]]; A.bytes = dt_bytes(at->dtype); A.start = starts;
    pe_smem_map(e, A.r->root, &A.m);
    pe_mma_plan(e, &A, M, K, 64, kin);
    if (A.m.swizzle != B.m.swizzle)
      pe_failf(e, "wgmma: A and B must use the same swizzle (A has %d bytes, B %d)", A.m.swizzle, B.m.swizzle);
  }
  pe_mma_desc db = pe_mma_descriptor(e, &B, 0), da = { 0, 0 };
  if (!areg) da = pe_mma_descriptor(e, &A, 0);
  lay_fit af;
  if (areg) pe_fit(e, o[1], &af);
  preg scale = pe_reg(e, PR_P);
  pe_ins(e, "setp.ne.u32", 3, R(scale), R(e->lane), I(-1));   /* always true: accumulate */

  /* A fragments from registers: 4 packed pairs per block and k-step */
  preg apack = 0;
  if (areg) {
    apack = pe_regs(e, PR_R, (uint32_t)(4 * nb * ns));
    preg ar = pe_vreg(e, o[1]);
    for (int b = 0; b < nb; b++)
      for (int s = 0; s < ns; s++)
        for (int q = 0; q < 4; q++) {
          preg d = apack + (uint32_t)(4 * (b * ns + s) + q);
          int64_t row = 64 * b + 8 * (q % 2), col = (int64_t)kin * s + (kin / 2) * (q / 2);
          if (bytes == 1) {   /* WGMMA_8BIT: 4 consecutive columns, low bytes of b32 registers */
            preg x[4];
            for (int j = 0; j < 4; j++) x[j] = ar + slot(e, &af, row, col + j);
            pe_pack4(e, d, x);
            continue;
          }
          preg pair[2] = { ar + slot(e, &af, row, col), ar + slot(e, &af, row, col + 1) };
          pe_ins(e, "mov.b32", 2, R(d), RV(pair, 2));
        }
  }
  /* a group into another accumulator than the last one's gets its own fence too: ptxas otherwise
  ** injects warpgroup.arrive/wait (C7519/C7517) when the two are issued back to back in a loop */
  preg acc0 = e->acc[e->refs[o[0]].root];
  if (e->wg_fence || areg || (e->wg_acc && e->wg_acc != acc0)) pe_ins(e, "wgmma.fence.sync.aligned", 0);
  e->wg_fence = false;
  e->wg_acc = acc0;

  bool half = acct->dtype == MGPU_F16, sixteen = bytes == 2, integer = acct->dtype == MGPU_I32;
  if (integer && at->dtype != bt->dtype && e->ptx_isa < 84) e->ptx_isa = 84;   /* s8 x u8: PTX ISA 8.4 (CUDA 12.4 drivers) */
  int per = acc_per_block(acct->dtype, N);
  int ld;
  preg acc = acc_first(e, o[0], &ld);
  for (int b = 0; b < nb; b++)
    for (int s = 0; s < ns; s++) {
      preg dbi = pe_mma_desc_at(e, db, B.start[s]), dai = areg ? 0 : pe_mma_desc_at(e, da, A.start[b * ns + s]);
      sb_printf(&e->body, "\twgmma.mma_async.sync.aligned.m64n%lldk%d.%s.%s.%s {", (long long)N, kin,
                half ? "f16" : integer ? "s32" : "f32", mma_type(at->dtype), mma_type(bt->dtype));
      for (int i = 0; i < per; i++) sb_printf(&e->body, "%s%s", i ? ", " : "", R(acc + (uint32_t)(b * ld + i)).s);
      if (areg) {
        preg q = apack + (uint32_t)(4 * (b * ns + s));
        sb_printf(&e->body, "}, {%s, %s, %s, %s}, %s, %s", R(q).s, R(q + 1).s, R(q + 2).s, R(q + 3).s, R(dbi).s,
                  R(scale).s);
        if (!integer) sb_puts(&e->body, ", 1, 1");
        if (sixteen) sb_printf(&e->body, ", %d", B.kmajor ? 0 : 1);
        sb_puts(&e->body, ";\n");
      } else {
        sb_printf(&e->body, "}, %s, %s, %s", R(dai).s, R(dbi).s, R(scale).s);
        if (!integer) sb_puts(&e->body, ", 1, 1");   /* s32 takes no scale immediates */
        if (sixteen) sb_printf(&e->body, ", %d, %d", A.kmajor ? 0 : 1, B.kmajor ? 0 : 1);
        sb_puts(&e->body, ";\n");
      }
    }
  pe_ins(e, "wgmma.commit_group.sync.aligned", 0);
}
