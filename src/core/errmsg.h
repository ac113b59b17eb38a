/*
** errmsg.h -- every user-facing error: id, status, printf format.
** Included with different ERRDEF definitions (the enum in core.h, the
** message table in diag.c).  Messages name the argument at fault.
*/

/* -- Arguments and handles -- */
ERRDEF(NOMEM,          MGPU_ERR_NOMEM,   "out of memory")
ERRDEF(NOMEM_BUF,      MGPU_ERR_NOMEM,   "out of memory allocating %llu bytes (%s)")
ERRDEF(NULL_ARG,       MGPU_ERR_ARG,     "%s: argument must not be NULL")
ERRDEF(BAD_DTYPE,      MGPU_ERR_ARG,     "%s: unknown dtype %d")
ERRDEF(BAD_DTYPE_NAME, MGPU_ERR_ARG,     "%s: unknown dtype '%s'")
ERRDEF(BAD_ARG,        MGPU_ERR_ARG,     "%s")
ERRDEF(THREAD,         MGPU_ERR_THREAD,  "context is in use by another thread (one thread at a time per context)")
ERRDEF(STATE,          MGPU_ERR_STATE,   "%s")
ERRDEF(BOUNDS,         MGPU_ERR_ARG,     "%s: range [%llu, %llu) is outside the buffer of %llu bytes")
ERRDEF(NOT_INT_DTYPE,  MGPU_ERR_ARG,     "%s: %s is not an integer dtype")
ERRDEF(ELEM_INT_RANGE, MGPU_ERR_ARG,     "%s: element %llu is %lld, out of range (%s)")
ERRDEF(ELEM_MISFIT,    MGPU_ERR_ARG,     "%s: element %llu is %s, %s (%s)")
ERRDEF(FILL_MISFIT,    MGPU_ERR_ARG,     "%s: %s %s is %s (%s)")

/* -- Tracing (builder) -- */
ERRDEF(UNKNOWN_OP,     MGPU_ERR_ARG,     "unknown op '%s'")
ERRDEF(BAD_VALUE,      MGPU_ERR_ARG,     "%s: invalid value id %d")
ERRDEF(VALUE_SCOPE,    MGPU_ERR_COMPILE, "%s: value %%%d was defined inside a loop or branch that has ended (defined at %s)")
ERRDEF(OPERANDS,       MGPU_ERR_ARG,     "%s expects %s operands, got %d")
ERRDEF(OPERAND_KIND,   MGPU_ERR_COMPILE, "%s: operand %d must be %s, got %s")
ERRDEF(SHAPE_MISMATCH, MGPU_ERR_COMPILE, "%s: shapes %s and %s do not match")
ERRDEF(DTYPE_MISMATCH, MGPU_ERR_COMPILE, "%s: dtypes %s and %s do not match (use astype to convert)")
ERRDEF(DTYPE_CLASS,    MGPU_ERR_COMPILE, "%s: not defined for dtype %s")
ERRDEF(BAD_ATTR,       MGPU_ERR_ARG,     "%s: %s")
ERRDEF(BAD_SHAPE,      MGPU_ERR_ARG,     "%s: %s")
ERRDEF(TOO_MANY_IDX,   MGPU_ERR_COMPILE, "%s: too many indices: ref of rank %d indexed with %d")
ERRDEF(INDEX_RANGE,    MGPU_ERR_COMPILE, "%s: index %lld is out of range for dimension %d of size %lld")
ERRDEF(SLICE_RANGE,    MGPU_ERR_COMPILE, "%s: slice size %lld must be at least 1 (dimension %d has size %lld)")
ERRDEF(REGION,         MGPU_ERR_COMPILE, "%s")
ERRDEF(RESULTS,        MGPU_ERR_ARG,     "%s produces %d results but only %d fit in the results array")
ERRDEF(FINISHED,       MGPU_ERR_STATE,   "the kernel has already been finished")
ERRDEF(UNCLOSED,       MGPU_ERR_COMPILE, "%s: loop or branch opened here was never closed")
ERRDEF(TOO_BIG,        MGPU_ERR_COMPILE, "%s: %s")
ERRDEF(TRACE,          MGPU_ERR_COMPILE, "%s")

/* -- Compilation -- */
ERRDEF(VERIFY,         MGPU_ERR_COMPILE, "%s")
ERRDEF(UNSUPPORTED,    MGPU_ERR_COMPILE, "%s: not supported yet: %s")
ERRDEF(PTX,            MGPU_ERR_COMPILE, "%s")

/* -- Driver and launch -- */
ERRDEF(NO_DEVICE,      MGPU_ERR_NO_DEVICE, "no GPU: %s")
ERRDEF(DRIVER,         MGPU_ERR_DRIVER,  "%s failed: %s (CUDA error %d)")
ERRDEF(MODULE,         MGPU_ERR_DRIVER,  "loading kernel '%s' failed: %s (CUDA error %d)\n%s")
ERRDEF(LAUNCH,         MGPU_ERR_LAUNCH,  "%s")
ERRDEF(LAUNCH_ARG,     MGPU_ERR_ARG,     "kernel '%s': %s")
ERRDEF(LOST,           MGPU_ERR_LOST,    "%s; the GPU context is lost with the arrays on it (the REPL makes a fresh one; "
                                         "embedders call mgpu_ctx_recover)")

/* -- Interpreter -- */
ERRDEF(INTERP,         MGPU_ERR_RUNTIME, "%s")
