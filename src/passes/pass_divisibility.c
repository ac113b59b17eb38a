/*
** pass_divisibility.c -- which integer scalars are known multiples of what.
** Lets loads and stores prove that a dynamic view start keeps 16-byte
** vector accesses aligned (start = program_id * 1024 is a multiple of 1024).
*/
#include <stdlib.h>

#include "pass.h"

#define DIV_CAP (INT64_C(1) << 40)

int64_t pass_gcd(int64_t a, int64_t b) {
  a = llabs(a); b = llabs(b);
  while (b) { int64_t t = a % b; a = b; b = t; }
  return a;
}

/* What an integer constant's value, as the kernel holds it (wrapped to dt),
** is known to be divisible by: itself (0 for zero), or its largest power-of-2
** divisor up to DIV_CAP when larger.  num is an integer in the 64-bit range
** of dt (the builder checks). */
static int64_t const_div(int dt, double num) {
  uint64_t bits = num < 0 ? (uint64_t)(int64_t)num : (uint64_t)num;
  int64_t v = dt_wrap_int(dt, (int64_t)bits);
  if (v == INT64_MIN) return DIV_CAP;
  int64_t a = llabs(v);
  return a > DIV_CAP ? pass_gcd(a, DIV_CAP) : a;
}

static int64_t mul_div(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > DIV_CAP / b) return DIV_CAP;
  return a * b;
}

/* One walk over the ops in order, with the loop-carried values as they stand. */
static void forward(const ir_kernel *k, kinfo *ki) {
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    if (op->code == IR_for) ki->div[op->arg] = pass_gcd(ki->div[ir_opds(k, op)[0]], ki->div[ir_opds(k, op)[2]]);
    if (op->code == IR_for || op->code == IR_while) continue;   /* carried values: pass_divisibility */
    if (!op->nres || ir_vtype(k, op->res)->kind != MGPU_VALUE_SCALAR) continue;
    int dt = ir_vtype(k, op->res)->dtype;
    if (!dt_isint(dt)) continue;
    const uint32_t *o = ir_opds(k, op);
    int64_t r = 1;
    switch (op->code) {
    case IR_const: r = const_div(dt, op->num); break;
    case IR_add: case IR_sub: r = pass_gcd(ki->div[o[0]], ki->div[o[1]]); break;
    case IR_mul: r = mul_div(ki->div[o[0]], ki->div[o[1]]); break;
    case IR_shl: {   /* shift by a known constant */
      int32_t d = k->vals.v[o[1]].def;
      if (d >= 0 && k->ops.v[d].code == IR_const && k->ops.v[d].num >= 0 && k->ops.v[d].num < 40)
        r = mul_div(ki->div[o[0]], INT64_C(1) << (int)k->ops.v[d].num);
      break;
    }
    case IR_select: r = pass_gcd(ki->div[o[1]], ki->div[o[2]]); break;
    case IR_astype: {   /* widening integer conversions keep the value */
      int from = ir_vtype(k, o[0])->dtype;
      if (dt_isint(from) && dt_bytes(from) <= dt_bytes(dt)) r = ki->div[o[0]];
      break;
    }
    default: break;
    }
    ki->div[op->res] = r;
  }
}

/* For each integer carried by a loop (its region argument and the loop's
** result for it): with start, set both to "multiple of everything" (0);
** otherwise set both to the gcd of themselves, the initial value and the
** value the body yields.  Returns whether any divisor changed. */
static bool meet_carries(const ir_kernel *k, kinfo *ki, bool start) {
  bool changed = false;
  for (uint32_t i = 0; i < k->ops.n; i++) {
    const ir_op *op = &k->ops.v[i];
    if (op->code != IR_for && op->code != IR_while) continue;
    bool is_for = op->code == IR_for;
    uint32_t arg = op->arg + is_for, n = op->narg - is_for;
    const uint32_t *init = ir_opds(k, op) + (is_for ? 3 : 0);
    const uint32_t *next = ir_opds(k, &k->ops.v[i + op->body[0] + (is_for ? 0 : op->body[1])]);
    for (uint32_t j = 0; j < n; j++) {
      const ir_type *t = ir_vtype(k, arg + j);
      if (t->kind != MGPU_VALUE_SCALAR || !dt_isint(t->dtype)) continue;
      int64_t d = start ? 0 : pass_gcd(ki->div[arg + j], pass_gcd(ki->div[init[j]], ki->div[next[j]]));
      if (d != ki->div[arg + j] || d != ki->div[op->res + j]) changed = true;
      ki->div[arg + j] = ki->div[op->res + j] = d;   /* the result is one of the carried values */
    }
  }
  return changed;
}

/* A loop-carried integer (and the loop's result for it) is a multiple of
** what its initial value and every value the body yields for it are
** multiples of: the walk starts from "multiple of everything" (0) for them
** and repeats until nothing changes (divisors only shrink, so it ends).  A
** slot index or offset that a loop steps by whole tiles keeps that
** alignment. */
void pass_divisibility(const ir_kernel *k, kinfo *ki) {
  for (uint32_t v = 1; v < k->vals.n; v++) ki->div[v] = 1;
  meet_carries(k, ki, true);
  do forward(k, ki);
  while (meet_carries(k, ki, false));
}
