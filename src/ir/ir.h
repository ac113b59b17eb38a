/*
** ir.h -- the kernel IR: typed SSA values, a flat op array with structured
** regions, and the op table every other module is generated from.
**
** Layout of a kernel: ops are stored in trace order.  An op with regions
** (for, if) is followed directly by its regions' ops: `body[0]` ops for the
** first region, then `body[1]` ops for the second.  Every region ends with a
** `yield`.  The top-level region is the whole op array.  Values are numbered
** from 1 (0 = none); an op's results are consecutive value ids, and so are a
** region op's block arguments (for: the induction variable, then the
** carried values).
*/
#ifndef MGPU_IR_H
#define MGPU_IR_H

#include "../core/core.h"

#define IR_MAXRANK 8
#define IR_MAXRES 64       /* results of one op */

/* -- The op table ---------------------------------------------------------
** Columns: name, class (how operands are checked and results typed, see
** ir_build.c), flags.  ORDER IROP: the enum, names, builder, verifier,
** printer, interpreter and PTX lowering all index by these codes.
**
** flags: P pure (no effects, result depends only on operands)
**        R has regions   T region terminator   M touches memory
*/
#define IR_OPS(_) \
  /* constants and indices */ \
  _(const,        CONST,   P)    /* ints[0]=dtype, number=value -> scalar */ \
  _(program_id,   GRIDIDX, P)    /* ints[0]=axis -> i32 index of this block along the axis */ \
  _(num_programs, GRIDIDX, P)    /* ints[0]=axis -> i32 grid size along the axis */ \
  _(thread_id,    THREADIDX, P)  /* -> i32 warpgroup index inside the block */ \
  _(cluster_idx,  CLUSTERIDX, P) /* ints[0]=axis -> i32 index of this block inside its cluster */ \
  /* elementwise, one operand */ \
  _(neg,   UNARY, P) _(abs,   UNARY, P) _(not,   UNARY, P) \
  _(exp,   UNARY, P) _(exp2,  UNARY, P) _(log,   UNARY, P) _(log2,  UNARY, P) \
  _(sqrt,  UNARY, P) _(rsqrt, UNARY, P) _(tanh,  UNARY, P) \
  _(floor, UNARY, P) _(ceil,  UNARY, P) \
  _(sin,   UNARY, P) _(cos,   UNARY, P) _(erf,   UNARY, P) _(logistic, UNARY, P) \
  _(expm1, UNARY, P) _(log1p, UNARY, P) \
  _(round, UNARY, P)             /* half to even */ \
  _(round_away, UNARY, P)        /* half away from zero */ \
  _(trunc, UNARY, P) _(sign,  UNARY, P) \
  _(clz,   UNARY, P) _(popcount, UNARY, P) /* integers: leading zeros, set bits, within the dtype's width */ \
  /* elementwise, two operands of one dtype (a scalar broadcasts) */ \
  _(add, BINARY, P) _(sub, BINARY, P) _(mul, BINARY, P) _(div, BINARY, P) \
  _(rem, BINARY, P) _(max, BINARY, P) _(min, BINARY, P) /* max/min: NaN if either operand is NaN */ \
  _(pow, BINARY, P)              /* floats: C99 pow special cases */ \
  _(and, BINARY, P) _(or,  BINARY, P) _(xor, BINARY, P) \
  _(shl, BINARY, P) _(shr, BINARY, P) /* shr: arithmetic for signed dtypes, logical for unsigned */ \
  /* comparisons -> pred */ \
  _(lt, COMPARE, P) _(le, COMPARE, P) _(gt, COMPARE, P) \
  _(ge, COMPARE, P) _(eq, COMPARE, P) _(ne, COMPARE, P) \
  _(select,    SELECT,    P)     /* (cond, a, b) -> a where cond else b */ \
  _(astype,    CONVERT,   P)     /* ints[0]=dtype: value conversion (RNE, saturating to int) */ \
  _(bitcast,   CONVERT,   P)     /* ints[0]=dtype of the same width: reinterpret bits */ \
  _(broadcast, BROADCAST, P)     /* (scalar) ints=shape -> array filled with the scalar */ \
  _(broadcast_in_dim, BCASTDIM, P) /* (array) ints=R, shape[R], dims[rank]: operand dim i becomes dim dims[i] */ \
  _(reshape,   RESHAPE,   P)     /* (array) ints=shape, same number of elements */ \
  _(iota,      IOTA,      P)     /* () ints=dtype, dim, shape...: index along dim; text=layout or none */ \
  _(layout_cast, LAYOUTCAST, P)  /* (array) text=layout: the same array, in that register layout */ \
  _(reduce_sum, REDUCE,   P)     /* (array) ints=axes -> reduced over them (scalar when all) */ \
  _(reduce_max, REDUCE,   P) \
  _(reduce_min, REDUCE,   P) \
  /* memory */ \
  _(view,  VIEW,  P)             /* (ref, dynamic starts...) ints=3 per index -> ref */ \
  _(load,  LOAD,  M)             /* (ref) -> array (scalar for rank 0); text=layout hint or none */ \
  _(store, STORE, M)             /* (ref, value) */ \
  _(transpose_ref, VIEWPERM, P)  /* (ref) ints=perm -> ref whose dim j is the operand's dim perm[j] */ \
  _(reshape_ref, VIEWRESHAPE, P) /* (SMEM ref) ints=shape -> its elements in row-major order under that shape (ir_ref.c) */ \
  _(smem_alloc, ALLOC, M)        /* () ints=dtype, shape...; text=transforms -> SMEM ref, alive until its region ends */ \
  _(cluster_ref, CLUSTERREF, P)  /* (SMEM ref, rank i32) -> the same ref in the SMEM of the cluster's block of that rank (DSMEM: loads, stores and views only) */ \
  /* barriers, asynchronous copies, wgmma (all issued by the warpgroup) */ \
  _(barrier_alloc, BARALLOC, M)  /* () ints=num_barriers, num_arrivals, cluster axes mask[, orders tensor core] -> barrier ref u64[n] */ \
  _(barrier_arrive, BARRIER, M)  /* (one barrier): one arrival per warpgroup (cluster barriers: on every peer) */ \
  _(barrier_wait, BARRIER, M)    /* (one barrier): wait for the phase this warpgroup expects, then expect the next */ \
  _(tma_load, TMALOAD, M)        /* (gmem ref, smem ref, barrier[, pred]) ints=multicast axes mask, has_pred[, oob[, partition: 1 + dim]] */ \
  _(tma_store, TMASTORE, M)      /* (smem ref, gmem ref[, pred]) ints=commit_group, reduction op, has_pred */ \
  _(async_store_smem, ASYNCSMEM, M) /* (array, SMEM ref, barrier, rank i32) ints=reduction op (none, add, min, max, and, or, xor): st.async (red.async) of the array into the ref in the cluster's block of that rank, completing on that block's barrier, which gets one arrival expecting the bytes */ \
  _(commit_smem, SYNC, M)        /* () generic SMEM writes become visible to TMA and wgmma (fence + barrier) */ \
  _(commit_group, SYNC, M)       /* () close the current group of SMEM->GMEM copies */ \
  _(wait_group, SYNC, M)         /* ints=n, read_only: at most n groups of this warpgroup's copies in flight */ \
  _(acc_alloc, ACCALLOC, M)      /* () ints=dtype, M, N -> wgmma accumulator ref (registers), zeros */ \
  _(wgmma, WGMMA, M)             /* (acc ref, a: smem ref or array, b: smem ref): acc += a @ b, asynchronously */ \
  _(wgmma_wait, SYNC, M)         /* ints=n: at most n wgmma groups in flight */ \
  _(set_max_registers, SYNC, M)  /* ints=n, increase (1) or decrease (0): setmaxnreg */ \
  _(atomic, ATOMIC, M)           /* (one-element GMEM ref, value[, new]) ints=op, sem, scope -> the old value; once per warpgroup */ \
  /* Blackwell (sm_100a): tensor memory */ \
  _(tmem_alloc, TMEMALLOC, M)    /* () ints=dtype, rows, cols, collective -> TMEM ref, alive until its region ends (pass_tmem places it) */ \
  _(tmem_load, TMEMLOAD, M)      /* (TMEM ref) text=layout or none -> array (tcgen05.ld; TMEM may be overwritten only after tmem_wait_load) */ \
  _(tmem_store, TMEMSTORE, M)    /* (TMEM ref, array): tcgen05.st, visible to other warpgroups and MMAs after tmem_commit */ \
  _(tmem_wait_load, SYNC, M)     /* () this warpgroup's TMEM loads have read their columns (tcgen05.wait::ld) */ \
  _(tmem_commit, SYNC, M)        /* () this warpgroup's TMEM stores are done (tcgen05.wait::st) */ \
  _(tcgen05_mma, TCMMA, M)       /* (acc TMEM ref, a: SMEM or TMEM ref, b: SMEM ref[, accumulate pred]) ints=accumulate (0, 1, 2: the pred), collective: acc = a @ b (+ acc), asynchronously, issued by one thread */ \
  _(tcgen05_commit, TCCOMMIT, M) /* (barrier) ints=collective: one arrival when this warpgroup's tcgen05_mmas so far are done (on the pair's barriers when collective) */ \
  _(cluster_cancel, CANCEL, M)   /* (result SMEM ref of 16 bytes, barrier): every warpgroup arrives (warpgroup 0 expecting 16 bytes); the cluster's first block asks to cancel a cluster not yet started, whose answer lands in every block's result */ \
  _(cancel_query, CANCELQ, M)    /* (result SMEM ref) -> i32 grid index per axis, pred: the canceled cluster's place in the grid, and whether one was */ \
  /* multiple devices */ \
  _(remote, REMOTE, P)           /* (GMEM ref, device i32, peer table i64[3+n]) -> the same ref on that device (symmetric arrays) */ \
  _(multimem_store, MMSTORE, M)  /* (GMEM ref, value, peer table) the value into the ref on every device (multimem.st) */ \
  _(multimem_load, MMLOAD, M)    /* (GMEM ref, peer table) ints=op (0 add, 1 min, 2 max) -> the reduction over devices (multimem.ld_reduce) */ \
  _(sem_wait, SEMWAIT, M)        /* (one-element i32 GMEM ref, value i32): wait until it holds >= value, subtract value (acquire, system scope); once per warpgroup */ \
  _(debug_print, PRINT, M)       /* (scalars..., or one array) text=format with {} per operand: printf once per warpgroup, arrays one line per element */ \
  _(profile, PROF, M)            /* (profile buffer parameter u32[traces, 4 + 4*space]) ints=name id, end[, warps 1/4]: the leader of each warpgroup (warps 1) or warp (4) stamps one event (globaltimer, smid) */ \
  /* structured control flow */ \
  _(for,   FOR,   R)             /* (lo, hi, step, inits...) -> carried results; args: iv, carried */ \
  _(if,    IF,    R)             /* (cond) -> results; regions: then, else */ \
  _(while, WHILE, R)             /* (inits...) -> final carried; regions: cond (yields a pred), body (yields the next carried); both see the carried values as args */ \
  _(scoped, SCOPED, R)           /* () -> results; one region whose SMEM allocations end with it (run_scoped) */ \
  _(single_warp, SCOPED, R)      /* () one region that only the warpgroup's first warp runs, the others skip it: scalars, barrier waits, TMA copies (irb_op refuses the rest) */ \
  _(yield, YIELD, T)             /* (values...) ends a region */

typedef enum ir_opcode {
#define IR_ENUM(name, cls, fl) IR_##name,
  IR_OPS(IR_ENUM)
#undef IR_ENUM
  IR__COUNT
} ir_opcode;

typedef enum ir_opclass {
  IRC_CONST, IRC_GRIDIDX, IRC_THREADIDX, IRC_UNARY, IRC_BINARY, IRC_COMPARE,
  IRC_SELECT, IRC_CONVERT, IRC_BROADCAST, IRC_BCASTDIM, IRC_RESHAPE, IRC_IOTA, IRC_LAYOUTCAST, IRC_REDUCE,
  IRC_VIEW, IRC_LOAD, IRC_STORE, IRC_VIEWPERM, IRC_VIEWRESHAPE, IRC_ALLOC, IRC_CLUSTERIDX, IRC_CLUSTERREF,
  IRC_BARALLOC, IRC_BARRIER, IRC_TMALOAD, IRC_TMASTORE, IRC_ASYNCSMEM, IRC_SYNC, IRC_ACCALLOC, IRC_WGMMA, IRC_ATOMIC, IRC_PRINT, IRC_PROF, IRC_REMOTE, IRC_SEMWAIT, IRC_MMSTORE, IRC_MMLOAD,
  IRC_TMEMALLOC, IRC_TMEMLOAD, IRC_TMEMSTORE, IRC_TCMMA, IRC_TCCOMMIT, IRC_CANCEL, IRC_CANCELQ,
  IRC_FOR, IRC_IF, IRC_WHILE, IRC_SCOPED, IRC_YIELD
} ir_opclass;

enum { IRF_P = 1, IRF_R = 2, IRF_T = 4, IRF_M = 8 };

typedef struct ir_opinfo {
  const char *name;
  uint8_t cls;      /* ir_opclass */
  uint8_t flags;
} ir_opinfo;

extern const ir_opinfo ir_optab[IR__COUNT];
int ir_op_lookup(const char *name);   /* -1 when unknown */

/* -- Types ------------------------------------------------------------------ */

typedef struct ir_type {
  uint8_t kind;     /* mgpu_value_kind */
  uint8_t dtype;    /* mgpu_dtype */
  uint8_t space;    /* mgpu_space, refs only */
  uint8_t rank;
  int64_t shape[IR_MAXRANK];
} ir_type;

/* reduction_op of tma_store.  ORDER RED: ir_red_names. */
enum { IR_RED_NONE, IR_RED_ADD, IR_RED_MIN, IR_RED_MAX, IR_RED_INC, IR_RED_DEC, IR_RED_AND, IR_RED_OR, IR_RED_XOR };
extern const char *const ir_red_names[IR_RED_XOR + 1];

/* The read-modify-write of an atomic op, its memory order and scope.
** ORDER ATOM: ir_atom_names; ORDER SEM: ir_sem_names; ORDER SCOPE: ir_scope_names.
** cas(ref, expected, new) stores new where the ref holds expected. */
enum { IR_ATOM_ADD, IR_ATOM_EXCH, IR_ATOM_CAS, IR_ATOM_MAX, IR_ATOM_MIN, IR_ATOM_AND, IR_ATOM_OR, IR_ATOM_XOR };
enum { IR_SEM_RELAXED, IR_SEM_ACQUIRE, IR_SEM_RELEASE, IR_SEM_ACQ_REL };
enum { IR_SCOPE_CTA, IR_SCOPE_CLUSTER, IR_SCOPE_GPU, IR_SCOPE_SYS };
extern const char *const ir_atom_names[IR_ATOM_XOR + 1];
extern const char *const ir_sem_names[IR_SEM_ACQ_REL + 1];
extern const char *const ir_scope_names[IR_SCOPE_SYS + 1];

/* Tensor memory: 128 lanes of 512 32-bit columns per block; values narrower
** than 32 bits are packed, 4 / bytes to a column. */
#define IR_TMEM_ROWS 128
#define IR_TMEM_COLS 512
static inline int64_t ir_tmem_cols(int dtype, int64_t n) { return (n * dt_bytes(dtype) + 3) / 4; }

/* View index kinds (ints of a view op, 3 per index: kind, start, size). */
enum { IR_IDX_INT = 0, IR_IDX_DS = 1, IR_IDX_ALL = 2 };
#define IR_DYNAMIC INT64_MIN   /* start held by the next dynamic operand */

/* -- Values and ops ----------------------------------------------------------- */

enum { IRV_PARAM = 1, IRV_ARG = 2 };

typedef struct ir_value {
  uint32_t type;     /* type id */
  int32_t def;       /* defining op, or -1 for a kernel parameter */
  uint16_t idx;      /* result / region-argument / parameter index */
  uint16_t flags;    /* IRV_PARAM, IRV_ARG */
} ir_value;

typedef struct ir_op {
  uint16_t code;     /* ir_opcode */
  uint16_t nres;
  uint32_t loc;      /* string id of the Lua "chunk:line" */
  uint32_t opd, nopd;  /* operands: k->opds[opd .. opd+nopd) */
  uint32_t res;      /* first result value */
  uint32_t iat, niat;  /* int attributes: k->ints[iat .. iat+niat) */
  double num;        /* numeric attribute */
  uint32_t text;     /* string id of the text attribute, 0 = none */
  uint32_t arg, narg;  /* region arguments: consecutive values */
  uint32_t body[2];  /* op counts of the regions */
} ir_op;

typedef struct ir_param {
  uint32_t value;
  uint8_t role;      /* mgpu_param_role */
} ir_param;

typedef struct ir_kernel {
  const mem_alloc *alloc;
  char *name;
  mgpu_kernel_options opts;   /* name points at `name` */
  VEC(ir_op) ops;
  VEC(ir_value) vals;         /* vals.v[0] is the "none" value */
  VEC(ir_type) types;
  VEC(uint32_t) opds;
  VEC(int64_t) ints;
  VEC(char *) strs;           /* strs.v[0] = "" */
  VEC(ir_param) params;
  VEC(uint32_t) type_hash;    /* open-addressing table of type ids (+1) */
} ir_kernel;

/* ir.c */
ir_kernel *ir_kernel_new(const mem_alloc *a, const mgpu_kernel_options *opts);
void ir_kernel_free(ir_kernel *k);
/* Intern a type; returns 0 on allocation failure. */
uint32_t ir_type_intern(ir_kernel *k, const ir_type *t);
uint32_t ir_str_intern(ir_kernel *k, const char *s);   /* 0 on failure or "" */
const char *ir_str(const ir_kernel *k, uint32_t id);

static inline const ir_type *ir_vtype(const ir_kernel *k, uint32_t v) { return &k->types.v[k->vals.v[v].type]; }
static inline const uint32_t *ir_opds(const ir_kernel *k, const ir_op *op) { return k->opds.v + op->opd; }
static inline const int64_t *ir_ints(const ir_kernel *k, const ir_op *op) { return k->ints.v + op->iat; }
static inline const char *ir_loc(const ir_kernel *k, const ir_op *op) { return op->loc ? k->strs.v[op->loc] : ""; }
/* Number of ops in the op at `i` including its regions. */
static inline uint32_t ir_extent(const ir_kernel *k, uint32_t i) { return 1 + k->ops.v[i].body[0] + k->ops.v[i].body[1]; }

/* For every op, the index of the region op whose region holds it (-1 at
** the top level), and which of its regions (0/1).  Caller frees both with
** mem_free(k->alloc, p, sizeof(int32_t) * k->ops.n); NULL on failure. */
int32_t *ir_parents(const ir_kernel *k, uint8_t **region);

int64_t ir_numel(const ir_type *t);
/* The kernel's target as PTX names it ("sm_90a", "sm_100a"); ir_kernel_new makes 0 sm_90a. */
static inline const char *ir_target_name(int target) { return target == MGPU_TARGET_SM100A ? "sm_100a" : "sm_90a"; }
static inline bool ir_blackwell(const ir_kernel *k) { return k->opts.target == MGPU_TARGET_SM100A; }
/* Whether barrier_alloc result `root` orders tensor-core work (tcgen05 fences around its arrivals and waits). */
static inline bool ir_barrier_orders_tc(const ir_kernel *k, uint32_t root) {
  const ir_op *op = &k->ops.v[k->vals.v[root].def];
  return op->niat > 3 && ir_ints(k, op)[3];
}
/* Blocks in one thread-block cluster of kernels with these options (1 without clusters). */
static inline int ir_cluster_blocks(const mgpu_kernel_options *o) {
  int n = 1;
  for (int i = 0; i < o->cluster_rank; i++) n *= o->cluster[i];
  return n;
}
/* Grids of rank 0..8 launch as CUDA's 3-D grid (in clusters): the last axis runs along x,
** the one before along y, and the rest fold row-major into z, so blocks still start in the
** grid's row-major order.  Axis `axis` is (id[hw] / div) % mod (no modulo when mod is 0);
** the launch, the PTX lowering and the interpreter all use this map. */
typedef struct ir_grid_axis { int hw; int64_t div, mod; } ir_grid_axis;
/* The hardware axis alone (no products: safe on grids not yet checked against CUDA's limits). */
static inline int ir_grid_hw(const mgpu_kernel_options *o, int axis) {
  return axis < o->grid_rank - 2 ? 2 : o->grid_rank - 1 - axis;
}
static inline ir_grid_axis ir_grid_map(const mgpu_kernel_options *o, int axis) {
  ir_grid_axis m = { ir_grid_hw(o, axis), 1, 0 };
  if (axis < o->grid_rank - 2) {
    for (int i = axis + 1; i < o->grid_rank - 2; i++) m.div *= o->grid[i];
    if (axis > 0) m.mod = o->grid[axis];
  }
  return m;
}
/* The launch grid in clusters along x, y, z (hardware order). */
static inline void ir_grid_dims(const mgpu_kernel_options *o, int64_t dims[3]) {
  dims[0] = dims[1] = dims[2] = 1;
  for (int i = 0; i < o->grid_rank; i++) dims[ir_grid_map(o, i).hw] *= o->grid[i];
}
bool ir_same_shape(const ir_type *a, const ir_type *b);
/* "f32[4,1024]" style text into buf. */
const char *ir_type_str(const ir_type *t, char *buf, size_t n);
/* Location of the value's definition ("" for parameters). */
const char *ir_value_loc(const ir_kernel *k, uint32_t v);

/* debug_print formats (ir.c).  The text holds {} per operand ({{ and }}
** are braces); the printf form replaces each {} with its operand's
** conversion (an array's with "[%u, %u]: " and its element's) and ends
** with a newline.  ir_print_holes: the number of {}, or -1 and why. */
int ir_print_holes(const char *fmt, char *why, size_t n);
/* Conversion of a dtype: %f (floats, passed as f64), %d / %u (8-32 bits
** and pred, passed as 32 bits), %lld / %llu (passed as 64 bits). */
const char *ir_print_conv(int dtype);
void ir_print_format(const ir_kernel *k, const ir_op *op, strbuf *out);

/* ir_ref.c: refs at compile time.
** ir_ref_base: the ref a chain of views, transposes, reshapes and
** cluster_refs starts from (an allocation, a parameter, a region argument).
** ir_ref_in_cluster: whether SMEM ref v views another block's SMEM (a
** cluster_ref somewhere in its chain).
** ir_uses_dsmem: whether the kernel touches another block's SMEM
** (cluster_ref or async_store_smem).
** ir_barrier_gets_stores: whether barrier allocation `root` is one that
** async_store_smem completes on (its waits must acquire at cluster scope).
** ir_ref_alloc: the smem_alloc result an SMEM ref views, 0 for other refs.
** ir_root_shape: the shape of a root ref (a parameter, an allocation, or a
** reshape_ref result, whose root is its whole allocation reshaped).
** ir_ref_walk: a ref as its root, the root dim of each of its dims, and the
** static offset along each root dim (dyn: plus a dynamic one).
** ir_reshape_check: can SMEM ref v be reshaped to `shape`?  It must be
** contiguous (every dim whole but its outermost, no root dim dropped after
** it, none transposed), keep the dims its allocation tiles, and start at a
** whole row of the new shape; false + why (naming the dim) otherwise. */
typedef struct ir_refview {
  uint32_t root;
  uint8_t rank;
  int8_t dim[IR_MAXRANK];
  int64_t off[IR_MAXRANK];
  bool dyn[IR_MAXRANK];
} ir_refview;
uint32_t ir_ref_base(const ir_kernel *k, uint32_t v);
uint32_t ir_ref_alloc(const ir_kernel *k, uint32_t v);
bool ir_ref_in_cluster(const ir_kernel *k, uint32_t v);
bool ir_uses_dsmem(const ir_kernel *k);
bool ir_barrier_gets_stores(const ir_kernel *k, uint32_t root);
void ir_root_shape(const ir_kernel *k, uint32_t root, int64_t *shape, int *rank);
void ir_ref_walk(const ir_kernel *k, uint32_t v, ir_refview *rv);
bool ir_reshape_check(const ir_kernel *k, uint32_t v, const int64_t *shape, int rank, char *why, size_t n);

/* ir_build.c: the tcgen05.mma kind ("f16", "tf32", "f8f6f4", "i8") of
** operand dtypes da x db into an accumulator of dtype dc, or NULL and why not. */
const char *ir_mma_kind(int da, int db, int dc, const char **why);

/* ir_print.c: the canonical text form (deterministic; the cache key). */
void ir_print(const ir_kernel *k, strbuf *sb, bool with_locs);

/* ir_verify.c: structural checks of a finished kernel; false + message in d. */
bool ir_verify(const ir_kernel *k, diag *d);

/* -- Builder (ir_build.c) ------------------------------------------------------
** Appends ops in trace order, type-checks each one, tracks open regions and
** which values are in scope.  Every failure sets a "loc: message" in `d` and
** returns its status; the builder stays usable for queries but a failed op
** adds nothing.
*/
typedef struct ir_frame {
  uint32_t op;        /* the region op */
  uint32_t start;     /* first op of the open region */
  uint32_t scope;     /* scope id of the open region */
  uint8_t region;     /* 0 or 1 */
  bool one_warp;      /* inside a single_warp region (this one or an enclosing one) */
} ir_frame;

typedef struct ir_builder {
  const mem_alloc *alloc;
  ir_kernel *k;              /* NULL once finished */
  diag *d;
  uint32_t loc;              /* string id of the current location */
  VEC(ir_frame) frames;
  VEC(uint32_t) val_scope;   /* per value */
  VEC(uint8_t) scope_open;   /* per scope id */
  VEC(uint32_t) scope_loc;   /* per scope id: location that opened it */
  VEC(uint32_t) bar_waits;   /* barrier_alloc results waited on: value << 2 | 1 inside single_warp, | 2 outside */
  uint8_t cta_group;         /* tcgen05 ops so far: 1 (one block) or 2 (a cluster pair, collective), 0 = none yet */
  uint32_t cta_group_loc;    /* string id of the location of the first */
  bool finished;
} ir_builder;

ir_builder *irb_new(const mem_alloc *a, const mgpu_kernel_options *opts, diag *d);
void irb_free(ir_builder *b);
mgpu_status irb_set_loc(ir_builder *b, const char *loc);
mgpu_status irb_param(ir_builder *b, int role, int dtype, const int64_t *shape, int rank, uint32_t *out);
/* Add op `name` ("else" closes an if's then-region and opens its else).
** Results (or a region op's block arguments when it opens a region) are
** written to res[0..*nres). */
mgpu_status irb_op(ir_builder *b, const char *name, const uint32_t *opds, uint32_t nopd,
                   const int64_t *ints, uint32_t nints, double num, const char *text,
                   uint32_t *res, uint32_t maxres, uint32_t *nres);
/* Close the kernel: every region must be closed and the IR must verify.
** On success the kernel belongs to the caller; the builder can then only be
** freed. */
mgpu_status irb_finish(ir_builder *b, ir_kernel **out);

#endif
