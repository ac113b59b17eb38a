/*
** ptx_eval.c -- the test-only straight-line PTX evaluator (see ptx_eval.h).
*/
#include "ptx_eval.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/ptx/ptx.h"

enum { T_NONE, T_PRED, T_B16, T_F16, T_BF16, T_B32, T_U32, T_S32, T_F32, T_B64, T_U64, T_S64, T_F64 };
static const char *const tname[] = { "", "pred", "b16", "f16", "bf16", "b32", "u32", "s32", "f32", "b64", "u64", "s64", "f64" };

enum { OP_MOV, OP_ADD, OP_SUB, OP_MUL, OP_FMA, OP_DIV, OP_RCP, OP_SQRT, OP_NEG, OP_ABS, OP_MIN, OP_MAX, OP_COPYSIGN,
       OP_TESTP, OP_SETP, OP_SELP, OP_AND, OP_OR, OP_XOR, OP_NOT, OP_SHL, OP_SHR, OP_SHF, OP_CLZ, OP_CVT, OP_EX2, OP_LG2 };
static const char *const opname[] = { "mov", "add", "sub", "mul", "fma", "div", "rcp", "sqrt", "neg", "abs", "min", "max",
                                      "copysign", "testp", "setp", "selp", "and", "or", "xor", "not", "shl", "shr", "shf",
                                      "clz", "cvt", "ex2", "lg2" };
#define NOPS ((int)(sizeof opname / sizeof opname[0]))

enum { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE, C_EQU, C_NEU, C_LTU, C_LEU, C_GTU, C_GEU };
static const char *const cmpname[] = { "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu" };
enum { R_NONE, R_RN, R_RNI, R_RZI, R_RMI, R_RPI };

typedef struct pxo {
  bool imm;
  uint32_t reg;                  /* PR_MAKE(class, index) */
  uint64_t val;                  /* immediate bits */
} pxo;

typedef struct pxi {
  uint8_t op, t, t2;             /* t2: cvt's source type */
  uint8_t cmp, bop, rnd;         /* setp comparison, setp combining op (OP_AND/OR/XOR or 0), cvt rounding */
  bool ftz, nan, lo, hi, wide, approx;
  int n;
  pxo o[4];
} pxi;

static bool cvt_known(const pxi *i);

struct pxe_prog {
  pxi *ins;
  size_t n;
  uint64_t *reg[PR__COUNT];
  uint32_t nreg[PR__COUNT];
};

/* -- Parsing ------------------------------------------------------------------------------ */

static int find(const char *const *names, int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], s)) return i;
  return -1;
}

static bool parse_reg(const char *s, uint32_t *reg) {
  static const char *const pre[] = { "%fd", "%rd", "%f", "%r", "%h", "%p" };
  static const int cls[] = { PR_FD, PR_RD, PR_F, PR_R, PR_H, PR_P };
  for (int i = 0; i < 6; i++) {
    size_t l = strlen(pre[i]);
    if (strncmp(s, pre[i], l) || !isdigit((unsigned char)s[l])) continue;
    char *end;
    unsigned long idx = strtoul(s + l, &end, 10);
    if (*end || idx >= (1u << 24)) return false;
    *reg = PR_MAKE(cls[i], idx);
    return true;
  }
  return false;
}

static bool parse_operand(const char *s, pxo *o) {
  memset(o, 0, sizeof *o);
  if (s[0] == '%') return parse_reg(s, &o->reg);
  char *end;
  o->imm = true;
  if (s[0] == '0' && (s[1] == 'd' || s[1] == 'f') && isxdigit((unsigned char)s[2])) {
    o->val = strtoull(s + 2, &end, 16);
    return !*end;
  }
  if (s[0] == '-') o->val = (uint64_t)strtoll(s, &end, 10);
  else o->val = strtoull(s, &end, 0);
  return end != s && !*end;
}

/* The opcode's dotted parts into i; false for anything not modelled. */
static bool parse_opcode(char *opc, pxi *i) {
  char *save, *tok = strtok_r(opc, ".", &save);
  int op = find(opname, NOPS, tok);
  if (op < 0) return false;
  i->op = (uint8_t)op;
  int ntypes = 0;
  bool have_cmp = false;
  while ((tok = strtok_r(NULL, ".", &save))) {
    int t = find(tname, (int)(sizeof tname / sizeof tname[0]), tok), c;
    if (t > 0) {
      if (ntypes == 0) i->t = (uint8_t)t;
      else if (ntypes == 1 && op == OP_CVT) i->t2 = (uint8_t)t;
      else return false;
      ntypes++;
    } else if (op == OP_SETP && !have_cmp && (c = find(cmpname, 12, tok)) >= 0) {
      i->cmp = (uint8_t)c;
      have_cmp = true;
    } else if (op == OP_SETP && have_cmp && !i->bop && (!strcmp(tok, "and") || !strcmp(tok, "or") || !strcmp(tok, "xor"))) {
      i->bop = (uint8_t)(tok[0] == 'a' ? OP_AND : tok[0] == 'o' ? OP_OR : OP_XOR);
    } else if (!strcmp(tok, "rn")) i->rnd = R_RN;
    else if (!strcmp(tok, "rni")) i->rnd = R_RNI;
    else if (!strcmp(tok, "rzi")) i->rnd = R_RZI;
    else if (!strcmp(tok, "rmi")) i->rnd = R_RMI;
    else if (!strcmp(tok, "rpi")) i->rnd = R_RPI;
    else if (!strcmp(tok, "ftz")) i->ftz = true;
    else if (!strcmp(tok, "NaN")) i->nan = true;
    else if (!strcmp(tok, "lo")) i->lo = true;
    else if (!strcmp(tok, "hi")) i->hi = true;
    else if (!strcmp(tok, "wide")) i->wide = true;
    else if (!strcmp(tok, "approx")) i->approx = true;
    else if (op == OP_TESTP && !strcmp(tok, "notanumber")) i->cmp = 0;
    else if (op == OP_SHF && (!strcmp(tok, "l") || !strcmp(tok, "wrap"))) continue;
    else return false;
  }
  if (!i->t) return false;
  if (op == OP_CVT && (!i->t2 || !cvt_known(i))) return false;
  if (op == OP_SETP && !have_cmp) return false;
  if ((op == OP_EX2 || op == OP_LG2) && (!i->approx || i->t != T_F32)) return false;
  if (i->approx && op != OP_EX2 && op != OP_LG2) return false;
  return true;
}

static bool compile_line(char *line, pxi *i) {
  memset(i, 0, sizeof *i);
  char *p = line;
  while (isspace((unsigned char)*p)) p++;
  char *semi = strrchr(p, ';');
  if (!semi || semi[1]) return false;
  *semi = 0;
  char *sp = p;
  while (*sp && !isspace((unsigned char)*sp)) sp++;
  if (!*sp) return false;
  *sp++ = 0;
  if (!parse_opcode(p, i)) return false;
  char *save, *tok;
  for (tok = strtok_r(sp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (isspace((unsigned char)*tok)) tok++;
    char *end = tok + strlen(tok);
    while (end > tok && isspace((unsigned char)end[-1])) *--end = 0;
    if (i->n == 4 || !parse_operand(tok, &i->o[i->n])) return false;
    i->n++;
  }
  return i->n >= 2 && !i->o[0].imm;
}

pxe_prog *pxe_compile(const char *text, char *err, size_t errlen) {
  pxe_prog *p = calloc(1, sizeof *p);
  size_t cap = 0;
  const char *s = text;
  int lineno = 0;
  while (*s) {
    const char *nl = strchr(s, '\n');
    size_t len = nl ? (size_t)(nl - s) : strlen(s);
    char line[512];
    lineno++;
    if (len >= sizeof line) len = sizeof line - 1;
    memcpy(line, s, len);
    line[len] = 0;
    s += nl ? len + 1 : len;
    char *q = line;
    while (isspace((unsigned char)*q)) q++;
    if (!*q) continue;
    if (p->n == cap) {
      cap = cap ? 2 * cap : 256;
      p->ins = realloc(p->ins, cap * sizeof *p->ins);
    }
    char copy[512];
    memcpy(copy, line, sizeof copy);
    if (!compile_line(copy, &p->ins[p->n])) {
      snprintf(err, errlen, "line %d: cannot evaluate '%s'", lineno, q);
      pxe_free(p);
      return NULL;
    }
    for (int k = 0; k < p->ins[p->n].n; k++) {   /* size the register files */
      const pxo *o = &p->ins[p->n].o[k];
      if (o->imm) continue;
      int c = PR_CLASS(o->reg);
      uint32_t idx = o->reg & 0xffffffu;
      if (idx >= p->nreg[c]) p->nreg[c] = idx + 1;
    }
    p->n++;
  }
  for (int c = 0; c < PR__COUNT; c++) p->reg[c] = calloc(p->nreg[c] + 1, sizeof(uint64_t));
  return p;
}

void pxe_free(pxe_prog *p) {
  if (!p) return;
  for (int c = 0; c < PR__COUNT; c++) free(p->reg[c]);
  free(p->ins);
  free(p);
}

size_t pxe_count(const pxe_prog *p) { return p->n; }

void pxe_set(pxe_prog *p, uint32_t reg, uint64_t bits) {
  int c = PR_CLASS(reg);
  uint32_t idx = reg & 0xffffffu;
  if (idx < p->nreg[c]) p->reg[c][idx] = bits;
}

uint64_t pxe_get(const pxe_prog *p, uint32_t reg) {
  int c = PR_CLASS(reg);
  uint32_t idx = reg & 0xffffffu;
  return idx < p->nreg[c] ? p->reg[c][idx] : 0;
}

/* -- Values ------------------------------------------------------------------------------------- */

static int width(int t) {
  switch (t) {
  case T_PRED: return 1;
  case T_B16: case T_F16: case T_BF16: return 16;
  case T_B32: case T_U32: case T_S32: case T_F32: return 32;
  default: return 64;
  }
}

static bool isfloat(int t) { return t == T_F16 || t == T_BF16 || t == T_F32 || t == T_F64; }
static bool issigned(int t) { return t == T_S32 || t == T_S64; }

static uint64_t trunc_bits(int t, uint64_t v) {
  int w = width(t);
  return w == 64 ? v : v & ((UINT64_C(1) << w) - 1);
}

static int64_t sval(int t, uint64_t v) {   /* sign-extended from the type's width */
  int w = width(t);
  if (w == 64) return (int64_t)v;
  uint64_t m = UINT64_C(1) << (w - 1);
  v = trunc_bits(t, v);
  return (int64_t)((v ^ m) - m);
}

static float f32of(uint64_t v) { float f; uint32_t u = (uint32_t)v; memcpy(&f, &u, 4); return f; }
static uint64_t bitsf32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static double f64of(uint64_t v) { double d; memcpy(&d, &v, 8); return d; }
static uint64_t bitsf64(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

static double getf(int t, uint64_t v) {
  switch (t) {
  case T_F32: return f32of(v);
  case T_F64: return f64of(v);
  default: {
    unsigned char raw[2] = { (unsigned char)v, (unsigned char)(v >> 8) };
    return dt_load(t == T_F16 ? MGPU_F16 : MGPU_BF16, raw);
  }
  }
}

/* x rounded to nearest in type t (exact for f32 results of one double op on f32 inputs). */
static uint64_t putf(int t, double x) {
  switch (t) {
  case T_F32: return bitsf32((float)x);
  case T_F64: return bitsf64(x);
  default: {
    unsigned char raw[2];
    dt_store(t == T_F16 ? MGPU_F16 : MGPU_BF16, raw, x);
    return (uint64_t)raw[0] | (uint64_t)raw[1] << 8;
  }
  }
}

static double ftz32(double x) { return fabs(x) < 0x1p-126 ? copysign(0.0, x) : x; }

static bool compare(int c, double a, double b) {
  bool un = isnan(a) || isnan(b);
  switch (c) {
  case C_EQ: return !un && a == b;
  case C_NE: return !un && a != b;
  case C_LT: return !un && a < b;
  case C_LE: return !un && a <= b;
  case C_GT: return !un && a > b;
  case C_GE: return !un && a >= b;
  case C_EQU: return un || a == b;
  case C_NEU: return un || a != b;
  case C_LTU: return un || a < b;
  case C_LEU: return un || a <= b;
  case C_GTU: return un || a > b;
  default: return un || a >= b;
  }
}

static bool icompare(int c, int t, uint64_t a, uint64_t b) {
  if (issigned(t)) {
    int64_t x = sval(t, a), y = sval(t, b);
    switch (c) {
    case C_EQ: return x == y;
    case C_NE: return x != y;
    case C_LT: return x < y;
    case C_LE: return x <= y;
    case C_GT: return x > y;
    default: return x >= y;
    }
  }
  a = trunc_bits(t, a); b = trunc_bits(t, b);
  switch (c) {
  case C_EQ: return a == b;
  case C_NE: return a != b;
  case C_LT: return a < b;
  case C_LE: return a <= b;
  case C_GT: return a > b;
  default: return a >= b;
  }
}

/* float x to integer type t: rounded by rnd, saturated, NaN -> 0 */
static uint64_t f2i(int t, int rnd, double x) {
  if (isnan(x)) return 0;
  x = rnd == R_RNI ? nearbyint(x) : rnd == R_RMI ? floor(x) : rnd == R_RPI ? ceil(x) : trunc(x);
  int w = width(t);
  if (issigned(t)) {
    double lo = -ldexp(1, w - 1), hi = ldexp(1, w - 1);
    if (x < lo) return trunc_bits(t, (uint64_t)(w == 64 ? INT64_MIN : -(INT64_C(1) << (w - 1))));
    if (x >= hi) return trunc_bits(t, w == 64 ? (uint64_t)INT64_MAX : (UINT64_C(1) << (w - 1)) - 1);
    return trunc_bits(t, (uint64_t)(int64_t)x);
  }
  if (x <= 0) return 0;
  if (x >= ldexp(1, w)) return w == 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1;
  return (uint64_t)x;
}

/* The conversions modelled: float to float (narrowing .rn, widening exact,
** same type .rni/.rzi/.rmi/.rpi), float to int (.rni/.rzi/.rmi/.rpi), int to
** float (.rn), int to int (no rounding). */
static bool cvt_known(const pxi *i) {
  int dt = i->t, st = i->t2;
  if (dt == T_PRED || st == T_PRED) return false;
  if (isfloat(dt) && isfloat(st)) {
    if (dt == st) return i->rnd >= R_RNI;
    return width(dt) < width(st) ? i->rnd == R_RN : i->rnd == R_NONE;
  }
  if (isfloat(st)) return i->rnd >= R_RNI;
  if (isfloat(dt)) return i->rnd == R_RN;
  return i->rnd == R_NONE && width(dt) >= 32 && width(st) >= 32;
}

static uint64_t cvt(const pxi *i, uint64_t a) {
  int dt = i->t, st = i->t2;
  if (isfloat(dt) && isfloat(st)) {
    double x = getf(st, a);
    if (dt == st) x = i->rnd == R_RNI ? nearbyint(x) : i->rnd == R_RZI ? trunc(x) : i->rnd == R_RMI ? floor(x) : ceil(x);
    return putf(dt, x);
  }
  if (isfloat(st)) return f2i(dt, i->rnd, getf(st, a));
  if (isfloat(dt)) return putf(dt, issigned(st) ? (double)sval(st, a) : (double)trunc_bits(st, a));
  return trunc_bits(dt, issigned(st) ? (uint64_t)sval(st, a) : trunc_bits(st, a));
}

/* -- Running ------------------------------------------------------------------------------------ */

static uint64_t rd(const pxe_prog *p, const pxo *o) {
  return o->imm ? o->val : p->reg[PR_CLASS(o->reg)][o->reg & 0xffffffu];
}

static uint64_t shift(int op, int t, uint64_t a, uint64_t amt) {
  int w = width(t);
  amt = (uint32_t)amt;
  if (op == OP_SHL) return amt >= (uint64_t)w ? 0 : trunc_bits(t, a << amt);
  if (t == T_S32 || t == T_S64) {
    int64_t s = sval(t, a);
    return trunc_bits(t, (uint64_t)(amt >= (uint64_t)w ? (s < 0 ? -1 : 0) : s >> amt));
  }
  return amt >= (uint64_t)w ? 0 : trunc_bits(t, a) >> amt;
}

static uint64_t fop(const pxi *i, uint64_t a, uint64_t b, uint64_t c) {
  int t = i->t;
  double x = getf(t, a), y = getf(t, b), z = getf(t, c);
  switch (i->op) {
  case OP_ADD: return putf(t, x + y);
  case OP_SUB: return putf(t, x - y);
  case OP_MUL: return putf(t, x * y);
  case OP_DIV: return putf(t, x / y);
  case OP_RCP: return putf(t, 1.0 / x);
  case OP_SQRT: return putf(t, sqrt(x));
  case OP_FMA: return t == T_F32 ? bitsf32(fmaf((float)x, (float)y, (float)z)) : putf(t, fma(x, y, z));
  case OP_NEG: return putf(t, -x);
  case OP_ABS: return putf(t, fabs(x));
  case OP_MIN: return putf(t, i->nan && (isnan(x) || isnan(y)) ? NAN : fmin(x, y));
  case OP_MAX: return putf(t, i->nan && (isnan(x) || isnan(y)) ? NAN : fmax(x, y));
  case OP_COPYSIGN: return putf(t, copysign(y, x));
  case OP_EX2: return i->ftz ? putf(t, ftz32((float)exp2(ftz32(x)))) : putf(t, exp2(x));
  default: return i->ftz ? putf(t, ftz32((float)log2(ftz32(x)))) : putf(t, log2(x));   /* OP_LG2 */
  }
}

static uint64_t iop(const pxi *i, uint64_t a, uint64_t b) {
  int t = i->t;
  switch (i->op) {
  case OP_ADD: return trunc_bits(t, a + b);
  case OP_SUB: return trunc_bits(t, a - b);
  case OP_MUL:
    if (i->wide) return issigned(t) ? (uint64_t)(sval(t, a) * sval(t, b)) : trunc_bits(t, a) * trunc_bits(t, b);
    if (i->hi) {
      if (width(t) == 64)
        return issigned(t) ? (uint64_t)(((__int128)(int64_t)a * (int64_t)b) >> 64)
                           : (uint64_t)(((unsigned __int128)a * b) >> 64);
      return trunc_bits(t, (uint64_t)((issigned(t) ? sval(t, a) * sval(t, b) : (int64_t)(trunc_bits(t, a) * trunc_bits(t, b))) >> 32));
    }
    return trunc_bits(t, a * b);
  case OP_NEG: return trunc_bits(t, 0 - a);
  case OP_ABS: { int64_t s = sval(t, a); return trunc_bits(t, (uint64_t)(s < 0 ? -s : s)); }
  case OP_MIN: case OP_MAX: {
    bool lt = icompare(C_LT, t, a, b);
    return trunc_bits(t, (i->op == OP_MIN) == lt ? a : b);
  }
  case OP_AND: return a & b;
  case OP_OR: return a | b;
  case OP_XOR: return a ^ b;
  case OP_NOT: return t == T_PRED ? !a : trunc_bits(t, ~a);
  case OP_SHL: case OP_SHR: return shift(i->op, t, a, b);
  case OP_CLZ: {
    int w = width(t), n = 0;
    for (int k = w - 1; k >= 0 && !((a >> k) & 1); k--) n++;
    return (uint64_t)n;
  }
  default: return 0;
  }
}

void pxe_run(pxe_prog *p) {
  for (size_t k = 0; k < p->n; k++) {
    const pxi *i = &p->ins[k];
    uint64_t a = rd(p, &i->o[1]), b = i->n > 2 ? rd(p, &i->o[2]) : 0, c = i->n > 3 ? rd(p, &i->o[3]) : 0, d = 0;
    switch (i->op) {
    case OP_MOV: d = trunc_bits(i->t, a); break;
    case OP_SELP: d = c ? a : b; break;
    case OP_CVT: d = cvt(i, a); break;
    case OP_TESTP: d = isnan(getf(i->t, a)); break;
    case OP_SETP:
      d = isfloat(i->t) ? compare(i->cmp, getf(i->t, a), getf(i->t, b)) : icompare(i->cmp, i->t, a, b);
      if (i->bop == OP_AND) d = d && c;
      else if (i->bop == OP_OR) d = d || c;
      else if (i->bop == OP_XOR) d = d != (c != 0);
      break;
    case OP_SHF: {   /* shf.l.wrap.b32 d, a, b, c: the high word of (b:a) << (c & 31) */
      uint64_t wide = (trunc_bits(T_B32, b) << 32) | trunc_bits(T_B32, a);
      d = trunc_bits(T_B32, (wide << (c & 31)) >> 32);
      break;
    }
    default:
      d = isfloat(i->t) && i->op != OP_AND && i->op != OP_OR && i->op != OP_XOR && i->op != OP_NOT ? fop(i, a, b, c)
                                                                                                  : iop(i, a, b);
    }
    int cls = PR_CLASS(i->o[0].reg);   /* registers hold their class's width */
    static const int bits[PR__COUNT] = { 1, 16, 32, 32, 64, 64 };
    if (cls == PR_P) d = d != 0;
    else if (bits[cls] < 64) d &= (UINT64_C(1) << bits[cls]) - 1;
    p->reg[cls][i->o[0].reg & 0xffffffu] = d;
  }
}
