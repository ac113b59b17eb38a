/*
** ir_print.c -- the canonical text form of a kernel.  Deterministic: the
** same trace always prints the same bytes, so the text is the cache key and
** the golden-test surface.  Locations are printed only on request.
*/
#include <stdio.h>

#include "ir.h"

static void print_type(strbuf *sb, const ir_type *t) {
  char buf[160];
  sb_puts(sb, ir_type_str(t, buf, sizeof buf));
}

static void print_values(strbuf *sb, uint32_t first, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) sb_printf(sb, i ? ", %%%u" : "%%%u", first + i);
}

static void print_opds(strbuf *sb, const ir_kernel *k, const ir_op *op, uint32_t from) {
  const uint32_t *o = ir_opds(k, op);
  for (uint32_t i = from; i < op->nopd; i++) sb_printf(sb, i > from ? ", %%%u" : "%%%u", o[i]);
}

/* An integer constant: in range of long long, else of unsigned long long (u64
** values from 2^63), else as a double (the converts would be undefined). */
static void print_int_const(strbuf *sb, double x) {
  if (x >= -9223372036854775808.0 && x < 9223372036854775808.0) sb_printf(sb, " %lld", (long long)x);
  else if (x >= 0 && x < 18446744073709551616.0) sb_printf(sb, " %llu", (unsigned long long)x);
  else sb_printf(sb, " %.17g", x);
}

/* Attributes in a per-class readable form. */
static void print_attrs(strbuf *sb, const ir_kernel *k, const ir_op *op) {
  const int64_t *a = ir_ints(k, op);
  switch (ir_optab[op->code].cls) {
  case IRC_CONST:
    if (dt_isfloat(a[0])) sb_printf(sb, " %.17g", op->num);
    else print_int_const(sb, op->num);
    return;
  case IRC_GRIDIDX:
    sb_printf(sb, " %lld", (long long)a[0]);
    return;
  case IRC_CONVERT:
    sb_printf(sb, " to %s", dt_name(a[0]));
    return;
  case IRC_PROF:
    sb_printf(sb, " %s %lld", a[1] ? "end" : "begin", (long long)a[0]);
    if (op->text) sb_printf(sb, " \"%s\"", ir_str(k, op->text));
    if (op->niat > 2 && a[2] == 4) sb_puts(sb, " per_warp");
    return;
  case IRC_PRINT:   /* the format, one line whatever it holds */
    sb_puts(sb, " \"");
    for (const char *p = ir_str(k, op->text); *p; p++) {
      if (*p == '"' || *p == '\\') sb_printf(sb, "\\%c", *p);
      else if ((unsigned char)*p < 0x20) sb_printf(sb, "\\x%02x", (unsigned)(unsigned char)*p);
      else sb_putc(sb, *p);
    }
    sb_putc(sb, '"');
    return;
  case IRC_VIEW: {
    const uint32_t *o = ir_opds(k, op);
    uint32_t dyn = 1;
    sb_puts(sb, "[");
    for (uint32_t i = 0; i < op->niat / 3; i++) {
      int64_t kind = a[3 * i], start = a[3 * i + 1], size = a[3 * i + 2];
      if (i) sb_puts(sb, ", ");
      char st[32];
      if (start == IR_DYNAMIC) snprintf(st, sizeof st, "%%%u", o[dyn++]);
      else snprintf(st, sizeof st, "%lld", (long long)start);
      if (kind == IR_IDX_INT) sb_puts(sb, st);
      else if (kind == IR_IDX_DS) sb_printf(sb, "ds(%s, %lld)", st, (long long)size);
      else sb_puts(sb, ":");
    }
    sb_puts(sb, "]");
    return;
  }
  default:
    if (op->niat) {
      sb_puts(sb, " [");
      for (uint32_t i = 0; i < op->niat; i++) sb_printf(sb, i ? ", %lld" : "%lld", (long long)a[i]);
      sb_puts(sb, "]");
    }
    if (op->text) sb_printf(sb, " \"%s\"", ir_str(k, op->text));
    return;
  }
}

static void indent(strbuf *sb, int depth) {
  for (int i = 0; i < depth; i++) sb_puts(sb, "  ");
}

/* Print ops [i, end) at the given depth; returns nothing, recurses into regions. */
static void print_region(strbuf *sb, const ir_kernel *k, uint32_t i, uint32_t end, int depth, bool locs) {
  while (i < end) {
    const ir_op *op = &k->ops.v[i];
    const ir_opinfo *info = &ir_optab[op->code];
    indent(sb, depth);
    if (op->nres) {
      print_values(sb, op->res, op->nres);
      sb_puts(sb, " = ");
    }
    sb_puts(sb, info->name);
    if (info->cls == IRC_VIEW) {
      sb_printf(sb, " %%%u", ir_opds(k, op)[0]);
      print_attrs(sb, k, op);
    } else {
      if (op->nopd) sb_putc(sb, ' ');
      print_opds(sb, k, op, 0);
      print_attrs(sb, k, op);
    }
    if (op->nres) {
      sb_puts(sb, " : ");
      for (uint32_t r = 0; r < op->nres; r++) {
        if (r) sb_puts(sb, ", ");
        print_type(sb, ir_vtype(k, op->res + r));
      }
    }
    if (info->flags & IRF_R) {
      if (op->narg) {
        sb_puts(sb, " args(");
        print_values(sb, op->arg, op->narg);
        sb_puts(sb, ")");
      }
      sb_puts(sb, " {");
    }
    if (locs && op->loc) sb_printf(sb, "  @ %s", ir_loc(k, op));
    sb_putc(sb, '\n');
    if (info->flags & IRF_R) {
      uint32_t b0 = i + 1, b1 = b0 + op->body[0];
      print_region(sb, k, b0, b1, depth + 1, locs);
      if ((op->code == IR_if || op->code == IR_while) && op->body[1]) {
        indent(sb, depth);
        sb_puts(sb, op->code == IR_if ? "} else {\n" : "} do {\n");
        print_region(sb, k, b1, b1 + op->body[1], depth + 1, locs);
      }
      indent(sb, depth);
      sb_puts(sb, "}\n");
    }
    i += ir_extent(k, i);
  }
}

void ir_print(const ir_kernel *k, strbuf *sb, bool with_locs) {
  const mgpu_kernel_options *o = &k->opts;
  sb_printf(sb, "kernel %s(", k->name);
  for (uint32_t i = 0; i < k->params.n; i++) {
    uint32_t v = k->params.v[i].value;
    sb_printf(sb, i ? ", %%%u: " : "%%%u: ", v);
    print_type(sb, ir_vtype(k, v));
    static const char *const roles[] = { " in", " out", "" };
    sb_puts(sb, roles[k->params.v[i].role]);
  }
  sb_puts(sb, ") grid=(");
  for (int i = 0; i < o->grid_rank; i++) sb_printf(sb, i ? ", %d" : "%d", o->grid[i]);
  sb_printf(sb, ") threads=%d approx_math=%d", o->num_threads, o->approx_math ? 1 : 0);
  /* every other option that changes the PTX, when set: the kernel cache keys on this text */
  _Static_assert(sizeof(mgpu_kernel_options) == 96, "a new kernel option: print it here");
  if (o->target != MGPU_TARGET_SM90A) sb_printf(sb, " target=%s", ir_target_name(o->target));
  if (o->cluster_rank) {
    sb_puts(sb, " cluster=(");
    for (int i = 0; i < o->cluster_rank; i++) sb_printf(sb, i ? ", %d" : "%d", o->cluster[i]);
    sb_puts(sb, ")");
  }
  if (o->lowering_semantics) sb_printf(sb, " lowering_semantics=%d", o->lowering_semantics);
  if (o->unsafe_no_auto_barriers) sb_puts(sb, " unsafe_no_auto_barriers=1");
  if (o->reduction_scratch_bytes) sb_printf(sb, " reduction_scratch_bytes=%d", o->reduction_scratch_bytes);
  if (o->disable_bounds_checks) sb_puts(sb, " disable_bounds_checks=1");
  sb_puts(sb, " {\n");
  print_region(sb, k, 0, k->ops.n, 1, with_locs);
  sb_puts(sb, "}\n");
}
