/*
** interp.h -- the CPU interpreter: the living definition of every op.
**
** A kernel runs block by block; inside a block each warpgroup is an agent
** with its own program counter, loop stack and values, scheduled
** cooperatively so that agents can wait on one another.  Arrays are logical
** (layouts do not change results).  Float results are rounded to their dtype
** after every op, integers wrap, exactly as the GPU lowering computes them.
*/
#ifndef MGPU_INTERP_H
#define MGPU_INTERP_H

#include "../ir/ir.h"
#include "../layout/xform.h"
#include "../passes/pass.h"

typedef union ival {
  double f;       /* float dtypes */
  int64_t i;      /* integer dtypes and pred (0/1) */
} ival;

/* One kernel argument: host memory of an array parameter, or the value of
** a scalar parameter. */
typedef struct interp_arg {
  void *data;
  uint64_t size;     /* bytes */
  uint64_t scalar;   /* a scalar parameter: the bytes the GPU's parameter holds (narrow integers as 32 bits) */
} interp_arg;

/* Run the kernel over its whole grid with the SMEM plan of ki.  Faults
** (SMEM indices out of range, deadlocks) are reported with the op's
** location.  SMEM is filled with 0xff bytes at the start of every block.
** ndev devices run it together (a multi-device launch): args holds nargs
** arguments per device, device after device; the devices run the same
** grid point at once, so remote refs and semaphores connect them. */
mgpu_status interp_run(const ir_kernel *k, const kinfo *ki, const interp_arg *args, uint32_t nargs, int ndev, diag *d);

/* The most work one interp_run may do -- one unit per op run, per element an
** op produces and per block -- before it stops with a runtime error; 0 (the
** default) means no limit.  Process-wide: harnesses that run untrusted
** kernels (the fuzzers) set it so that every run ends. */
void interp_set_work_limit(int64_t limit);

/* interp_run calls made afterwards on the calling thread stop with a
** runtime error once they have run for ms milliseconds (0: no bound). */
void interp_set_timeout(int64_t ms);

/* Request (true) or withdraw (false) that the running or next interp_run
** stop with "interrupted" at its next op; async-signal-safe.  interp_run
** consumes the request when it stops. */
void interp_interrupt(bool on);

/* interp_ops.c: elementwise evaluation over n elements.  Operand strides
** are 0 (a broadcast scalar) or 1.  approx: the kernel's approx_math
** (exp, exp2, log, log2 then flush f32 subnormals as the GPU does). */
void interp_unary(int code, int dtype, bool approx, const ival *a, ival *out, int64_t n);
void interp_binary(int code, int dtype, const ival *a, int sa, const ival *b, int sb, ival *out, int64_t n);
void interp_compare(int code, int dtype, const ival *a, int sa, const ival *b, int sb, ival *out, int64_t n);
void interp_convert(int code, int from, int to, const ival *a, ival *out, int64_t n);
ival interp_const(int dtype, double x);

#endif
