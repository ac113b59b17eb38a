/*
** ptx.h -- lowering a kernel to PTX text for its target (sm_90a or sm_100a).
**
** Each warpgroup-level op is unrolled into per-thread instructions over the
** registers the thread owns (see pass_layout.c for the strided layout).
** Registers are virtual (ptxas allocates); every IR value gets fresh ones,
** except that a loop's results reuse its carried registers.
*/
#ifndef MGPU_PTX_H
#define MGPU_PTX_H

#include "../layout/xform.h"
#include "../passes/pass.h"

/* Register classes.  ORDER PR: ptx_emit.c's name and type tables. */
enum { PR_P, PR_H, PR_R, PR_F, PR_RD, PR_FD, PR__COUNT };
typedef uint32_t preg;   /* (class << 24) | index; 0 = none */
#define PR_CLASS(r) ((int)((r) >> 24))
#define PR_MAKE(c, i) (((uint32_t)(c) << 24) | (uint32_t)(i))

/* An operand as text: registers, immediates, addresses, vectors. */
typedef struct po { char s[192]; } po;

/* A lowered ref: where it starts along every dim of its root (a GMEM
** parameter or an SMEM allocation). */
typedef struct pref {
  uint32_t root;                 /* parameter index, or the allocating op's result */
  uint8_t space;                 /* mgpu_space */
  uint8_t rank;
  int8_t dim[IR_MAXRANK];        /* view dim -> parameter dim */
  int64_t soff[IR_MAXRANK];      /* static offset along each parameter dim */
  preg doff[IR_MAXRANK];         /* dynamic part (s64 register) or 0 */
  int64_t ddiv[IR_MAXRANK];      /* the dynamic part is a multiple of this */
  preg base;                     /* GMEM: u64 address of the root on another device (remote), or 0 for the parameter's */
  preg dev;                      /* remote: that device (s32) */
  int ndev;                      /* remote: how many devices the launch has */
  preg cta;                      /* SMEM viewed in another block (cluster_ref): that block's cluster rank (b32), else 0 */
} pref;

/* A tensor map the kernel takes as a by-value parameter, encoded on the
** host at every launch with the buffer of kernel parameter `param`. */
typedef struct ptx_tmap {
  uint32_t param;
  int dtype;                     /* mgpu_dtype of the elements */
  int rank;                      /* 1..5; dims innermost first */
  uint64_t dims[5];
  uint64_t strides[5];           /* bytes; strides[i] for dim i >= 1 (strides[0] is the element size) */
  uint32_t box[5];
  int swizzle;                   /* 0, 32, 64 or 128 */
  int ndev;                      /* remote copies: one map per device (128 bytes apart, in device order), else 0 */
} ptx_tmap;

typedef VEC(ptx_tmap) ptx_tmaps;

typedef struct pe {
  const ir_kernel *k;
  const kinfo *ki;
  diag *d;
  strbuf body;
  strbuf entry;                  /* the kernel's entry, before the body (ptx_emit_kernel) */
  uint32_t nreg[PR__COUNT];
  preg *vreg;                    /* per value: first register (arrays: consecutive) */
  pref *refs;                    /* per ref value */
  preg *param_addr;              /* per parameter: u64 global address */
  preg lane;                     /* thread index inside the warpgroup, 0..127 (b32) */
  preg wg;                       /* warpgroup index inside the block (b32) */
  preg warp;                     /* warp index inside the warpgroup, 0..3 (b32) */
  preg lane32;                   /* lane inside the warp (b32) */
  preg smem;                     /* u32 shared-window address of the dynamic SMEM */
  preg tmem;                     /* u32 TMEM address of the kernel's allocation (TMEM kernels) */
  uint32_t nlabel;
  const ir_op *op;               /* op being lowered, for error locations */
  bool smem_reads;               /* SMEM was read since the last warpgroup barrier (auto barriers) */
  bool single_warp;              /* inside a single_warp region (no warpgroup barriers there) */
  bool wg_fence;                 /* accumulator registers written since the last wgmma.fence */
  preg wg_acc;                   /* the accumulator of the last wgmma (0: none yet) */
  int ptx_isa;                   /* PTX ISA version an op needs (81: multimem, 84: mixed s8/u8 wgmma), else 0 */
  bool maxreg;                   /* setmaxnreg is used (the entry needs .minnctapersm 1) */
  bool dsmem;                    /* the kernel uses cluster_ref or async_store_smem: cluster barriers order memory at cluster scope */
  preg sta_bar;                  /* while lowering async_store_smem: the receiving block's barrier (cluster address), else 0 */
  int sta_red;                   /* and its reduction (IR_RED_NONE: plain stores) */
  preg *phase;                   /* per barrier_alloc result: b32 of expected parities */
  preg *acc;                     /* per acc_alloc result: first accumulator register */
  preg cid[3];                   /* %cluster_ctaid.x/y/z (clusters only) */
  preg crank;                    /* %cluster_ctarank */
  ptx_tmaps *tmaps;              /* tensor-map parameters, in parameter order after the kernel's */
  strbuf globals;                /* debug_print format strings (module scope) */
  uint32_t nfmt;                 /* how many */
  int64_t print_bytes;           /* the largest vprintf argument buffer (a .local array) */
  const char *mm;                /* while lowering a multimem op: "st", or its reduction ("add", "min", "max") */
  struct { uint32_t root; int dim; int64_t q, step; } dstep[16];   /* pe_smem_dyn_steps' answers, per root, dim, q */
  int ndstep;
  preg prof_row;                 /* profiled kernels: u64 address of this thread's trace row */
  preg prof_n;                   /* and the count of its events so far (b32) */
} pe;

/* ptx_emit.c: the kernel's PTX; the tensor maps its launches must pass
** (after the kernel's parameters) are appended to tmaps. */
mgpu_status ptx_emit_kernel(const ir_kernel *k, const kinfo *ki, strbuf *out, ptx_tmaps *tmaps, diag *d);
preg pe_reg(pe *e, int cls);
void pe_warp_uniform(pe *e, preg r);
preg pe_regs(pe *e, int cls, uint32_t n);
int pe_cls(int dtype);
uint32_t pe_label(pe *e);
po R(preg r);
po NOT(preg p);
po I(int64_t v);
po U(uint64_t v);
po F32(double v);
po F64(double v);
po LBL(uint32_t l);
po ADDR(preg base, int64_t off);
po RV(const preg *r, int n);
po S(const char *s);
void pe_ins(pe *e, const char *opc, int n, ...);
void pe_pins(pe *e, preg pred, bool neg, const char *opc, int n, ...);
void pe_label_here(pe *e, uint32_t l);
void pe_comment(pe *e, const char *fmt, ...) MGPU_PRINTF(2, 3);
MGPU_NORET void pe_fail(pe *e, const char *what);
MGPU_PRINTF(2, 3) MGPU_NORET void pe_failf(pe *e, const char *fmt, ...);
/* ceil(log2(x)) for x >= 1. */
int pe_log2(int64_t x);
/* Quotient and remainder of the u32 register x by the constant d (shifts
** and masks for powers of two); either output may be NULL. */
void pe_divrem(pe *e, preg x, int64_t d, preg *q, preg *r);
/* d = a / c (rem: a % c) for a 32-bit a, signed (sgn) or unsigned, and a
** constant c >= 2 (at most 2^31 - 1 when signed), without a divide. */
void pe_divrem_const(pe *e, bool rem, bool sgn, preg d, preg a, int64_t c);
/* Registers of value v and how many there are per thread. */
preg pe_vreg(pe *e, uint32_t v);
uint32_t pe_nregs(const pe *e, uint32_t v);

/* ptx_array.c: layout-aware array ops */
/* The layout of value v fitted to its shape. */
void pe_fit(pe *e, uint32_t v, lay_fit *f);
/* Per logical dim, the u32 register holding this thread's coordinate
** offset under a tiled layout (0 when the thread does not move it). */
void pe_thread_coords(pe *e, const lay_fit *f, preg *T);
/* The constant part of the coordinates of element el of register r. */
void pe_const_coords(const lay_fit *f, int64_t r, int el, int64_t *C);
/* Predicate: this thread holds the copy that counts (stores skip replicas), or 0 when all do. */
preg pe_owner(pe *e, const lay_fit *f);
void ptx_reduce(pe *e, const ir_op *op);
void ptx_bcastdim(pe *e, const ir_op *op);
void ptx_iota(pe *e, const ir_op *op);
void ptx_same_regs(pe *e, const ir_op *op);
/* Warpgroup barrier (named barrier 1 + warpgroup). */
void pe_wg_barrier(pe *e);
/* u32 register: the start of this warpgroup's slice of the scratch that
** reductions and atomics pass values through (pass_smem sizes it). */
preg pe_wg_scratch(pe *e);

/* ptx_arith.c */
/* d = a op b for one element of a binary op or a reduction combine. */
void ptx_binop(pe *e, int code, int dtype, preg d, preg a, preg b);
void ptx_const(pe *e, const ir_op *op);
void ptx_elementwise(pe *e, const ir_op *op);
void ptx_broadcast(pe *e, const ir_op *op);
/* Move value `src` (scalar or array registers) into the registers at dst. */
void ptx_move(pe *e, int dtype, preg dst, preg src, uint32_t n, bool src_scalar);

/* d = code(a) or code(a, b) for one float element of dtype dt (what
** ptx_elementwise emits per element; straight-line code). */
void ptx_float_unary(pe *e, int code, int dt, preg d, preg a, bool approx);
void ptx_float_binary(pe *e, int code, int dt, preg d, preg a, preg b, bool approx);

/* ptx_math.c: f32 sin, cos, erf, expm1, log1p, logistic (false for other
** codes) and pow, accurate through f64 or fast under approx_math. */
bool ptx_math_unary(pe *e, int code, preg d, preg x, bool approx);
void ptx_math_pow(pe *e, preg d, preg x, preg y, bool approx);
/* p = ((c[0] x + c[1]) x + ...) + c[n-1] (fma), in f64 (wide) or f32. */
preg ptx_horner(pe *e, bool wide, preg x, const double *c, int n);

/* ptx_math64.c: f64 exp, exp2, log, log2, tanh, sin, cos, erf, logistic,
** expm1, log1p (false for other codes) and pow, accurate (bounds there). */
bool ptx_math64_unary(pe *e, int code, preg d, preg x);
void ptx_math64_pow(pe *e, preg d, preg x, preg y);

/* ptx_mem.c */
/* Move w consecutive elements between [addr+imm] in `space` ("global",
** "shared") and registers reg.. (reg repeated when splat), under an
** optional predicate (negated when neg). */
void pe_mem(pe *e, const char *space, int dtype, bool store, preg reg, bool splat, int w, preg addr, int64_t imm,
            preg pred, bool neg);
/* Set n registers from r to zero. */
void pe_zero(pe *e, int dtype, preg r, int n);
void ptx_param_ref(pe *e, uint32_t v, uint32_t param);
/* u64 register: the address of GMEM ref r's root (its parameter, or the
** parameter's copy on another device for remote refs). */
preg pe_ref_base(pe *e, const pref *r);
void ptx_view(pe *e, const ir_op *op);
void ptx_load(pe *e, const ir_op *op);
void ptx_store(pe *e, const ir_op *op);
void ptx_atomic(pe *e, const ir_op *op);
/* remote: the ref's root on another device, at the parameter's address
** plus that device's entry of the peer table. */
void ptx_remote(pe *e, const ir_op *op);
/* cluster_ref: the SMEM ref's view, its accesses mapped into the named block's SMEM (mapa). */
void ptx_cluster_ref(pe *e, const ir_op *op);
/* async_store_smem: one expect_tx arrival on the receiving block's barrier, then st.async (or
** red.async) of every element, planned as an SMEM store (ptx_smem.c). */
void ptx_async_store_smem(pe *e, const ir_op *op);
/* multimem_store / multimem_load: the store or load path of a GMEM access
** with multimem.st / multimem.ld_reduce at the ref's multicast address
** (the parameter's address plus the peer table's multicast offset). */
void ptx_multimem(pe *e, const ir_op *op);
/* sem_wait: the leader spins with acquire loads, then takes the value off
** with a compare-and-swap; the warpgroup waits for it. */
void ptx_sem_wait(pe *e, const ir_op *op);

/* ptx_smem.c: SMEM allocations, transposed views, loads and stores */
/* The transforms of an SMEM root: an smem_alloc result, or a reshape_ref result (its
** allocation under the reshaped root shape, ir_ref.c). */
void pe_smem_map(pe *e, uint32_t root, xf_map *m);
/* For every root dim of r with a dynamic offset: the bytes one unit of it
** moves every address of the allocation (step[d]); false when that differs
** from element to element.  m is the map of r's root (pe_smem_map). */
bool pe_smem_dyn_steps(pe *e, const pref *r, const xf_map *m, int64_t *step);
/* u32 register: the SMEM window address of r's allocation plus its dynamic
** offsets (which must be additive and multiples of align bytes; `what`
** names the op in errors).  The static offset is left to the caller. */
preg pe_smem_origin(pe *e, const pref *r, const xf_map *m, int64_t align, const char *what);
/* Allocations: smem_alloc, barrier_alloc, acc_alloc results become root refs. */
void ptx_alloc(pe *e, const ir_op *op);
void ptx_transpose_ref(pe *e, const ir_op *op);
void ptx_reshape_ref(pe *e, const ir_op *op);
void ptx_smem_access(pe *e, uint32_t refv, uint32_t valv, bool store);
/* Kernel entry: swizzles are computed from offsets, which match the
** hardware's (TMA, wgmma) only if the SMEM window is 1024-byte aligned;
** trap if it is not. */
void ptx_smem_prologue(pe *e);

/* ptx_barrier.c: cluster set-up, mbarriers and the synchronising ops */
/* Kernel entry (after the SMEM window is known): cluster registers,
** mbarrier initialisation, parity registers, the block/cluster barrier. */
void ptx_barrier_prologue(pe *e);
/* Before the kernel returns: clusters wait for every block. */
void ptx_barrier_epilogue(pe *e);
void ptx_barrier_op(pe *e, const ir_op *op);
void ptx_sync_op(pe *e, const ir_op *op);
/* u32 register: the SMEM address of the one mbarrier a barrier ref names. */
preg pe_barrier_addr(pe *e, uint32_t v);
/* Predicate: this thread is the warpgroup's leader (lane 0 of its first warp). */
preg pe_leader(pe *e);
/* Every thread of the block, or of the cluster when there is one, meets here. */
void pe_block_sync(pe *e);

/* ptx_tma.c: TMA copies and their tensor maps */
void ptx_tma(pe *e, const ir_op *op);
/* Appends to `entry` (the kernel's entry, before its body) a prefetch of every tensor map the body
** named, by the block's first thread (tid: its %tid.x). */
void ptx_tma_prefetch(pe *e, preg tid, strbuf *entry);

/* ptx_print.c: debug_print through the driver's vprintf */
void ptx_debug_print(pe *e, const ir_op *op);
/* profile (CompilerParams profile_space): the trace's row and event count, set up at entry, and one
** event stamped by the warpgroup's leader */
void ptx_profile_prologue(pe *e);
void ptx_profile(pe *e, const ir_op *op);
/* Module-scope declarations (vprintf, format strings) and the argument
** buffer declared in the entry, when the kernel prints. */
void ptx_print_decls(const pe *e, strbuf *out);
void ptx_print_locals(const pe *e, strbuf *out);

/* ptx_mma.c: SMEM operands of wgmma and tcgen05.mma */
typedef struct pe_mma_operand {
  const char *op;                /* the op, for errors ("wgmma", "tcgen05_mma") */
  const char *name;              /* "A" or "B" */
  uint32_t v;
  const pref *r;
  xf_map m;
  int bytes;
  bool kmajor;
  bool is_b;                     /* B is (K, N): the MN dim is the second */
  int64_t lbo, sbo;
  int64_t *start;                /* per instruction: unswizzled byte offset in the allocation */
} pe_mma_operand;
/* Descriptor parameters of an SMEM operand for instruction blocks of `rows`
** MN-rows starting at mn0 = 0, rows, ... and k-steps of kin elements (start
** holds MN/rows x K/kin entries), each checked against the operand's layout. */
void pe_mma_plan(pe *e, pe_mma_operand *o, int64_t MN, int64_t K, int64_t rows, int kin);
/* A descriptor: the low word in a register, the high word a constant
** (hi_bits or-ed in: Blackwell's version bit). */
typedef struct pe_mma_desc { preg lo; uint32_t hi; } pe_mma_desc;
pe_mma_desc pe_mma_descriptor(pe *e, const pe_mma_operand *o, uint32_t hi_bits);
/* The u64 descriptor of one instruction: d's low word plus start bytes. */
preg pe_mma_desc_at(pe *e, pe_mma_desc d, int64_t start);

/* ptx_wgmma.c: accumulators and wgmma */
void ptx_acc_alloc(pe *e, const ir_op *op);
void ptx_acc_load(pe *e, const ir_op *op);
void ptx_acc_store(pe *e, const ir_op *op);
void ptx_wgmma(pe *e, const ir_op *op);
/* d = the low bytes of x[0..3] (x[0] lowest), as 8-bit MMA fragments hold them. */
void pe_pack4(pe *e, preg d, const preg *x);

/* ptx_tmem.c: Blackwell tensor memory */
/* Kernel entry: the block's first warp allocates the kernel's TMEM (before
** the block synchronises); ptx_tmem_base then reads its address. */
void ptx_tmem_prologue(pe *e);
void ptx_tmem_base(pe *e);
/* Before the kernel returns: every thread is done, the first warp frees TMEM. */
void ptx_tmem_epilogue(pe *e);
/* u32 register: the TMEM address (lane 0) of the first column of TMEM ref v. */
preg pe_tmem_addr(pe *e, uint32_t refv);
/* tmem_load and tmem_store. */
void ptx_tmem_access(pe *e, const ir_op *op);

/* ptx_cancel.c: cluster launch control (try_cluster_cancel, query_cluster_cancel) */
void ptx_cluster_cancel(pe *e, const ir_op *op);
void ptx_cancel_query(pe *e, const ir_op *op);

/* ptx_tcgen05.c: tcgen05.mma and tcgen05.commit */
void ptx_tcgen05_mma(pe *e, const ir_op *op);
void ptx_tcgen05_commit(pe *e, const ir_op *op);

#endif
