/*
** ptx_print.c -- debug_print through the driver's vprintf.
**
** vprintf(format, args) takes a generic pointer to the format (a .global
** byte array per op) and one to its arguments, packed with natural
** alignment in a .local buffer: floats as f64 (%f), 8- to 32-bit integers
** and preds as 32 bits (%d, %u), 64-bit integers as 64 bits.  Scalars are
** printed by the warpgroup's leader thread; an array by the threads that
** own its elements (replicas stay silent), one call per element with its
** index, so every element is printed once per warpgroup.
*/
#include <stdio.h>
#include <string.h>

#include "ptx.h"

/* One argument: its register (0 for a u32 index held in idx) and dtype. */
typedef struct parg {
  preg r;
  int dtype;
} parg;

static int arg_bytes(int dt) {
  return dt_isfloat(dt) || dt == MGPU_I64 || dt == MGPU_U64 ? 8 : 4;
}

/* Store the arguments into the buffer and call vprintf with format fmt
** (a u64 generic address).  Runs in whichever threads reach it. */
static void call_vprintf(pe *e, preg fmt, const parg *args, int n) {
  preg gen = 0;
  if (n) {
    preg buf = pe_reg(e, PR_RD);
    pe_ins(e, "mov.u64", 2, R(buf), S("mgpu_pbuf"));
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
      int dt = args[i].dtype, b = arg_bytes(dt);
      off = (off + b - 1) / b * b;
      preg r = args[i].r;
      if (dt_isfloat(dt)) {
        preg d = r;
        if (dt != MGPU_F64) {
          preg f = r;
          if (dt != MGPU_F32) {
            f = pe_reg(e, PR_F);
            pe_ins(e, dt == MGPU_BF16 ? "cvt.f32.bf16" : "cvt.f32.f16", 2, R(f), R(r));
          }
          d = pe_reg(e, PR_FD);
          pe_ins(e, "cvt.f64.f32", 2, R(d), R(f));
        }
        pe_ins(e, "st.local.f64", 2, ADDR(buf, off), R(d));
      } else if (dt == MGPU_PRED) {
        preg u = pe_reg(e, PR_R);
        pe_ins(e, "selp.u32", 4, R(u), I(1), I(0), R(r));
        pe_ins(e, "st.local.b32", 2, ADDR(buf, off), R(u));
      } else {
        pe_ins(e, b == 8 ? "st.local.b64" : "st.local.b32", 2, ADDR(buf, off), R(r));
      }
      off += b;
    }
    if (off > e->print_bytes) e->print_bytes = off;
    gen = pe_reg(e, PR_RD);
    pe_ins(e, "cvta.local.u64", 2, R(gen), R(buf));
  }
  sb_puts(&e->body, "\t{\n\t.param .b64 mgpu_vp0;\n\t.param .b64 mgpu_vp1;\n");
  pe_ins(e, "st.param.b64", 2, S("[mgpu_vp0]"), R(fmt));
  if (gen) pe_ins(e, "st.param.b64", 2, S("[mgpu_vp1]"), R(gen));
  else pe_ins(e, "st.param.b64", 2, S("[mgpu_vp1]"), I(0));
  pe_ins(e, "call.uni (_), vprintf, (mgpu_vp0, mgpu_vp1)", 0);
  sb_puts(&e->body, "\t}\n");
}

/* The format of op as a module-scope byte array; returns its generic address. */
static preg format_string(pe *e, const ir_op *op) {
  strbuf fmt;
  sb_init(&fmt, e->k->alloc);
  ir_print_format(e->k, op, &fmt);
  if (fmt.oom) { sb_free(&fmt); pe_fail(e, "out of memory"); }
  uint32_t id = e->nfmt++;
  sb_printf(&e->globals, ".global .align 1 .b8 mgpu_fmt%u[%zu] = {", id, fmt.len + 1);
  for (size_t i = 0; i < fmt.len; i++) sb_printf(&e->globals, "%u, ", (unsigned)(unsigned char)fmt.s[i]);
  sb_puts(&e->globals, "0};\n");
  sb_free(&fmt);
  char name[32];
  snprintf(name, sizeof name, "mgpu_fmt%u", id);
  preg a = pe_reg(e, PR_RD);
  pe_ins(e, "mov.u64", 2, R(a), S(name));
  pe_ins(e, "cvta.global.u64", 2, R(a), R(a));
  return a;
}

/* Coordinates (u32 registers) of the row-major flat index in x. */
static void unravel(pe *e, const ir_type *t, preg x, preg *c) {
  for (int d = t->rank - 1; d >= 0; d--) {
    if (d == 0) { c[d] = x; break; }
    preg q, r;
    pe_divrem(e, x, t->shape[d], &q, &r);
    c[d] = r;
    x = q;
  }
}

/* Print one element: index registers c, value register v; only where
** `pred` holds (0: always). */
static void print_elem(pe *e, preg fmt, const ir_type *t, const preg *c, preg v, preg pred) {
  parg args[IR_MAXRANK + 1];
  for (int d = 0; d < t->rank; d++) args[d] = (parg){ c[d], MGPU_U32 };
  args[t->rank] = (parg){ v, t->dtype };
  uint32_t skip = 0;
  if (pred) {
    skip = pe_label(e);
    pe_pins(e, pred, true, "bra", 1, LBL(skip));
  }
  call_vprintf(e, fmt, args, t->rank + 1);
  if (skip) pe_label_here(e, skip);
}

static void print_array(pe *e, const ir_op *op, preg fmt) {
  uint32_t v = ir_opds(e->k, op)[0];
  const ir_type *t = ir_vtype(e->k, v);
  lay_fit f;
  pe_fit(e, v, &f);
  preg regs = pe_vreg(e, v);
  int64_t numel = ir_numel(t);
  preg c[IR_MAXRANK];
  if (f.l->kind == LAY_SPLAT) {   /* one value: the leader walks every index */
    uint32_t head = pe_label(e), done = pe_label(e);
    preg lead = pe_leader(e), i = pe_reg(e, PR_R), more = pe_reg(e, PR_P);
    pe_pins(e, lead, true, "bra", 1, LBL(done));
    pe_ins(e, "mov.u32", 2, R(i), I(0));
    pe_label_here(e, head);
    unravel(e, t, i, c);
    print_elem(e, fmt, t, c, regs, 0);
    pe_ins(e, "add.u32", 3, R(i), R(i), I(1));
    pe_ins(e, "setp.lt.u32", 3, R(more), R(i), I(numel));
    pe_pins(e, more, false, "bra", 1, LBL(head));
    pe_label_here(e, done);
    return;
  }
  if (f.l->kind == LAY_STRIDED) {   /* flat index lane * vec + r * 128 * vec + el */
    preg lanev = pe_reg(e, PR_R);
    pe_ins(e, "mul.lo.u32", 3, R(lanev), R(e->lane), I(f.vlen));
    for (int64_t r = 0; r < f.nregs; r++)
      for (int el = 0; el < f.vlen; el++) {
        int64_t base = r * 128 * f.vlen + el;
        if (base >= numel) continue;   /* no thread holds it */
        preg x = pe_reg(e, PR_R), in = 0;
        pe_ins(e, "add.u32", 3, R(x), R(lanev), I(base));
        if (base + 127 * f.vlen >= numel) {
          in = pe_reg(e, PR_P);
          pe_ins(e, "setp.lt.u32", 3, R(in), R(x), I(numel));
        }
        unravel(e, t, x, c);
        print_elem(e, fmt, t, c, regs + (uint32_t)(r * f.vlen + el), in);
      }
    return;
  }
  preg T[LAY_MAXRANK];
  pe_thread_coords(e, &f, T);
  preg own = pe_owner(e, &f);
  for (int64_t r = 0; r < f.nregs; r++)
    for (int el = 0; el < f.vlen; el++) {
      int64_t C[LAY_MAXRANK];
      pe_const_coords(&f, r, el, C);
      for (int d = 0; d < t->rank; d++) {
        c[d] = pe_reg(e, PR_R);
        if (T[d]) pe_ins(e, "add.u32", 3, R(c[d]), R(T[d]), I(C[d]));
        else pe_ins(e, "mov.u32", 2, R(c[d]), I(C[d]));
      }
      print_elem(e, fmt, t, c, regs + (uint32_t)(r * f.vlen + el), own);
    }
}

void ptx_debug_print(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  const uint32_t *o = ir_opds(k, op);
  for (uint32_t i = 0; i < op->nopd; i++)
    if (ir_vtype(k, o[i])->dtype == MGPU_F8E4M3 || ir_vtype(k, o[i])->dtype == MGPU_F8E5M2)
      pe_fail(e, "debug_print: f8 values cannot be printed");
  preg fmt = format_string(e, op);
  if (op->nopd == 1 && ir_vtype(k, o[0])->kind == MGPU_VALUE_ARRAY) {
    print_array(e, op, fmt);
    return;
  }
  parg args[IR_MAXRES];
  for (uint32_t i = 0; i < op->nopd && i < IR_MAXRES; i++) args[i] = (parg){ pe_vreg(e, o[i]), ir_vtype(k, o[i])->dtype };
  uint32_t skip = pe_label(e);
  preg lead = pe_leader(e);
  pe_pins(e, lead, true, "bra", 1, LBL(skip));
  call_vprintf(e, fmt, args, (int)op->nopd);
  pe_label_here(e, skip);
}

/* The profiler's per-thread state, set up once at entry in a kernel with profile ops: the
** address of its trace's row and the count of the trace's events so far, kept in a register so
** that an event costs two stores and no load (a load of the count would put a memory round trip
** on the warpgroup's path at every stamp).  Trace = (linear block * warpgroups + warpgroup) *
** warps + warp. */
void ptx_profile_prologue(pe *e) {
  const ir_kernel *k = e->k;
  const ir_op *op = NULL;
  for (uint32_t i = 0; i < k->ops.n && !op; i++)
    if (k->ops.v[i].code == IR_profile) op = &k->ops.v[i];
  if (!op) return;
  const uint32_t *o = ir_opds(k, op);
  const int64_t *at = ir_ints(k, op);
  const ir_type *t = ir_vtype(k, o[0]);
  int nwg = k->opts.num_threads > 0 ? k->opts.num_threads : 1;
  preg c[5], lin = pe_reg(e, PR_R), tr = pe_reg(e, PR_R), off = pe_reg(e, PR_RD);
  static const char *const sr[5] = { "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y" };
  for (int i = 0; i < 5; i++) { c[i] = pe_reg(e, PR_R); pe_ins(e, "mov.u32", 2, R(c[i]), S(sr[i])); }
  pe_ins(e, "mad.lo.u32", 4, R(lin), R(c[2]), R(c[4]), R(c[1]));
  pe_ins(e, "mad.lo.u32", 4, R(lin), R(lin), R(c[3]), R(c[0]));
  pe_ins(e, "mad.lo.u32", 4, R(tr), R(lin), I(nwg), R(e->wg));
  if (op->niat > 2 && at[2] == 4) pe_ins(e, "mad.lo.u32", 4, R(tr), R(tr), I(4), R(e->warp));
  pe_ins(e, "mul.wide.u32", 3, R(off), R(tr), I(t->shape[1] * 4));
  e->prof_row = pe_reg(e, PR_RD);
  pe_ins(e, "add.s64", 3, R(e->prof_row), R(e->param_addr[e->refs[o[0]].root]), R(off));
  e->prof_n = pe_reg(e, PR_R);
  pe_ins(e, "mov.u32", 2, R(e->prof_n), I(0));
}

/* profile: the warpgroup's leader (lane 0 of each warp with warps = 4)
** stamps {tag, %smid, %globaltimer} into the next 16-byte slot of its
** trace's row (header word 0 counts every event, stored or dropped). */
void ptx_profile(pe *e, const ir_op *op) {
  const ir_kernel *k = e->k;
  const uint32_t *o = ir_opds(k, op);
  const int64_t *at = ir_ints(k, op);
  int64_t space = ir_vtype(k, o[0])->shape[1] / 4 - 1;
  uint32_t skip = pe_label(e);
  preg lead;
  if (op->niat > 2 && at[2] == 4) {
    lead = pe_reg(e, PR_P);
    pe_ins(e, "setp.eq.u32", 3, R(lead), R(e->lane32), I(0));
  } else {
    lead = pe_leader(e);
  }
  preg n1 = pe_reg(e, PR_R), clk = pe_reg(e, PR_RD), v[4], full = pe_reg(e, PR_P);
  pe_ins(e, "add.u32", 3, R(n1), R(e->prof_n), I(1));
  pe_pins(e, lead, true, "bra", 1, LBL(skip));
  for (int i = 0; i < 4; i++) v[i] = pe_reg(e, PR_R);
  pe_ins(e, "mov.u64", 2, R(clk), S("%globaltimer"));
  pe_ins(e, "mov.u32", 2, R(v[1]), S("%smid"));
  pe_ins(e, "st.global.u32", 2, ADDR(e->prof_row, 0), R(n1));
  pe_ins(e, "setp.ge.u32", 3, R(full), R(e->prof_n), I(space));
  pe_pins(e, full, false, "bra", 1, LBL(skip));
  preg eo = pe_reg(e, PR_RD), ea = pe_reg(e, PR_RD);
  pe_ins(e, "mul.wide.u32", 3, R(eo), R(e->prof_n), I(16));
  pe_ins(e, "add.s64", 3, R(ea), R(e->prof_row), R(eo));
  pe_ins(e, "mov.u32", 2, R(v[0]), U((uint64_t)(uint32_t)at[0] | (uint64_t)(at[1] ? 1u : 0u) << 31));
  pe_ins(e, "mov.b64", 2, RV(v + 2, 2), R(clk));
  pe_ins(e, "st.global.v4.u32", 2, ADDR(ea, 16), RV(v, 4));
  pe_label_here(e, skip);
  pe_ins(e, "mov.u32", 2, R(e->prof_n), R(n1));
}

void ptx_print_decls(const pe *e, strbuf *out) {
  if (!e->nfmt) return;
  sb_puts(out, ".extern .func (.param .b32 func_retval0) vprintf (.param .b64 fmt, .param .b64 args);\n");
  sb_puts(out, sb_str(&e->globals));
  sb_putc(out, '\n');
}

void ptx_print_locals(const pe *e, strbuf *out) {
  if (e->print_bytes) sb_printf(out, "\t.local .align 8 .b8 mgpu_pbuf[%lld];\n", (long long)e->print_bytes);
}
