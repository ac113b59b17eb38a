/*
** ptx_emit.c -- the kernel frame (entry, parameters, register
** declarations), operands as text, and structured control flow.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ptx.h"

static const char *const pr_name[PR__COUNT] = { "%p", "%h", "%r", "%f", "%rd", "%fd" };  /* ORDER PR */
static const char *const pr_type[PR__COUNT] = { ".pred", ".b16", ".b32", ".f32", ".b64", ".f64" };

/* -- Registers, labels, operands ------------------------------------------------ */

int pe_cls(int dtype) {
  switch (dtype) {
  case MGPU_PRED: return PR_P;
  case MGPU_F16: case MGPU_BF16: return PR_H;
  case MGPU_F32: return PR_F;
  case MGPU_F64: return PR_FD;
  case MGPU_I64: case MGPU_U64: return PR_RD;
  default: return PR_R;   /* 8- to 32-bit integers and f8 codes live in b32 registers */
  }
}

preg pe_regs(pe *e, int cls, uint32_t n) {
  uint32_t first = e->nreg[cls] + 1;
  e->nreg[cls] += n;
  if (e->nreg[cls] >= (1u << 24)) pe_fail(e, "kernel needs more than 16M registers of one class");
  return PR_MAKE(cls, first);
}

preg pe_reg(pe *e, int cls) { return pe_regs(e, cls, 1); }

uint32_t pe_label(pe *e) { return ++e->nlabel; }

static void rname(char *buf, size_t n, preg r) {
  snprintf(buf, n, "%s%u", pr_name[PR_CLASS(r)], r & 0xffffffu);
}

po R(preg r) { po o; rname(o.s, sizeof o.s, r); return o; }
po NOT(preg p) { po o; o.s[0] = '!'; rname(o.s + 1, sizeof o.s - 1, p); return o; }
po I(int64_t v) { po o; snprintf(o.s, sizeof o.s, "%lld", (long long)v); return o; }
po U(uint64_t v) { po o; snprintf(o.s, sizeof o.s, "%llu", (unsigned long long)v); return o; }
po LBL(uint32_t l) { po o; snprintf(o.s, sizeof o.s, "$L%u", l); return o; }
po S(const char *s) { po o; snprintf(o.s, sizeof o.s, "%s", s); return o; }

po F32(double v) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  po o;
  snprintf(o.s, sizeof o.s, "0f%08X", u);
  return o;
}

po F64(double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  po o;
  snprintf(o.s, sizeof o.s, "0d%016llX", (unsigned long long)u);
  return o;
}

po ADDR(preg base, int64_t off) {
  po o;
  char b[24];
  rname(b, sizeof b, base);
  if (off) snprintf(o.s, sizeof o.s, "[%s+%lld]", b, (long long)off);
  else snprintf(o.s, sizeof o.s, "[%s]", b);
  return o;
}

po RV(const preg *r, int n) {
  po o;
  size_t len = 0;
  o.s[len++] = '{';
  for (int i = 0; i < n; i++) {
    char b[24];
    rname(b, sizeof b, r[i]);
    len += (size_t)snprintf(o.s + len, sizeof o.s - len, i ? ", %s" : "%s", b);
  }
  snprintf(o.s + len, sizeof o.s - len, "}");
  return o;
}

static void ins_v(pe *e, const char *pred, const char *opc, int n, va_list ap) {
  sb_puts(&e->body, "\t");
  if (pred) { sb_puts(&e->body, pred); sb_putc(&e->body, ' '); }
  sb_puts(&e->body, opc);
  for (int i = 0; i < n; i++) {
    po o = va_arg(ap, po);
    sb_puts(&e->body, i ? ", " : " ");
    sb_puts(&e->body, o.s);
  }
  sb_puts(&e->body, ";\n");
}

void pe_ins(pe *e, const char *opc, int n, ...) {
  va_list ap;
  va_start(ap, n);
  ins_v(e, NULL, opc, n, ap);
  va_end(ap);
}

void pe_pins(pe *e, preg pred, bool neg, const char *opc, int n, ...) {
  char p[32];
  p[0] = '@';
  if (neg) { p[1] = '!'; rname(p + 2, sizeof p - 2, pred); }
  else rname(p + 1, sizeof p - 1, pred);
  va_list ap;
  va_start(ap, n);
  ins_v(e, p, opc, n, ap);
  va_end(ap);
}

/* A label may join control flow: auto barriers assume SMEM was read. */
void pe_label_here(pe *e, uint32_t l) {
  sb_printf(&e->body, "$L%u:\n", l);
  e->smem_reads = true;
}

void pe_comment(pe *e, const char *fmt, ...) {
  sb_puts(&e->body, "\t// ");
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&e->body, fmt, ap);
  va_end(ap);
  sb_putc(&e->body, '\n');
}

void pe_fail(pe *e, const char *what) {
  diag_throw(e->d, ERR_PTX, e->op ? ir_loc(e->k, e->op) : "", what);
}

void pe_failf(pe *e, const char *fmt, ...) {
  char msg[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pe_fail(e, msg);
}

int pe_log2(int64_t x) {
  int n = 0;
  while ((INT64_C(1) << n) < x) n++;
  return n;
}

/* d = a / c or a % c for a 32-bit integer a and a constant c >= 2, as
** truncating division (the remainder takes a's sign), without a divide:
** ptxas lowers div/rem by any 32-bit operand, immediates included, to a
** float reciprocal and corrections (MUFU.RCP, about 20 instructions).  A
** power of two is a shift; any other c a multiply by a magic number
** (Granlund and Montgomery, "Division by invariant integers using
** multiplication", 1994: figure 4.1 unsigned, 5.2 signed). */
void pe_divrem_const(pe *e, bool rem, bool sgn, preg d, preg a, int64_t c) {
  int l = 0;
  while ((INT64_C(1) << l) < c) l++;             /* ceil(log2 c) */
  bool pow2 = (INT64_C(1) << l) == c;
  if (pow2 && !sgn && rem) { pe_ins(e, "and.b32", 3, R(d), R(a), I(c - 1)); return; }
  preg q = !rem ? d : pe_reg(e, PR_R), t = pe_reg(e, PR_R), u = pe_reg(e, PR_R);
  if (pow2 && !sgn) {
    pe_ins(e, "shr.u32", 3, R(q), R(a), I(l));
  } else if (pow2) {                               /* round toward zero: add c - 1 to negative a */
    pe_ins(e, "shr.s32", 3, R(t), R(a), I(31));
    pe_ins(e, "shr.u32", 3, R(t), R(t), I(32 - l));
    pe_ins(e, "add.s32", 3, R(t), R(t), R(a));
    pe_ins(e, "shr.s32", 3, R(q), R(t), I(l));
  } else if (sgn) {                                /* m = 2^(31+l) / c + 1 - 2^32 */
    int64_t m = (int64_t)(((UINT64_C(1) << (31 + l)) / (uint64_t)c) + 1) - (INT64_C(1) << 32);
    pe_ins(e, "mul.hi.s32", 3, R(t), R(a), I(m));
    pe_ins(e, "add.s32", 3, R(t), R(t), R(a));
    pe_ins(e, "shr.s32", 3, R(t), R(t), I(l - 1));
    pe_ins(e, "shr.s32", 3, R(u), R(a), I(31));
    pe_ins(e, "sub.s32", 3, R(q), R(t), R(u));
  } else {                                         /* m = 2^32 (2^l - c) / c + 1 */
    uint64_t m = (((UINT64_C(1) << l) - (uint64_t)c) << 32) / (uint64_t)c + 1;   /* 2^l - c < c: no overflow */
    pe_ins(e, "mul.hi.u32", 3, R(t), R(a), I((int64_t)(uint32_t)m));
    pe_ins(e, "sub.u32", 3, R(u), R(a), R(t));
    pe_ins(e, "shr.u32", 3, R(u), R(u), I(1));
    pe_ins(e, "add.u32", 3, R(u), R(u), R(t));
    pe_ins(e, "shr.u32", 3, R(q), R(u), I(l - 1));
  }
  if (rem) {
    pe_ins(e, "mul.lo.s32", 3, R(t), R(q), I(c));
    pe_ins(e, "sub.s32", 3, R(d), R(a), R(t));
  }
}

void pe_divrem(pe *e, preg x, int64_t d, preg *q, preg *r) {
  if (q) {
    *q = pe_reg(e, PR_R);
    if (d == 1) pe_ins(e, "mov.b32", 2, R(*q), R(x));
    else pe_divrem_const(e, false, false, *q, x, d);
  }
  if (r) {
    *r = pe_reg(e, PR_R);
    if (d == 1) pe_ins(e, "mov.b32", 2, R(*r), I(0));
    else pe_divrem_const(e, true, false, *r, x, d);
  }
}

/* -- Values ---------------------------------------------------------------------------- */

uint32_t pe_nregs(const pe *e, uint32_t v) {
  const ir_type *t = ir_vtype(e->k, v);
  if (t->kind != MGPU_VALUE_ARRAY) return 1;
  lay_fit f;
  if (!lay_fit_shape(&e->ki->lay[v], t->shape, t->rank, &f, NULL, 0)) return 0;
  int64_t n = f.nregs * f.vlen;
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;   /* (saturated: define() refuses anything this large) */
}

preg pe_vreg(pe *e, uint32_t v) {
  mgpu_assert(e->vreg[v] != 0);
  return e->vreg[v];
}

/* r broadcast from lane 0 of each warp (every lane holds the same value
** already): ptxas then knows r is warp-uniform, so branches on it are
** uniform and values computed from it can live in uniform registers.
** All 32 lanes must be converged. */
void pe_warp_uniform(pe *e, preg r) {
  pe_ins(e, "shfl.sync.idx.b32", 5, R(r), R(r), I(0), I(31), I(-1));
}

/* Fresh registers for value v (not refs). */
static void define(pe *e, uint32_t v) {
  const ir_type *t = ir_vtype(e->k, v);
  if (t->kind == MGPU_VALUE_REF) return;
  uint32_t n = pe_nregs(e, v);
  if (n == 0) pe_fail(e, "internal: an array without a layout that fits it");
  if (n > 4096) pe_fail(e, "array too large for registers: more than 4096 per thread; use smaller blocks");
  e->vreg[v] = pe_regs(e, pe_cls(t->dtype), n);
}

/* -- Control flow ------------------------------------------------------------------------- */

static void emit_region(pe *e, uint32_t i, uint32_t end);

/* Move the yielded values of a region into the registers of `first..`,
** through temporaries when a yield permutes carried registers. */
static void move_yield(pe *e, const ir_op *y, uint32_t first) {
  const uint32_t *o = ir_opds(e->k, y);
  bool clash = false;
  for (uint32_t j = 0; j < y->nopd; j++)
    for (uint32_t m = 0; m < y->nopd; m++)
      if (m != j && e->vreg[o[m]] == e->vreg[first + j]) clash = true;
  preg tmp[IR_MAXRES];
  for (uint32_t j = 0; j < y->nopd; j++) {
    int dt = ir_vtype(e->k, o[j])->dtype;
    uint32_t n = pe_nregs(e, first + j);
    bool scalar_src = ir_vtype(e->k, o[j])->kind == MGPU_VALUE_SCALAR;
    if (clash) {
      tmp[j] = pe_regs(e, pe_cls(dt), n);
      ptx_move(e, dt, tmp[j], e->vreg[o[j]], n, scalar_src);
    } else if (e->vreg[o[j]] != e->vreg[first + j]) {
      ptx_move(e, dt, e->vreg[first + j], e->vreg[o[j]], n, scalar_src);
    }
  }
  if (clash)
    for (uint32_t j = 0; j < y->nopd; j++)
      ptx_move(e, ir_vtype(e->k, o[j])->dtype, e->vreg[first + j], tmp[j], pe_nregs(e, first + j), false);
}

static void emit_for(pe *e, uint32_t i) {
  const ir_kernel *k = e->k;
  const ir_op *op = &k->ops.v[i];
  const uint32_t *o = ir_opds(k, op);
  int idt = ir_vtype(k, o[0])->dtype;
  const char *ty = dt_table[idt].ptx;
  /* carried registers double as the loop's results */
  define(e, op->arg);
  for (uint32_t j = 0; j < op->nres; j++) {
    define(e, op->res + j);
    e->vreg[op->arg + 1 + j] = e->vreg[op->res + j];
    ptx_move(e, ir_vtype(k, o[3 + j])->dtype, e->vreg[op->res + j], e->vreg[o[3 + j]],
             pe_nregs(e, op->res + j), ir_vtype(k, o[3 + j])->kind == MGPU_VALUE_SCALAR);
  }
  preg iv = e->vreg[op->arg];
  char opc[32];
  snprintf(opc, sizeof opc, "mov.%s", dt_table[idt].ptxbits);
  pe_ins(e, opc, 2, R(iv), R(e->vreg[o[0]]));
  uint32_t head = pe_label(e), done = pe_label(e);
  preg p = pe_reg(e, PR_P);
  pe_label_here(e, head);
  snprintf(opc, sizeof opc, "setp.ge.%s", ty);
  pe_ins(e, opc, 3, R(p), R(iv), R(e->vreg[o[1]]));
  pe_pins(e, p, false, "bra.uni", 1, LBL(done));
  uint32_t b0 = i + 1, yi = b0 + op->body[0] - 1;
  emit_region(e, b0, yi);
  e->op = &k->ops.v[yi];
  move_yield(e, &k->ops.v[yi], op->arg + 1);
  snprintf(opc, sizeof opc, "add.%s", ty);
  pe_ins(e, opc, 3, R(iv), R(iv), R(e->vreg[o[2]]));
  pe_ins(e, "bra.uni", 1, LBL(head));
  pe_label_here(e, done);
  /* wgmma groups still in flight at the exit finish here: ptxas serialises
     every wgmma of the loop when other instructions come first */
  for (uint32_t j = i + 1; j < i + ir_extent(k, i); j++)
    if (k->ops.v[j].code == IR_wgmma) { pe_ins(e, "wgmma.wait_group.sync.aligned", 1, I(0)); break; }
}

/* head: condition; leave when false; body; next carried; back to head.
** The carried registers double as the loop's results. */
static void emit_while(pe *e, uint32_t i) {
  const ir_kernel *k = e->k;
  const ir_op *op = &k->ops.v[i];
  const uint32_t *o = ir_opds(k, op);
  for (uint32_t j = 0; j < op->nres; j++) {
    define(e, op->res + j);
    e->vreg[op->arg + j] = e->vreg[op->res + j];
    ptx_move(e, ir_vtype(k, o[j])->dtype, e->vreg[op->res + j], e->vreg[o[j]], pe_nregs(e, op->res + j),
             ir_vtype(k, o[j])->kind == MGPU_VALUE_SCALAR);
  }
  uint32_t head = pe_label(e), done = pe_label(e);
  uint32_t b0 = i + 1, y0 = b0 + op->body[0] - 1, b1 = y0 + 1, y1 = b1 + op->body[1] - 1;
  pe_label_here(e, head);
  emit_region(e, b0, y0);
  e->op = &k->ops.v[y0];
  pe_pins(e, e->vreg[ir_opds(k, &k->ops.v[y0])[0]], true, "bra.uni", 1, LBL(done));
  emit_region(e, b1, y1);
  e->op = &k->ops.v[y1];
  move_yield(e, &k->ops.v[y1], op->arg);
  pe_ins(e, "bra.uni", 1, LBL(head));
  pe_label_here(e, done);
  for (uint32_t j = i + 1; j < i + ir_extent(k, i); j++)   /* as for loops: finish wgmma groups at the exit */
    if (k->ops.v[j].code == IR_wgmma) { pe_ins(e, "wgmma.wait_group.sync.aligned", 1, I(0)); break; }
}

static void emit_if(pe *e, uint32_t i) {
  const ir_kernel *k = e->k;
  const ir_op *op = &k->ops.v[i];
  preg c = e->vreg[ir_opds(k, op)[0]];
  for (uint32_t j = 0; j < op->nres; j++) define(e, op->res + j);
  uint32_t l_else = pe_label(e), l_end = op->body[1] ? pe_label(e) : l_else;
  pe_pins(e, c, true, "bra.uni", 1, LBL(l_else));
  uint32_t b0 = i + 1, b1 = b0 + op->body[0];
  emit_region(e, b0, b1 - 1);
  e->op = &k->ops.v[b1 - 1];
  move_yield(e, &k->ops.v[b1 - 1], op->res);
  if (op->body[1]) {
    pe_ins(e, "bra.uni", 1, LBL(l_end));
    pe_label_here(e, l_else);
    emit_region(e, b1, b1 + op->body[1] - 1);
    e->op = &k->ops.v[b1 + op->body[1] - 1];
    move_yield(e, &k->ops.v[b1 + op->body[1] - 1], op->res);
  }
  pe_label_here(e, l_end);
}

/* run_scoped, and single_warp: a region that warps 1-3 of the warpgroup
** branch around (the warp index is warp-uniform, so the branch is too),
** then wait for the first warp at a warpgroup barrier, so that after it
** all four have seen what the region did, as the interpreter's one agent
** per warpgroup has. */
static void emit_scoped(pe *e, uint32_t i) {
  const ir_kernel *k = e->k;
  const ir_op *op = &k->ops.v[i];
  for (uint32_t j = 0; j < op->nres; j++) define(e, op->res + j);
  uint32_t end = i + 1 + op->body[0], skip = 0;
  bool one_warp = op->code == IR_single_warp && !e->single_warp;   /* nested: already on one warp */
  if (one_warp) {
    preg p = pe_reg(e, PR_P);
    skip = pe_label(e);
    pe_ins(e, "setp.ne.u32", 3, R(p), R(e->warp), I(0));
    pe_pins(e, p, false, "bra.uni", 1, LBL(skip));
    e->single_warp = true;
  }
  emit_region(e, i + 1, end - 1);
  e->op = &k->ops.v[end - 1];
  move_yield(e, &k->ops.v[end - 1], op->res);
  if (one_warp) {
    e->single_warp = false;
    pe_label_here(e, skip);
    pe_wg_barrier(e);
    e->smem_reads = false;
  }
}

/* Emit ops [i, end); a region's closing yield is handled by its owner. */
static void emit_region(pe *e, uint32_t i, uint32_t end) {
  const ir_kernel *k = e->k;
  const char *last_loc = NULL;
  while (i < end) {
    const ir_op *op = &k->ops.v[i];
    e->op = op;
    const char *loc = ir_loc(k, op);
    if (*loc && loc != last_loc) { pe_comment(e, "%s", loc); last_loc = loc; }
    switch (ir_optab[op->code].cls) {
    case IRC_FOR: emit_for(e, i); break;
    case IRC_IF: emit_if(e, i); break;
    case IRC_WHILE: emit_while(e, i); break;
    case IRC_CONST: define(e, op->res); ptx_const(e, op); break;
    case IRC_GRIDIDX: {
      define(e, op->res);
      int axis = (int)ir_ints(k, op)[0];
      if (op->code == IR_num_programs) {
        pe_ins(e, "mov.u32", 2, R(e->vreg[op->res]), I(k->opts.grid[axis]));
      } else {
        static const char *const sreg[2][3] = { { "%ctaid.x", "%ctaid.y", "%ctaid.z" },
                                                 { "%clusterid.x", "%clusterid.y", "%clusterid.z" } };
        ir_grid_axis m = ir_grid_map(&k->opts, axis);     /* axes folded into z: (z / div) % mod */
        preg id = m.div > 1 || m.mod ? pe_reg(e, PR_R) : e->vreg[op->res];
        pe_ins(e, "mov.u32", 2, R(id), S(sreg[k->opts.cluster_rank > 0][m.hw]));
        if (m.div > 1 || m.mod) {
          preg q = id;
          if (m.div > 1) pe_divrem(e, id, m.div, &q, NULL);
          if (m.mod) pe_divrem(e, q, m.mod, NULL, &id);
          else id = q;
          pe_ins(e, "mov.u32", 2, R(e->vreg[op->res]), R(id));
        }
      }
      break;
    }
    case IRC_THREADIDX: define(e, op->res); pe_ins(e, "mov.u32", 2, R(e->vreg[op->res]), R(e->wg)); break;
    case IRC_UNARY: case IRC_BINARY: case IRC_COMPARE: case IRC_SELECT: case IRC_CONVERT:
      define(e, op->res);
      ptx_elementwise(e, op);
      break;
    case IRC_BROADCAST: define(e, op->res); ptx_broadcast(e, op); break;
    case IRC_BCASTDIM: define(e, op->res); ptx_bcastdim(e, op); break;
    case IRC_RESHAPE: case IRC_LAYOUTCAST: define(e, op->res); ptx_same_regs(e, op); break;
    case IRC_IOTA: define(e, op->res); ptx_iota(e, op); break;
    case IRC_REDUCE: define(e, op->res); ptx_reduce(e, op); break;
    case IRC_VIEW: ptx_view(e, op); break;
    case IRC_LOAD: define(e, op->res); ptx_load(e, op); break;
    case IRC_STORE: ptx_store(e, op); break;
    case IRC_VIEWPERM: ptx_transpose_ref(e, op); break;
    case IRC_VIEWRESHAPE: ptx_reshape_ref(e, op); break;
    case IRC_ALLOC: case IRC_BARALLOC: ptx_alloc(e, op); break;
    case IRC_ACCALLOC: ptx_acc_alloc(e, op); break;
    case IRC_TMEMALLOC: ptx_alloc(e, op); break;
    case IRC_TMEMLOAD: define(e, op->res); ptx_tmem_access(e, op); break;
    case IRC_TMEMSTORE: ptx_tmem_access(e, op); break;
    case IRC_TCMMA: ptx_tcgen05_mma(e, op); break;
    case IRC_TCCOMMIT: ptx_tcgen05_commit(e, op); break;
    case IRC_CANCEL: ptx_cluster_cancel(e, op); break;
    case IRC_CANCELQ:
      for (uint32_t r = 0; r < op->nres; r++) define(e, op->res + r);
      ptx_cancel_query(e, op);
      break;
    case IRC_BARRIER: ptx_barrier_op(e, op); break;
    case IRC_TMALOAD: case IRC_TMASTORE: ptx_tma(e, op); break;
    case IRC_ASYNCSMEM: ptx_async_store_smem(e, op); break;
    case IRC_SYNC: ptx_sync_op(e, op); break;
    case IRC_WGMMA: ptx_wgmma(e, op); break;
    case IRC_ATOMIC: define(e, op->res); ptx_atomic(e, op); break;
    case IRC_REMOTE: ptx_remote(e, op); break;
    case IRC_CLUSTERREF: ptx_cluster_ref(e, op); break;
    case IRC_SEMWAIT: ptx_sem_wait(e, op); break;
    case IRC_MMSTORE: ptx_multimem(e, op); break;
    case IRC_MMLOAD: define(e, op->res); ptx_multimem(e, op); break;
    case IRC_PRINT: ptx_debug_print(e, op); break;
    case IRC_PROF: ptx_profile(e, op); break;
    case IRC_CLUSTERIDX: {
      static const char *const creg[3] = { "%cluster_ctaid.x", "%cluster_ctaid.y", "%cluster_ctaid.z" };
      define(e, op->res);
      pe_ins(e, "mov.u32", 2, R(e->vreg[op->res]), S(creg[ir_ints(k, op)[0]]));
      break;
    }
    case IRC_SCOPED: emit_scoped(e, i); break;
    default: pe_fail(e, "unexpected op");
    }
    i += ir_extent(k, i);
  }
}

/* -- The kernel ------------------------------------------------------------------------------- */

/* PTX type of a scalar parameter: 8- and 16-bit integers travel as 32 bits. */
static const char *param_type(int dt) {
  switch (dt) {
  case MGPU_F16: case MGPU_BF16: return "b16";
  case MGPU_F32: return "f32";
  case MGPU_F64: return "f64";
  case MGPU_I64: return "s64";
  case MGPU_U64: return "u64";
  default: return dt_issigned(dt) ? "s32" : "u32";
  }
}

mgpu_status ptx_emit_kernel(const ir_kernel *k, const kinfo *ki, strbuf *out, ptx_tmaps *tmaps, diag *d) {
  pe e;
  memset(&e, 0, sizeof e);
  e.k = k; e.ki = ki; e.d = d; e.tmaps = tmaps;
  e.dsmem = ir_uses_dsmem(k);
  sb_init(&e.body, k->alloc);
  sb_init(&e.entry, k->alloc);
  sb_init(&e.globals, k->alloc);
  jmp_buf jb, *saved = d->jmp;
  d->jmp = &jb;
  volatile mgpu_status st = MGPU_OK;   /* survives the longjmp */
  if (setjmp(jb)) { st = d->status; goto done; }
  e.vreg = mem_calloc(k->alloc, sizeof(preg) * k->vals.n);
  e.refs = mem_calloc(k->alloc, sizeof(pref) * k->vals.n);
  e.param_addr = mem_calloc(k->alloc, sizeof(preg) * (k->params.n + 1));
  e.phase = mem_calloc(k->alloc, sizeof(preg) * k->vals.n);
  e.acc = mem_calloc(k->alloc, sizeof(preg) * k->vals.n);
  if (!e.vreg || !e.refs || !e.param_addr || !e.phase || !e.acc) diag_throw(d, ERR_NOMEM, "");

  int threads = 128 * (k->opts.num_threads > 0 ? k->opts.num_threads : 1);
  preg tid = pe_reg(&e, PR_R);
  e.lane = pe_reg(&e, PR_R);
  e.wg = pe_reg(&e, PR_R);
  e.warp = pe_reg(&e, PR_R);
  e.lane32 = pe_reg(&e, PR_R);
  pe_ins(&e, "mov.u32", 2, R(tid), S("%tid.x"));
  pe_ins(&e, "and.b32", 3, R(e.lane), R(tid), I(127));
  pe_ins(&e, "shr.u32", 3, R(e.wg), R(tid), I(7));
  pe_ins(&e, "shr.u32", 3, R(e.warp), R(e.lane), I(5));
  pe_warp_uniform(&e, e.wg);   /* so the warpgroup branches are uniform */
  pe_warp_uniform(&e, e.warp);
  pe_ins(&e, "and.b32", 3, R(e.lane32), R(tid), I(31));
  /* The entry so far (the thread's indices); the tensor maps' prefetches follow it once the body
  ** has named them all, so the first TMA copy need not wait for its descriptor (as CUTLASS's
  ** kernels prefetch theirs).  They read kernel parameters only, so they come first, before the
  ** barriers' set-up and griddepcontrol.wait. */
  sb_free(&e.entry);
  e.entry = e.body;
  sb_init(&e.body, k->alloc);
  if (ki->smem_bytes) {
    e.smem = pe_reg(&e, PR_R);
    pe_ins(&e, "mov.u32", 2, R(e.smem), S("mgpu_smem"));
    ptx_smem_prologue(&e);
  }
  ptx_tmem_prologue(&e);
  ptx_barrier_prologue(&e);
  ptx_tmem_base(&e);
  /* Programmatic dependent launch (the launch allows it): the next kernel in the stream may place
  ** its blocks once every block of this one has begun, and run its prologue while this one
  ** finishes; the wait returns once the kernels before this one have completed and their writes
  ** are visible, and nothing before it touches global memory. */
  pe_ins(&e, "griddepcontrol.launch_dependents", 0);
  pe_ins(&e, "griddepcontrol.wait", 0);
  for (uint32_t i = 0; i < k->params.n; i++) {
    char pname[160];
    uint32_t v = k->params.v[i].value;
    snprintf(pname, sizeof pname, "[%s_param_%u]", k->name, i);
    if (k->params.v[i].role == MGPU_PARAM_SCALAR) {
      int dt = ir_vtype(k, v)->dtype;
      define(&e, v);
      char opc[32];
      snprintf(opc, sizeof opc, "ld.param.%s", param_type(dt));
      pe_ins(&e, opc, 2, R(e.vreg[v]), S(pname));
      continue;
    }
    preg a = pe_reg(&e, PR_RD);
    pe_ins(&e, "ld.param.u64", 2, R(a), S(pname));
    pe_ins(&e, "cvta.to.global.u64", 2, R(a), R(a));
    e.param_addr[i] = a;
    ptx_param_ref(&e, v, i);
  }
  ptx_profile_prologue(&e);
  emit_region(&e, 0, k->ops.n);
  ptx_barrier_epilogue(&e);
  ptx_tmem_epilogue(&e);
  pe_ins(&e, "ret", 0);
  ptx_tma_prefetch(&e, tid, &e.entry);
  if (e.body.oom || e.entry.oom || e.globals.oom) diag_throw(d, ERR_NOMEM, "");

  sb_printf(out, "//\n// Generated by mgpu %s from kernel '%s'.\n//\n", MGPU_VERSION_STRING, k->name);
  /* PTX ISA 8.0 has what sm_90a needs but multimem (8.1) and mixed s8 x u8 wgmma (8.4); sm_100a (tcgen05, tensor
     memory, cluster launch control) needs 8.6 */
  int isa = ir_blackwell(k) ? 86 : 80;
  if (e.ptx_isa > isa) isa = e.ptx_isa;
  sb_printf(out, ".version %d.%d\n.target %s\n.address_size 64\n\n", isa / 10, isa % 10, ir_target_name(k->opts.target));
  ptx_print_decls(&e, out);
  if (ki->smem_bytes) sb_puts(out, ".extern .shared .align 1024 .b8 mgpu_smem[];\n\n");
  sb_printf(out, ".visible .entry %s(\n", k->name);
  uint32_t nall = k->params.n + (uint32_t)tmaps->n;
  for (uint32_t i = 0; i < k->params.n; i++) {
    bool scalar = k->params.v[i].role == MGPU_PARAM_SCALAR;
    sb_printf(out, "\t.param .%s %s_param_%u%s\n", scalar ? param_type(ir_vtype(k, k->params.v[i].value)->dtype) : "u64",
              k->name, i, i + 1 < nall ? "," : "");
  }
  for (uint32_t i = k->params.n; i < nall; i++)   /* tensor maps, by value */
    sb_printf(out, "\t.param .align 64 .b8 %s_param_%u[%d]%s\n", k->name, i,
              128 * (tmaps->v[i - k->params.n].ndev ? tmaps->v[i - k->params.n].ndev : 1), i + 1 < nall ? "," : "");
  sb_printf(out, ")\n.maxntid %d, 1, 1\n", threads);
  if (e.maxreg) sb_puts(out, ".minnctapersm 1\n");   /* setmaxnreg needs a register count at entry */
  /* ptxas and the driver's JIT ignore a register cap given as an option (--maxrregcount,
  ** CU_JIT_MAX_REGISTERS) when .maxntid is present; the directive is honoured.  setmaxnreg
  ** kernels set their counts themselves. */
  else if (ki->maxnreg > 0) sb_printf(out, ".maxnreg %d\n", ki->maxnreg);
  if (k->opts.cluster_rank) {
    int c[3] = { 1, 1, 1 };
    for (int i = 0; i < k->opts.cluster_rank; i++) c[i] = k->opts.cluster[i];
    sb_printf(out, ".reqnctapercluster %d, %d, %d\n", c[0], c[1], c[2]);
  }
  sb_puts(out, "{\n");
  for (int c = 0; c < PR__COUNT; c++)
    if (e.nreg[c]) sb_printf(out, "\t.reg %s %s<%u>;\n", pr_type[c], pr_name[c], e.nreg[c] + 1);
  ptx_print_locals(&e, out);
  sb_putc(out, '\n');
  sb_puts(out, sb_str(&e.entry));
  sb_puts(out, sb_str(&e.body));
  sb_puts(out, "}\n");
  if (out->oom) diag_throw(d, ERR_NOMEM, "");
done:
  sb_free(&e.body);
  sb_free(&e.entry);
  sb_free(&e.globals);
  mem_free(k->alloc, e.vreg, sizeof(preg) * k->vals.n);
  mem_free(k->alloc, e.refs, sizeof(pref) * k->vals.n);
  mem_free(k->alloc, e.param_addr, sizeof(preg) * (k->params.n + 1));
  mem_free(k->alloc, e.phase, sizeof(preg) * k->vals.n);
  mem_free(k->alloc, e.acc, sizeof(preg) * k->vals.n);
  d->jmp = saved;
  return st;
}
