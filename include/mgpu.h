/*
** mgpu.h -- the public C API of the mgpu engine.
**
** Everything a Lua script can do goes through these functions: the Lua 5.4
** binding, the LuaJIT FFI module and the `mgpu` command are all clients of
** this header and nothing else.
**
** Rules (see DESIGN.md): opaque handles, every call returns an mgpu_status
** (0 = MGPU_OK, negative = error) and the message is read with mgpu_errmsg();
** fixed-width types; option structs passed by pointer; one single-argument
** release function per handle.  The block between MGPU_FFI_BEGIN and
** MGPU_FFI_END is plain C99 with no macros, so the LuaJIT cdef is generated
** from it verbatim.
**
** Threads: a context and everything created from it may be used by one
** thread at a time (any thread, taking turns); a second thread entering a
** context that is in use gets MGPU_ERR_THREAD.  The retain and release
** calls do not check: they must not overlap other calls on the same
** context.  Separate contexts may be used concurrently, DLPack exchanges
** between them included, and so may the calls that take no context
** (versions, dtypes, mgpu_interrupt, mgpu_kernel_cache_dir, worlds).
** mgpu_errmsg(ctx) is the context's last error; mgpu_errmsg(NULL) this
** thread's last failed mgpu_ctx_create.
*/
#ifndef MGPU_H
#define MGPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* MGPU_FFI_BEGIN */
typedef struct mgpu_ctx mgpu_ctx;          /* engine context: device, caches */
typedef struct mgpu_buffer mgpu_buffer;    /* device (or interpreter) memory */
typedef struct mgpu_builder mgpu_builder;  /* a kernel being traced */
typedef struct mgpu_kernel mgpu_kernel;    /* a finished, launchable kernel */
typedef struct mgpu_host mgpu_host;        /* f64 array in host memory, for references and checks */

typedef int32_t mgpu_status;
enum mgpu_status_code {
  MGPU_OK = 0,
  MGPU_ERR_ARG = -1,        /* invalid argument: handle, shape, dtype, ... */
  MGPU_ERR_NOMEM = -2,      /* host or device allocation failed */
  MGPU_ERR_NO_DEVICE = -3,  /* no CUDA driver or GPU */
  MGPU_ERR_DRIVER = -4,     /* a CUDA driver call failed */
  MGPU_ERR_COMPILE = -5,    /* verification, layout, SMEM or PTX failure */
  MGPU_ERR_LAUNCH = -6,     /* launch rejected or kernel faulted */
  MGPU_ERR_RUNTIME = -7,    /* interpreter fault: out of bounds, deadlock */
  MGPU_ERR_SCRIPT = -8,     /* a Lua script raised an error */
  MGPU_ERR_ABI = -9,        /* caller built against another ABI version */
  MGPU_ERR_STATE = -10,     /* call not valid in the object's state */
  MGPU_ERR_THREAD = -11,    /* context in use by another thread */
  MGPU_ERR_LOST = -12       /* the GPU context is lost (a kernel faulted or timed out): mgpu_ctx_recover */
};

/* Element types.  ORDER DTYPE (src/core/dtype.h). */
typedef enum mgpu_dtype {
  MGPU_PRED = 0, MGPU_I8, MGPU_I16, MGPU_I32, MGPU_I64,
  MGPU_U8, MGPU_U16, MGPU_U32, MGPU_U64,
  MGPU_F16, MGPU_BF16, MGPU_F32, MGPU_F64, MGPU_F8E4M3, MGPU_F8E5M2,
  MGPU_DTYPE_COUNT
} mgpu_dtype;

/* How kernels run. */
typedef enum mgpu_mode {
  MGPU_MODE_AUTO = 0,         /* GPU when a driver and device exist, else interpret */
  MGPU_MODE_GPU = 1,          /* GPU or fail */
  MGPU_MODE_INTERPRET = 2,    /* always the CPU interpreter */
  MGPU_MODE_COMPILE_ONLY = 3  /* trace and emit PTX, never execute */
} mgpu_mode;

/* Allocator hook with lua_Alloc's contract: nsize == 0 frees and returns
** NULL; otherwise behaves like realloc(ptr, nsize) and returns NULL on
** failure.  When ptr is not NULL, osize is its size; for a new block osize
** is 0, or a Lua type tag for the script layer's Lua state. */
typedef void *(*mgpu_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

typedef struct mgpu_ctx_options {
  int32_t mode;            /* mgpu_mode */
  int32_t device;          /* CUDA device ordinal */
  mgpu_alloc_fn alloc;     /* NULL: the C library allocator */
  void *alloc_ud;
} mgpu_ctx_options;

typedef struct mgpu_device_info {
  int32_t mode;            /* effective mgpu_mode: GPU, INTERPRET or COMPILE_ONLY */
  int32_t device;          /* CUDA device ordinal */
  int32_t sm_count;        /* 132 (an H100 SXM) when interpreting or compiling without a GPU */
  int32_t cc_major;
  int32_t cc_minor;
  int32_t smem_per_block;  /* opt-in dynamic SMEM limit in bytes (232448 when compiling without a device) */
  int32_t driver_version;  /* e.g. 13000; 0 without a driver */
  int32_t l2_bytes;
  int32_t clock_khz;
  int32_t target;          /* the default mgpu_target: MGPU_TARGET (sm_90a or sm_100a), else the device's
                              architecture, else sm_90a */
  int64_t global_mem;      /* bytes */
  char name[128];          /* device name, or "" */
  char reason[256];        /* why there is no GPU, when mode is INTERPRET */
} mgpu_device_info;

/* Code-generation targets (mgpu_kernel_options.target, mgpu_device_info.target). */
typedef enum mgpu_target {
  MGPU_TARGET_DEFAULT = 0,    /* the context's default */
  MGPU_TARGET_SM90A = 90,     /* Hopper: wgmma */
  MGPU_TARGET_SM100A = 100    /* Blackwell: tcgen05, tensor memory, cluster launch control */
} mgpu_target;

/* Kinds of traced values. */
typedef enum mgpu_value_kind {
  MGPU_VALUE_SCALAR = 0,   /* one value per warpgroup */
  MGPU_VALUE_ARRAY = 1,    /* a register array held by a warpgroup */
  MGPU_VALUE_REF = 2       /* a reference to memory */
} mgpu_value_kind;

typedef enum mgpu_space {
  MGPU_SPACE_NONE = 0, MGPU_SPACE_GMEM = 1, MGPU_SPACE_SMEM = 2,
  MGPU_SPACE_REGS = 3,     /* a wgmma accumulator (register-resident ref) */
  MGPU_SPACE_BARRIER = 4,  /* mbarriers in SMEM (u64 elements) */
  MGPU_SPACE_TMEM = 5      /* Blackwell tensor memory: 128 rows (lanes) of 32-bit columns per block */
} mgpu_space;

typedef enum mgpu_param_role {
  MGPU_PARAM_INPUT = 0,    /* an array the kernel reads (a GMEM ref) */
  MGPU_PARAM_OUTPUT = 1,   /* an array the kernel writes */
  MGPU_PARAM_SCALAR = 2    /* a number passed by value (rank 0, any dtype but pred and f8) */
} mgpu_param_role;

typedef struct mgpu_value_info {
  int32_t kind;            /* mgpu_value_kind */
  int32_t dtype;           /* mgpu_dtype */
  int32_t space;           /* mgpu_space (refs) */
  int32_t rank;
  int64_t shape[8];
} mgpu_value_info;

typedef struct mgpu_kernel_options {
  const char *name;        /* kernel name: letters, digits, '_' */
  int32_t grid_rank;       /* 0..8: past 3, the leading axes fold into CUDA's z */
  int32_t grid[8];
  int32_t num_threads;     /* warpgroups per block, 1..16 */
  int32_t approx_math;     /* allow approximate exp, log, division */
  int32_t interpret;       /* run in the interpreter even when a GPU exists */
  int32_t lowering_semantics;       /* 0 Warpgroup (layouts inferred), 1 Lane (chosen eagerly) */
  int32_t unsafe_no_auto_barriers;  /* no warpgroup barriers around SMEM accesses */
  int32_t reduction_scratch_bytes;  /* SMEM for cross-warp reductions; 0 = as needed */
  int32_t cluster_rank;    /* 0..3: thread-block cluster dims (blocks along each grid axis) */
  int32_t cluster[3];
  int32_t disable_bounds_checks;    /* interpreter: an SMEM index past its dimension is read or written
                                       where the address lands, an error only outside the allocation */
  int32_t target;          /* mgpu_target: code generation for sm_90a or sm_100a (0: the context's default) */
} mgpu_kernel_options;

/* Operands and attributes of one traced op (see mgpu_builder_op). */
typedef struct mgpu_op_args {
  const int32_t *operands;
  int32_t noperands;
  const int64_t *ints;     /* integer attributes: dtype, axis, shape, ... */
  int32_t nints;
  double number;           /* numeric attribute (constants) */
  const char *text;        /* text attribute, or NULL */
} mgpu_op_args;

typedef struct mgpu_kernel_resources {
  int32_t registers;       /* per thread, from the driver (0 if not compiled for a GPU) */
  int32_t local_bytes;     /* spill/stack bytes per thread */
  int32_t smem_bytes;      /* dynamic SMEM requested at launch */
  int32_t threads;         /* CUDA threads per block */
  double compile_ms;       /* trace-finish to PTX text */
  double load_ms;          /* driver JIT / module load */
} mgpu_kernel_resources;

typedef enum mgpu_text_kind {
  MGPU_TEXT_IR = 0,        /* canonical IR text (the cache key) */
  MGPU_TEXT_PTX = 1        /* PTX for the kernel's target */
} mgpu_text_kind;

/* One launch argument: a buffer for an array parameter, a number for a
** scalar parameter: `scalar` (an integer parameter's must be an integer in
** its range), or for an integer parameter `integer` when has_integer is set
** (all 64 bits exact; u64 as its bit pattern).  Instead of a buffer (NULL),
** an array parameter may take the address of memory another framework owns
** (device memory on a GPU, host memory when interpreting), as
** mgpu_buffer_wrap would take it, for this launch alone: the caller vouches
** that it holds the parameter's bytes; it must be 16-byte aligned. */
typedef struct mgpu_arg {
  mgpu_buffer *buffer;
  double scalar;
  uint64_t address;
  int64_t integer;
  int32_t has_integer;
} mgpu_arg;

typedef struct mgpu_launch_args {
  const mgpu_arg *args;    /* one per parameter, in order (inputs and scalars as traced, then outputs) */
  int32_t nargs;
  uint64_t stream;         /* CUstream, 0 = the default stream */
} mgpu_launch_args;

typedef struct mgpu_param_info {
  int32_t role;            /* mgpu_param_role */
  mgpu_value_info value;   /* kind REF (arrays) or SCALAR, dtype, shape */
} mgpu_param_info;

typedef enum mgpu_fill_kind {
  MGPU_FILL_VALUE = 0,     /* every element = a */
  MGPU_FILL_IOTA = 1,      /* element i = a + i*b */
  MGPU_FILL_UNIFORM = 2,   /* uniform in [a, b) */
  MGPU_FILL_NORMAL = 3     /* mean a, standard deviation b */
} mgpu_fill_kind;

typedef struct mgpu_fill {
  int32_t kind;            /* mgpu_fill_kind */
  int32_t dtype;
  uint64_t count;          /* elements */
  double a;
  double b;
  uint64_t seed;
} mgpu_fill;

/* Host array operations (mgpu_host_map / mgpu_host_reduce). */
typedef enum mgpu_host_op {
  MGPU_HOST_ADD = 0, MGPU_HOST_SUB, MGPU_HOST_MUL, MGPU_HOST_DIV, MGPU_HOST_MAX, MGPU_HOST_MIN,
  MGPU_HOST_NEG, MGPU_HOST_ABS, MGPU_HOST_EXP, MGPU_HOST_LOG, MGPU_HOST_SQRT, MGPU_HOST_TANH,
  MGPU_HOST_ROUND,          /* round to the dtype given as the scalar (e.g. bf16 inputs) */
  MGPU_HOST_SUM, MGPU_HOST_MEAN  /* reductions (with MAX and MIN) */
} mgpu_host_op;

int32_t mgpu_abi_version(void);
const char *mgpu_version(void);
/* A hash of the engine's sources at build time (16 hex digits): builds with the
** same id lower every kernel alike, while the version may stay the same across
** changes to the lowering.  The kernel cache and mgpu.autotune key on it. */
const char *mgpu_engine_id(void);
/* Ask a kernel running in the CPU interpreter to stop (on != 0), or withdraw
** the request (0).  Async-signal-safe: a SIGINT handler may call it.  The
** launch in progress (in any context) stops at its next op and returns
** MGPU_ERR_RUNTIME "interrupted" with everything it held freed, which
** consumes the request; a request made while no launch runs stops the next
** one.  GPU launches are not affected. */
void mgpu_interrupt(int32_t on);
const char *mgpu_dtype_name(int32_t dtype);
int32_t mgpu_dtype_size(int32_t dtype);
int32_t mgpu_dtype_from_name(const char *name);

mgpu_status mgpu_ctx_create(const mgpu_ctx_options *opts, mgpu_ctx **out);  /* on failure mgpu_errmsg(NULL) says why */
void mgpu_ctx_release(mgpu_ctx *ctx);
void mgpu_ctx_retain(mgpu_ctx *ctx);           /* another reference; release each one */
/* The allocator the context uses (the one given at creation, or the C library's). */
mgpu_status mgpu_ctx_allocator(mgpu_ctx *ctx, mgpu_alloc_fn *fn, void **ud);
/* Record an error on the context for mgpu_errmsg (MGPU_OK clears it); returns
** status.  For libraries layered on mgpu, such as the script layer. */
mgpu_status mgpu_ctx_fail(mgpu_ctx *ctx, mgpu_status status, const char *msg);
const char *mgpu_errmsg(const mgpu_ctx *ctx);
mgpu_status mgpu_device_query(mgpu_ctx *ctx, mgpu_device_info *out);
mgpu_status mgpu_synchronize(mgpu_ctx *ctx);
/* Device memory of released buffers goes back to the driver's stream-ordered
** pool (when the device has one and MGPU_POOL is not "off"), in order on the
** legacy default stream, so the next allocation reuses it without the
** device-wide wait of cuMemFree.  Work on a non-blocking stream of your own
** must be synchronized before the buffers it uses are released.  This waits
** for all work and hands the pool's idle memory back to the device (as for
** other libraries in the process); a no-op without a GPU or a pool. */
mgpu_status mgpu_empty_cache(mgpu_ctx *ctx);
/* The directory of the on-disk kernel cache, chosen from MGPU_CACHE,
** MGPU_CACHE_DIR, XDG_CACHE_HOME, HOME and MGPU_CACHE_MAX_MB (a setting that
** does not parse is said once on stderr), or NULL when the cache is off.
** Libraries that keep results beside the kernels (the Lua autotuner) ask
** here, so that they and the kernel cache agree. */
const char *mgpu_kernel_cache_dir(void);
/* GPU faults.  A kernel that faults (illegal address, trap, ...) makes the
** CUDA context unusable: the call that sees it returns MGPU_ERR_LOST naming
** the kernel, and every later call that needs the GPU returns MGPU_ERR_LOST
** until mgpu_ctx_recover resets the device's primary context (every buffer
** of the context is gone: using one is MGPU_ERR_STATE; releasing it is fine;
** kernels load again on their next launch).  mgpu_ctx_recover does nothing
** on a context that is not lost.  The watchdog: with a timeout (ms > 0;
** MGPU_TIMEOUT_MS sets it when a context is created; 0 = none), every wait
** for the GPU polls, and a kernel still running `ms` after its launch loses
** the context (a runaway kernel cannot be stopped otherwise); interpreted
** launches stop with MGPU_ERR_RUNTIME after `ms` of running. */
mgpu_status mgpu_ctx_set_timeout(mgpu_ctx *ctx, int64_t ms);
int32_t mgpu_ctx_lost(const mgpu_ctx *ctx);
mgpu_status mgpu_ctx_recover(mgpu_ctx *ctx);
mgpu_status mgpu_timer_start(mgpu_ctx *ctx);
mgpu_status mgpu_timer_stop(mgpu_ctx *ctx, double *ms);
/* cuBLAS, the reference of benchmarks: c (m x n) = a (m x k) @ b (k x n), row-major, all
** three of dtype MGPU_BF16 or MGPU_F16, f32 accumulation, on stream (0: the default stream,
** which launches and the timer use).  cublasLt is loaded with dlopen on first use (the
** environment variable MGPU_CUBLASLT may name the library file): MGPU_ERR_NO_DEVICE when
** the context has no GPU, MGPU_ERR_STATE when the library is missing or unusable. */
mgpu_status mgpu_blas_matmul(mgpu_ctx *ctx, int32_t dtype, int64_t m, int64_t n, int64_t k,
                             mgpu_buffer *a, mgpu_buffer *b, mgpu_buffer *c, uint64_t stream);
/* cuBLAS's FP8 matmul, the reference of FP8 benchmarks: c (m x n, bf16) = a_scale * b_scale *
** (a @ b^T), row-major a (m x k) of a_dtype and b (n x k) of b_dtype (MGPU_F8E4M3 or MGPU_F8E5M2;
** cublasLt has no e5m2 x e5m2 kernels), a_scale and b_scale buffers of one f32 each (cublasLt's
** scale pointers), f32 accumulation in cublasLt's fast-accumulation mode (never promoted to a
** separate f32 sum, as a kernel accumulating all of K in wgmma does).  Otherwise as above. */
mgpu_status mgpu_blas_matmul_f8(mgpu_ctx *ctx, int32_t a_dtype, int32_t b_dtype, int64_t m, int64_t n, int64_t k,
                                mgpu_buffer *a, mgpu_buffer *b, mgpu_buffer *c, mgpu_buffer *a_scale,
                                mgpu_buffer *b_scale, uint64_t stream);

mgpu_status mgpu_buffer_alloc(mgpu_ctx *ctx, uint64_t nbytes, mgpu_buffer **out);
mgpu_status mgpu_buffer_wrap(mgpu_ctx *ctx, uint64_t address, uint64_t nbytes, mgpu_buffer **out);
void mgpu_buffer_release(mgpu_buffer *buf);
uint64_t mgpu_buffer_size(const mgpu_buffer *buf);
uint64_t mgpu_buffer_address(const mgpu_buffer *buf);
mgpu_status mgpu_buffer_write(mgpu_buffer *buf, uint64_t offset, const void *src, uint64_t nbytes);
mgpu_status mgpu_buffer_read(mgpu_buffer *buf, uint64_t offset, void *dst, uint64_t nbytes);
mgpu_status mgpu_buffer_copy(mgpu_buffer *dst, uint64_t dst_offset, mgpu_buffer *src, uint64_t src_offset, uint64_t nbytes);
mgpu_status mgpu_buffer_fill(mgpu_buffer *buf, const mgpu_fill *fill);
mgpu_status mgpu_buffer_get_f64(mgpu_buffer *buf, int32_t dtype, uint64_t first, uint64_t count, double *out);
mgpu_status mgpu_buffer_set_f64(mgpu_buffer *buf, int32_t dtype, uint64_t first, uint64_t count, const double *in);
/* Elements of an integer dtype (or pred) as exact 64-bit integers: a double
** holds integers exactly only up to 2^53.  u64 elements travel as their bit
** pattern (from 2^63 up they read as negative).  A value set that does not
** fit the dtype is an error naming its element and value, and nothing is
** written. */
mgpu_status mgpu_buffer_get_i64(mgpu_buffer *buf, int32_t dtype, uint64_t first, uint64_t count, int64_t *out);
mgpu_status mgpu_buffer_set_i64(mgpu_buffer *buf, int32_t dtype, uint64_t first, uint64_t count, const int64_t *in);
void mgpu_buffer_retain(mgpu_buffer *buf);     /* another reference; release each one */

/* DLPack (dlpack.h, DLManagedTensor): share memory with other frameworks
** without copies.  Export gives a DLManagedTensor* viewing buf as a
** C-contiguous dtype array of the given shape (pred goes out as uint8; f8
** has no DLPack type); buf stays alive until the tensor's deleter runs.
** Import takes a DLManagedTensor* on the context's device (CUDA on a GPU,
** CPU when interpreting), C-contiguous, one lane, and returns a buffer over
** its memory plus its dtype and shape (kind REF); releasing the buffer
** calls the tensor's deleter.  Free runs the deleter of a tensor no
** consumer took (an export kept back would hold its buffer forever); a
** tensor an mgpu import holds is refused (releasing that buffer runs it). */
mgpu_status mgpu_dlpack_export(mgpu_buffer *buf, int32_t dtype, const int64_t *shape, int32_t rank, void **out_tensor);
mgpu_status mgpu_dlpack_import(mgpu_ctx *ctx, void *tensor, mgpu_buffer **out, mgpu_value_info *info);
mgpu_status mgpu_dlpack_free(mgpu_ctx *ctx, void *tensor);

mgpu_status mgpu_builder_create(mgpu_ctx *ctx, const mgpu_kernel_options *opts, mgpu_builder **out);
void mgpu_builder_release(mgpu_builder *b);
mgpu_status mgpu_builder_set_loc(mgpu_builder *b, const char *loc);
mgpu_status mgpu_builder_param(mgpu_builder *b, int32_t role, int32_t dtype, const int64_t *shape, int32_t rank, int32_t *out_value);
mgpu_status mgpu_builder_op(mgpu_builder *b, const char *op, const mgpu_op_args *args, int32_t *results, int32_t max_results, int32_t *nresults);
mgpu_status mgpu_builder_value(mgpu_builder *b, int32_t value, mgpu_value_info *out);
mgpu_status mgpu_builder_finish(mgpu_builder *b, mgpu_kernel **out);

mgpu_status mgpu_host_create(mgpu_ctx *ctx, const int64_t *shape, int32_t rank, mgpu_host **out);
void mgpu_host_release(mgpu_host *h);
double *mgpu_host_data(mgpu_host *h);
int32_t mgpu_host_rank(const mgpu_host *h);
int64_t mgpu_host_dim(const mgpu_host *h, int32_t axis);
/* Convert all of h's elements from / to a buffer of dtype elements. */
mgpu_status mgpu_host_download(mgpu_host *h, mgpu_buffer *src, int32_t dtype);
mgpu_status mgpu_host_upload(const mgpu_host *h, mgpu_buffer *dst, int32_t dtype);
/* out = op(a, b) elementwise with NumPy broadcasting; b == NULL uses the scalar s
** (unary ops ignore b and s). */
mgpu_status mgpu_host_map(int32_t op, const mgpu_host *a, const mgpu_host *b, double s, mgpu_host **out);
/* Reduce (SUM, MEAN, MAX, MIN) over one axis (negative counts from the end). */
mgpu_status mgpu_host_reduce(int32_t op, const mgpu_host *a, int32_t axis, int32_t keepdims, mgpu_host **out);
/* Rows [start, start + size) along axis 0. */
mgpu_status mgpu_host_slice(const mgpu_host *a, int64_t start, int64_t size, mgpu_host **out);
/* The transpose of a 2-D array. */
mgpu_status mgpu_host_transpose(const mgpu_host *a, mgpu_host **out);
/* 2-D matrix product. */
mgpu_status mgpu_host_matmul(const mgpu_host *a, const mgpu_host *b, mgpu_host **out);
/* ||a - ref|| / ||ref|| (2-norms; NaN if either holds a NaN or shapes differ). */
mgpu_status mgpu_host_relerr(const mgpu_host *a, const mgpu_host *ref, double *out);

void mgpu_kernel_release(mgpu_kernel *k);
void mgpu_kernel_retain(mgpu_kernel *k);       /* another reference; release each one */
int32_t mgpu_kernel_param_count(const mgpu_kernel *k);
/* The register layout inference chose for traced value `value` (an array),
** as the Lua API names it (WGMMA, WG_STRIDED(8), TILED{...}, WGMMA:reduce(1))
** into buf (empty for non-arrays). */
mgpu_status mgpu_kernel_layout(mgpu_kernel *k, int32_t value, char *buf, int32_t n);
mgpu_status mgpu_kernel_param(mgpu_kernel *k, int32_t index, mgpu_param_info *out);
mgpu_status mgpu_kernel_compile(mgpu_kernel *k);
mgpu_status mgpu_kernel_text(mgpu_kernel *k, int32_t kind, const char **out);
mgpu_status mgpu_kernel_resources_get(mgpu_kernel *k, mgpu_kernel_resources *out);
/* Extra driver JIT (ptxas) options for loading k's PTX on a GPU, before its
** first launch: max_registers (--maxrregcount, 16..255; 0 = the JIT's
** choice; also written into the PTX as .maxnreg unless the kernel uses
** setmaxnreg) and opt_level (0..4; -1 = the default).  The interpreter
** ignores both. */
mgpu_status mgpu_kernel_set_jit_options(mgpu_kernel *k, int32_t max_registers, int32_t opt_level);
/* Load ptx instead of the PTX mgpu writes for k, on a GPU, before its first
** launch: for experiments with hand-edited PTX.  Its entry, parameters and
** tensor-map arguments must stay those of mgpu_kernel_text(k, MGPU_TEXT_PTX);
** nothing checks that.  k bypasses the kernel cache; NULL goes back to the
** written PTX.  The interpreter ignores it. */
mgpu_status mgpu_kernel_set_ptx(mgpu_kernel *k, const char *ptx);
mgpu_status mgpu_kernel_launch(mgpu_kernel *k, const mgpu_launch_args *args);

/* Several devices.  A context is one device of a job of `count` devices:
** either a process of an NVSHMEM job (one process per GPU, mgpu_dist_init)
** or a simulated device of a world in this process (mgpu_world_join: one
** thread per device, kernels run in the interpreter).  Symmetric buffers
** exist at the same offset on every device, so kernels reach another
** device's copy through the launch's peer table (mgpu_dist_table: i64
** [this device, count, then per device the byte offset from a local
** symmetric address to the same one there, then that to the multicast
** address, 0: mgpu never creates multicast objects]).  Symmetric allocations,
** barriers and (in a world) launches of kernels that touch other devices
** are collective: every device makes the same calls in the same order. */
typedef struct mgpu_world mgpu_world;
mgpu_status mgpu_world_create(int32_t count, mgpu_world **out);
void mgpu_world_release(mgpu_world *w);
/* ctx (an interpreting context with no buffers yet) becomes device `rank`
** of w.  Its kernels that use other devices then launch together with the
** same launch of every other device. */
mgpu_status mgpu_world_join(mgpu_ctx *ctx, mgpu_world *w, int32_t rank);
/* ctx's device takes part in nothing more (its script ended): the others'
** collective calls fail instead of waiting for it.  Released contexts leave. */
mgpu_status mgpu_world_leave(mgpu_ctx *ctx);
/* NVSHMEM (libnvshmem_host.so.3, loaded with dlopen; MGPU_NVSHMEM may name
** the file).  Rank 0 makes a unique id (128 bytes) and hands it to every
** rank, which joins with it on its GPU context.  NVLink multicast is never
** used. */
mgpu_status mgpu_dist_uniqueid(uint8_t *out, int32_t nbytes);
mgpu_status mgpu_dist_init(mgpu_ctx *ctx, int32_t rank, int32_t count, const uint8_t *uid, int32_t nbytes);
/* Hand rank 0's unique id to every rank of a job a launcher started, through
** `rendezvous`: "tcp://host:port", a PyTorch c10d TCP store (torchrun's is at
** MASTER_ADDR:MASTER_PORT), or "file:/path", a file every rank reads.  Rank 0
** publishes uid under `key` (which names the job); the others wait for it up
** to timeout_ms and receive it in uid.  ctx (of any mode) takes the message
** of a failure, which names the rendezvous. */
mgpu_status mgpu_dist_rendezvous(mgpu_ctx *ctx, const char *rendezvous, const char *key, int32_t rank, int32_t count,
                                 int32_t timeout_ms, uint8_t *uid, int32_t nbytes);
/* This device and the device count (0 and 1 for a context of no job). */
mgpu_status mgpu_dist_info(mgpu_ctx *ctx, int32_t *rank, int32_t *count);
/* Wait for every device's earlier work and for every device to get here. */
mgpu_status mgpu_dist_barrier(mgpu_ctx *ctx);
/* A zeroed buffer of the symmetric heap (collective).  Symmetric memory is
** returned to the heap only when the job ends: frees would be collective. */
mgpu_status mgpu_symmetric_alloc(mgpu_ctx *ctx, uint64_t nbytes, mgpu_buffer **out);
/* The same, with what the array is for messages ("f32[4] at a.lua:7", may be
** NULL).  Simulated devices check at every collective call that each has
** made the same symmetric arrays (sizes, in order), naming them by it: on
** GPUs a device's extra or missing array moves the others' places. */
mgpu_status mgpu_symmetric_alloc_named(mgpu_ctx *ctx, uint64_t nbytes, const char *name, mgpu_buffer **out);
/* Which symmetric allocation of its context buf is (0, 1, ...), or -1. */
int32_t mgpu_buffer_symmetric(const mgpu_buffer *buf);
/* The peer table kernels take (one buffer per context, owned by it). */
mgpu_status mgpu_dist_table(mgpu_ctx *ctx, mgpu_buffer **out);
/* MGPU_FFI_END */

typedef struct mgpu_script mgpu_script;    /* an engine-owned Lua 5.4 state running mgpu scripts */
/* Scripts (in libmgpu_script, which links Lua 5.4; not part of the FFI
** block: libmgpu itself contains no Lua, so it loads into lua5.4 and LuaJIT
** processes alike).  A script is a Lua 5.4 state with `require "mgpu"` bound to ctx.  Scripts
** define kernels with mgpu.kernel; C fetches one by the name of the
** variable holding it (a global, or a dotted path such as "lib.add"),
** traced for arguments of the given kinds, dtypes and shapes (kind REF for
** arrays, SCALAR for numbers).  The variable may also hold a function of
** those arguments (abstract arrays and mgpu.scalar values) that returns the
** kernel for them, for libraries that build one per shape.  The kernel's
** parameters are the arguments, then its outputs (mgpu_kernel_param gives
** their dtypes and shapes); a kernel whose launches need arrays that only
** its Lua calls provide (profiling, GMEM scratch, semaphores, other
** devices) is refused.  A Lua error returns MGPU_ERR_SCRIPT with its
** message.  One thread at a time per script. */
mgpu_status mgpu_script_create(mgpu_ctx *ctx, mgpu_script **out);
void mgpu_script_release(mgpu_script *s);
mgpu_status mgpu_script_run_file(mgpu_script *s, const char *path, const char *const *args, int32_t nargs);
mgpu_status mgpu_script_run_string(mgpu_script *s, const char *code, const char *chunkname);
mgpu_status mgpu_script_kernel(mgpu_script *s, const char *name, const mgpu_value_info *args, int32_t nargs, mgpu_kernel **out);


#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif

/* The ABI version this header describes; mgpu_abi_version() must match. */
#define MGPU_ABI_VERSION 8

#endif
