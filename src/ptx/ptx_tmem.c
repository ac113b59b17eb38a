/*
** ptx_tmem.c -- Blackwell tensor memory: the kernel's allocation, TMEM refs'
** addresses, and loads and stores between TMEM and register arrays.
**
** The kernel allocates its TMEM once (pass_tmem's column count) at entry:
** the block's first warp runs tcgen05.alloc, which writes the address into
** an SMEM word, and gives up its permit to allocate more; after the block
** (or cluster) synchronises, every thread reads the address.  At the end
** every thread synchronises again and the first warp frees the columns.  A
** TMEM address holds the lane in its high 16 bits and the 32-bit column in
** its low 16 bits.
**
** tcgen05.ld / tcgen05.st move a warp's own 32 lanes (warp w of a
** warpgroup: lanes 32w..32w+31) in one of two shapes: 32x32b (thread l: lane
** l, consecutive columns) or 16x256b (16 lanes, thread l holding columns
** 2(l%4), +1 of lanes l/4 and l/4+8 in each group of 8 columns, as wgmma's
** fragments).  An access is planned for the array's layout: the first shape
** under which every thread holds, in every instruction register, an element
** of its own in the same register slot of the array is used; the PTX waits
** for a load before its registers are read.
*/
#include <stdio.h>
#include <string.h>

#include "ptx.h"

static const char *group(const pe *e) { return e->ki->cta_group == 2 ? "cta_group::2" : "cta_group::1"; }

/* Predicate: this thread is in the block's first warp. */
static preg first_warp(pe *e) {
  preg w = pe_reg(e, PR_R), p = pe_reg(e, PR_P);
  pe_ins(e, "or.b32", 3, R(w), R(e->wg), R(e->warp));
  pe_ins(e, "setp.eq.u32", 3, R(p), R(w), I(0));
  return p;
}

void ptx_tmem_prologue(pe *e) {
  if (!e->ki->tmem_cols) return;
  char opc[96];
  uint32_t skip = pe_label(e);
  pe_pins(e, first_warp(e), true, "bra.uni", 1, LBL(skip));   /* warp-uniform: the whole warp allocates */
  snprintf(opc, sizeof opc, "tcgen05.alloc.%s.sync.aligned.shared::cta.b32", group(e));
  pe_ins(e, opc, 2, ADDR(e->smem, e->ki->tmem_slot), I(e->ki->tmem_cols));
  snprintf(opc, sizeof opc, "tcgen05.relinquish_alloc_permit.%s.sync.aligned", group(e));
  pe_ins(e, opc, 0);
  pe_label_here(e, skip);
  pe_ins(e, "tcgen05.fence::before_thread_sync", 0);
}

void ptx_tmem_base(pe *e) {
  if (!e->ki->tmem_cols) return;
  pe_ins(e, "tcgen05.fence::after_thread_sync", 0);
  e->tmem = pe_reg(e, PR_R);
  pe_ins(e, "ld.shared.b32", 2, R(e->tmem), ADDR(e->smem, e->ki->tmem_slot));
}

void ptx_tmem_epilogue(pe *e) {
  if (!e->ki->tmem_cols) return;
  char opc[96];
  pe_ins(e, "tcgen05.fence::before_thread_sync", 0);
  pe_block_sync(e);   /* every thread of the block (and of the peer, whose MMAs write here) is done with TMEM */
  pe_ins(e, "tcgen05.fence::after_thread_sync", 0);
  uint32_t skip = pe_label(e);
  pe_pins(e, first_warp(e), true, "bra.uni", 1, LBL(skip));
  snprintf(opc, sizeof opc, "tcgen05.dealloc.%s.sync.aligned.b32", group(e));
  pe_ins(e, opc, 2, R(e->tmem), I(e->ki->tmem_cols));
  pe_label_here(e, skip);
}

preg pe_tmem_addr(pe *e, uint32_t refv) {
  const pref *r = &e->refs[refv];
  const ir_type *t = ir_vtype(e->k, refv);
  int bytes = dt_bytes(t->dtype);
  int64_t col = e->ki->tmem_off[r->root] + r->soff[1] * bytes / 4;
  preg a = pe_reg(e, PR_R);
  pe_ins(e, "add.u32", 3, R(a), R(e->tmem), I(col));
  if (r->doff[1]) {   /* a dynamic column start: ir_build keeps packed starts on whole columns */
    if (bytes < 4 && pass_gcd(r->ddiv[1], 4 / bytes) != 4 / bytes)
      pe_failf(e, "TMEM of %s packs %d values to a column: a dynamic column start must be known to be a multiple of %d "
               "(multiply the index by it)", dt_name(t->dtype), 4 / bytes, 4 / bytes);
    preg c = pe_reg(e, PR_R);
    pe_ins(e, "cvt.u32.u64", 2, R(c), R(r->doff[1]));
    if (bytes < 4) pe_ins(e, "shr.u32", 3, R(c), R(c), I(bytes == 2 ? 1 : 2));
    pe_ins(e, "add.u32", 3, R(a), R(a), R(c));
  }
  return a;
}

/* -- Loads and stores -------------------------------------------------------------------- */

enum { SH_32X32B, SH_16X256B };

/* One instruction: its shape, first lane within the warp's 32, first column, and .num. */
typedef struct tinstr { int shape, lane0; int64_t col0; int num; } tinstr;

static int instr_regs(const tinstr *in) { return in->shape == SH_32X32B ? in->num : 4 * in->num; }

/* Lane (within the instruction's rows) and column (from its first) of register r of thread l. */
static void reg_cell(int shape, int l, int r, int *lane, int64_t *col) {
  if (shape == SH_32X32B) { *lane = l; *col = r; return; }
  *lane = l / 4 + 8 * ((r / 2) % 2);
  *col = r % 2 + 2 * (l % 4) + 8 * (r / 4);
}

/* The instructions covering `cols` columns of every lane in a shape (0 when it cannot). */
static int plan_instrs(int shape, int64_t cols, tinstr *out, int max) {
  int n = 0;
  int64_t unit = shape == SH_32X32B ? 1 : 8, most = shape == SH_32X32B ? 32 : 8;   /* columns per .num; .num per instruction */
  if (cols % unit) return 0;
  for (int lane0 = 0; lane0 < 32; lane0 += shape == SH_32X32B ? 32 : 16)
    for (int64_t c = 0; c < cols;) {
      int num = 1;
      while (num * 2 <= most && (num * 2) * unit <= cols - c) num *= 2;
      if (n == max) return 0;
      out[n++] = (tinstr){ shape, lane0, c, num };
      c += num * unit;
    }
  return n;
}

/* For the array's layout f (a TMEM ref of cols logical columns, pack values
** to a column) and instructions in[0..n): the array slot of every
** (instruction register, packed value) in order, the same for every
** thread; false when some thread's registers do not match. */
static bool plan_slots(pe *e, const lay_fit *f, int64_t cols, int pack, const tinstr *in, int n, int32_t *plan) {
  int64_t nel = f->nregs * f->vlen, total = 0;
  for (int i = 0; i < n; i++) total += instr_regs(&in[i]) * pack;
  if (total != nel || f->l->kind != LAY_TILED) return false;
  size_t tsize = sizeof(int32_t) * (size_t)(IR_TMEM_ROWS * cols);
  int32_t *slot = mem_realloc(e->k->alloc, NULL, 0, tsize);   /* (row, column) -> slot of the thread at hand, or -1 */
  if (!slot) diag_throw(e->d, ERR_NOMEM, "");
  memset(slot, 0xff, tsize);
  bool ok = true;
  for (int t = 0; t < 128 && ok; t++) {
    int w = t / 32, l = t % 32;
    int64_t idx[LAY_MAXRANK];
    for (int64_t j = 0; j < nel; j++) {
      lay_index(f, w, l, j / f->vlen, (int)(j % f->vlen), idx);
      slot[idx[0] * cols + idx[1]] = (int32_t)j;
    }
    int64_t p = 0;
    for (int i = 0; i < n && ok; i++)
      for (int r = 0; r < instr_regs(&in[i]) && ok; r++) {
        int lane;
        int64_t col;
        reg_cell(in[i].shape, l, r, &lane, &col);
        int64_t row = 32 * w + in[i].lane0 + lane;
        for (int s = 0; s < pack && ok; s++, p++) {
          int32_t j = slot[row * cols + (in[i].col0 + col) * pack + s];
          if (t == 0) plan[p] = j;
          ok = j >= 0 && j == plan[p];
        }
      }
    for (int64_t j = 0; j < nel; j++) {
      lay_index(f, w, l, j / f->vlen, (int)(j % f->vlen), idx);
      slot[idx[0] * cols + idx[1]] = -1;
    }
  }
  for (int64_t p = 0; p < nel && ok; p++)   /* thread 0's slots are distinct: a bijection */
    for (int64_t q = p + 1; q < nel && ok; q++) ok = plan[p] != plan[q];
  mem_free(e->k->alloc, slot, tsize);
  return ok;
}

/* Pack (store) or unpack (load) one 32-bit instruction register x and the
** `pack` array registers v[] of dtype dt. */
static void convert(pe *e, bool store, int dt, preg x, const preg *v, int pack) {
  if (pack == 2) {
    pe_ins(e, "mov.b32", 2, store ? R(x) : RV(v, 2), store ? RV(v, 2) : R(x));
  } else if (store) {
    pe_pack4(e, x, v);
  } else {
    for (int s = 0; s < 4; s++) pe_ins(e, dt_issigned(dt) ? "bfe.s32" : "bfe.u32", 4, R(v[s]), R(x), I(8 * s), I(8));
  }
}

void ptx_tmem_access(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  bool store = op->code == IR_tmem_store;
  uint32_t refv = ir_opds(k, op)[0], v = store ? ir_opds(k, op)[1] : op->res;
  const ir_type *t = ir_vtype(k, refv);
  int pack = 4 / dt_bytes(t->dtype);
  int64_t cols = t->shape[1];
  lay_fit f;
  pe_fit(e, v, &f);
  preg base = pe_tmem_addr(e, refv);   /* (before the allocations below: it may fail) */
  int64_t nel = f.nregs * f.vlen;
  tinstr in[256];
  int32_t *plan = mem_realloc(k->alloc, NULL, 0, sizeof(int32_t) * (size_t)nel);
  if (!plan) diag_throw(e->d, ERR_NOMEM, "");
  int n = 0;
  for (int shape = SH_32X32B; shape <= SH_16X256B && !n; shape++) {
    n = plan_instrs(shape, cols / pack, in, 256);
    if (n && !plan_slots(e, &f, cols, pack, in, n, plan)) n = 0;
  }
  if (!n) {
    mem_free(k->alloc, plan, sizeof(int32_t) * (size_t)nel);
    pe_failf(e, "%s: the array's layout matches no tcgen05 access shape; use mgpu.Layout.TCGEN05 (32-bit values) or "
             "mgpu.Layout.TCGEN05_TMEM_NATIVE (a row per thread)", store ? "async_store_tmem" : "async_load_tmem");
  }
  preg lanes = pe_reg(e, PR_R), a = pe_reg(e, PR_R);
  pe_ins(e, "shl.b32", 3, R(lanes), R(e->warp), I(21));   /* warp w: lanes 32w.. (the lane field is bits 16..31) */
  pe_ins(e, "add.u32", 3, R(a), R(base), R(lanes));
  /* the instructions' registers: the array's own (32-bit values), or 32-bit ones packing `pack` values */
  preg arr = pe_vreg(e, v), *x = mem_realloc(k->alloc, NULL, 0, sizeof(preg) * (size_t)(nel / pack));
  if (!x) diag_throw(e->d, ERR_NOMEM, "");
  for (int64_t r = 0; r < nel / pack; r++) {
    x[r] = pack == 1 ? arr + (uint32_t)plan[r] : pe_reg(e, PR_R);
    preg vals[4];
    for (int s = 0; s < pack; s++) vals[s] = arr + (uint32_t)plan[r * pack + s];
    if (store && pack > 1) convert(e, true, t->dtype, x[r], vals, pack);
  }
  for (int i = 0, r0 = 0; i < n; r0 += instr_regs(&in[i]), i++) {
    po at = ADDR(a, ((int64_t)in[i].lane0 << 16) + in[i].col0);
    sb_printf(&e->body, "\ttcgen05.%s.sync.aligned.%s.x%d.b32 %s%s{", store ? "st" : "ld",
              in[i].shape == SH_32X32B ? "32x32b" : "16x256b", in[i].num, store ? at.s : "", store ? ", " : "");
    for (int r = 0; r < instr_regs(&in[i]); r++) sb_printf(&e->body, "%s%s", r ? ", " : "", R(x[r0 + r]).s);
    sb_printf(&e->body, "}%s%s;\n", store ? "" : ", ", store ? "" : at.s);
  }
  if (!store) {   /* the registers are read from here on */
    pe_ins(e, "tcgen05.wait::ld.sync.aligned", 0);
    for (int64_t r = 0; r < nel / pack && pack > 1; r++) {
      preg vals[4];
      for (int s = 0; s < pack; s++) vals[s] = arr + (uint32_t)plan[r * pack + s];
      convert(e, false, t->dtype, x[r], vals, pack);
    }
  }
  mem_free(k->alloc, x, sizeof(preg) * (size_t)(nel / pack));
  mem_free(k->alloc, plan, sizeof(int32_t) * (size_t)nel);
}
