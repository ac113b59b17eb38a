/*
** ptx_eval.h -- a test-only CPU evaluator for straight-line PTX: the
** instruction sequences the emitter produces for one elementwise function
** (ptx_float_unary / ptx_float_binary), run on registers of the classes of
** src/ptx/ptx.h (pred, b16, b32, f32, b64, f64).  It knows the opcodes
** those sequences use and refuses any other (and any label, branch or
** memory access), so a change in emission fails loudly rather than being
** evaluated wrongly.
**
** Semantics: IEEE round-to-nearest arithmetic in the instruction's type
** (f32 through float, f64 through double, fma fused), PTX's rules where C
** differs (min/max.f32/f64 drop a NaN operand unless .NaN, shifts past the
** width give 0 or the sign, float-to-int cvt saturates and sends NaN to 0).
** ex2.approx and lg2.approx are idealised as exp2/log2 rounded to f32 (the
** hardware is only within about 2 ulp), with .ftz flushing f32 subnormals.
*/
#ifndef MGPU_PTX_EVAL_H
#define MGPU_PTX_EVAL_H

#include <stddef.h>
#include <stdint.h>

typedef struct pxe_prog pxe_prog;

/* Compile instruction lines ("\topc d, a, b;\n" ...); NULL with a message
** naming the line when one cannot be evaluated. */
pxe_prog *pxe_compile(const char *text, char *err, size_t errlen);
void pxe_free(pxe_prog *p);
/* Registers by the emitter's preg numbering; values are raw bits (f32 and
** b32 in the low 32, b16 in the low 16, pred 0 or 1). */
void pxe_set(pxe_prog *p, uint32_t reg, uint64_t bits);
uint64_t pxe_get(const pxe_prog *p, uint32_t reg);
void pxe_run(pxe_prog *p);
/* How many instructions the program has. */
size_t pxe_count(const pxe_prog *p);

#endif
