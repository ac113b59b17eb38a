/*
** ptx_wgmma.c -- wgmma accumulators and the wgmma op.
**
** An accumulator owns fixed registers, in the order the instruction lists
** them for each 64-row block (f16 accumulators in packed pairs), so
** wgmma updates them in place across loops and nothing touches them while
** a wgmma is in flight; reading it waits for every group, then copies them
** into an array in the WGMMA layout.
**
** SMEM operands are described by 64-bit matrix descriptors.  Each operand's
** layout is checked element by element against what the descriptor makes
** the tensor cores read: K-major operands in atoms of 8 rows x swizzle
** bytes with the 8-row groups SBO apart; MN-major ones in atoms of 8 K-rows
** x swizzle bytes of M or N, atoms LBO apart along M/N and SBO apart along
** K.  Each instruction covers 64 rows of A and k = 32 bytes of K.
*/
#include <stdio.h>
#include <string.h>

#include "ptx.h"

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
** region, into other accumulators (so S can be read while P V runs); 0
** when anything between could hide a group or a wait (a nested region, a
** region's start, an explicit wait). */
static int acc_pending(const pe *e, uint32_t i, uint32_t accv) {
  const ir_kernel *k = e->k;
  uint32_t root = e->refs[accv].root;
  int n = 0;
  while (i-- > 0) {
    const ir_op *op = &k->ops.v[i];
    if (op->code == IR_wgmma) {
      if (e->refs[ir_opds(k, op)[0]].root == root) return n < 7 ? n : 7;
      n++;
    } else if (op->body[0] || op->body[1] || op->code == IR_yield || op->code == IR_wgmma_wait) {
      return 0;
    }
  }
  return 0;
}

void ptx_acc_load(pe *e, const ir_op *op) {
  uint32_t accv = ir_opds(e->k, op)[0];
  pe_ins(e, "wgmma.wait_group.sync.aligned", 1, I(acc_pending(e, (uint32_t)(op - e->k->ops.v), accv)));
  acc_move(e, accv, op->res, false);
}

void ptx_acc_store(pe *e, const ir_op *op) {
  const uint32_t *o = ir_opds(e->k, op);
  pe_ins(e, "wgmma.wait_group.sync.aligned", 1, I(0));
  acc_move(e, o[0], o[1], true);
  e->wg_fence = true;
}

/* -- SMEM operands ----------------------------------------------------------------------- */

typedef struct operand {
  const char *name;              /* "A" or "B" */
  uint32_t v;
  const pref *r;
  xf_map m;
  int bytes;
  bool kmajor;
  bool is_b;                     /* B is (K, N): the MN dim is the second */
  int64_t lbo, sbo;
  int64_t *start;                /* per instruction: unswizzled byte offset in the allocation */
} operand;

/* Root index of operand element (mn, k). */
static void root_of(const operand *o, int64_t mn, int64_t k, int64_t *ridx) {
  for (int d = 0; d < o->m.rank; d++) ridx[d] = o->r->soff[d];
  ridx[o->r->dim[o->is_b ? 1 : 0]] += mn;
  ridx[o->r->dim[o->is_b ? 0 : 1]] += k;
}

static int64_t lin(const operand *o, int64_t mn, int64_t k) {
  int64_t ridx[XF_MAXRANK];
  root_of(o, mn, k, ridx);
  return xf_linear(&o->m, ridx);
}

/* Descriptor parameters of an SMEM operand for instruction blocks of `rows`
** MN-rows starting at mn0 = 0, rows, ... and k-steps of kin elements, each
** checked against the operand's layout. */
static void plan_operand(pe *e, operand *o, int64_t MN, int64_t K, int64_t rows, int kin) {
  int S = o->m.swizzle;
  int64_t d_k = lin(o, 0, 1) - lin(o, 0, 0), d_mn = lin(o, 1, 0) - lin(o, 0, 0);
  o->kmajor = d_k == o->bytes;
  if (!o->kmajor && d_mn != o->bytes)
    pe_failf(e, "wgmma: operand %s has neither K nor %s contiguous in SMEM", o->name, o->is_b ? "N" : "M");
  if (!S)
    pe_failf(e, "wgmma: operand %s needs swizzled SMEM: transforms { tiling{8, %d}, swizzle(128) } (or 64/32 bytes: "
          "tiling{8, swizzle / %d})", o->name, 128 / o->bytes, o->bytes);
  if (!o->kmajor && o->bytes != 2)
    pe_failf(e, "wgmma: %s operands must be K-major (%s): operand %s is %s-major; only 16-bit operands may be",
          o->bytes == 1 ? "8-bit" : "tf32", o->is_b ? "B transposed: an (N, K) SMEM ref seen through transpose_ref(b, {1, 0})"
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
      if (st % 16) pe_failf(e, "wgmma: operand %s is not 16-byte aligned at row %lld, column %lld", o->name, (long long)mn0, (long long)k0);
      for (int64_t mn = 0; mn < rows; mn++)
        for (int64_t k = 0; k < kin; k++) {
          int64_t model;
          if (o->kmajor) model = st + (mn / 8) * o->sbo + (mn % 8) * S + k * o->bytes;
          else model = st + ((mn * o->bytes) / S) * o->lbo + (k / 8) * o->sbo + (k % 8) * S + (mn * o->bytes) % S;
          int64_t ridx[XF_MAXRANK];
          root_of(o, mn0 + mn, k0 + k, ridx);
          if (xf_offset(&o->m, ridx) != xf_swizzle(S, model))
            pe_failf(e, "wgmma: operand %s's SMEM layout is not one wgmma can read (element (%lld, %lld) of %s); tile it "
                  "{8, %lld} with a %d-byte swizzle, as TMA writes it", o->name, (long long)(o->is_b ? k0 + k : mn0 + mn),
                  (long long)(o->is_b ? mn0 + mn : k0 + k), o->name, (long long)atom, S);
        }
    }
  if (o->lbo % 16 || o->sbo % 16 || o->lbo < 0 || o->sbo < 0 || o->lbo >= (1 << 18) || o->sbo >= (1 << 18))
    pe_failf(e, "wgmma: operand %s's tiles are too far apart for a descriptor (strides %lld and %lld bytes)", o->name,
          (long long)o->lbo, (long long)o->sbo);
}

/* A descriptor as two parts: the low word (address field and leading
** byte offset) in a u32 register, and the high word (stride byte offset and
** swizzle mode), a constant.  Instructions add start >> 4 to the low word
** alone: the address field is 14 bits of an address under 256 KB, so the sum
** never carries out of it, and 32-bit arithmetic keeps ptxas from spending
** 64-bit adds and moves per wgmma. */
typedef struct { preg lo; uint32_t hi; } desc;

static desc descriptor(pe *e, const operand *o) {
  preg addr = pe_smem_origin(e, o->r, &o->m, 1024, "wgmma");
  desc d = { pe_reg(e, PR_R), 0 };
  int code = o->m.swizzle == 128 ? 1 : o->m.swizzle == 64 ? 2 : 3;
  uint32_t lbo = (uint32_t)(o->lbo >> 4) << 16;
  d.hi = (uint32_t)(o->sbo >> 4) | ((uint32_t)code << 30);
  pe_ins(e, "bfe.u32", 4, R(d.lo), R(addr), I(4), I(14));   /* (addr >> 4) & 0x3fff */
  if (lbo) pe_ins(e, "or.b32", 3, R(d.lo), R(d.lo), U(lbo));
  return d;
}

/* The u64 descriptor of one instruction: d's low word plus start bytes. */
static preg descriptor_at(pe *e, desc d, int64_t start) {
  preg lo = pe_reg(e, PR_R), hi = pe_reg(e, PR_R), r = pe_reg(e, PR_RD);
  pe_ins(e, "add.u32", 3, R(lo), R(d.lo), I(start >> 4));
  pe_ins(e, "mov.b32", 2, R(hi), U(d.hi));
  pe_ins(e, "mov.b64", 2, R(r), RV((preg[]){ lo, hi }, 2));
  return r;
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
  operand A, B;
  memset(&A, 0, sizeof A);
  memset(&B, 0, sizeof B);
  int64_t starts[2048];
  if (nb * ns + ns > 2048) pe_failf(e, "wgmma: K = %lld is too long for one wgmma; split it into several calls", (long long)K);
  B.name = "B"; B.v = o[2]; B.r = &e->refs[o[2]]; B.bytes = bytes; B.is_b = true; B.start = starts + nb * ns;
  pe_smem_map(e, B.r->root, &B.m);
  plan_operand(e, &B, N, K, N, kin);
  if (!areg) {
    A.name = "A"; A.v = o[1]; A.r = &e->refs[o[1]]; A.bytes = dt_bytes(at->dtype); A.start = starts;
    pe_smem_map(e, A.r->root, &A.m);
    plan_operand(e, &A, M, K, 64, kin);
    if (A.m.swizzle != B.m.swizzle)
      pe_failf(e, "wgmma: A and B must use the same swizzle (A has %d bytes, B %d)", A.m.swizzle, B.m.swizzle);
  }
  desc db = descriptor(e, &B), da = { 0, 0 };
  if (!areg) da = descriptor(e, &A);
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
            preg x[4], lo = pe_reg(e, PR_R), hi = pe_reg(e, PR_R);
            for (int j = 0; j < 4; j++) x[j] = ar + slot(e, &af, row, col + j);
            pe_ins(e, "prmt.b32", 4, R(lo), R(x[0]), R(x[1]), I(0x40));
            pe_ins(e, "prmt.b32", 4, R(hi), R(x[2]), R(x[3]), I(0x40));
            pe_ins(e, "prmt.b32", 4, R(d), R(lo), R(hi), I(0x5410));
            continue;
          }
          preg pair[2] = { ar + slot(e, &af, row, col), ar + slot(e, &af, row, col + 1) };
          pe_ins(e, "mov.b32", 2, R(d), RV(pair, 2));
        }
  }
  if (e->wg_fence || areg) pe_ins(e, "wgmma.fence.sync.aligned", 0);
  e->wg_fence = false;

  bool half = acct->dtype == MGPU_F16, sixteen = bytes == 2, integer = acct->dtype == MGPU_I32;
  if (integer && at->dtype != bt->dtype && e->ptx_isa < 84) e->ptx_isa = 84;   /* s8 x u8: PTX ISA 8.4 (CUDA 12.4 drivers) */
  int per = acc_per_block(acct->dtype, N);
  int ld;
  preg acc = acc_first(e, o[0], &ld);
  for (int b = 0; b < nb; b++)
    for (int s = 0; s < ns; s++) {
      preg dbi = descriptor_at(e, db, B.start[s]), dai = areg ? 0 : descriptor_at(e, da, A.start[b * ns + s]);
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
