/*
** interp_int.h -- the interpreter's state, shared by interp.c (scheduling,
** control flow, memory) and interp_async.c (barriers, TMA copies, wgmma).
**
** The blocks of one cluster run together: every warpgroup of every block is
** an agent, and agents run in turn until each finishes or waits.  A block
** owns its SMEM and its mbarriers.
*/
#ifndef MGPU_INTERP_INT_H
#define MGPU_INTERP_INT_H

#include <setjmp.h>

#include "interp.h"

/* A ref: which kernel parameter or SMEM allocation it views and where. */
typedef struct iref {
  int32_t root;                  /* parameter index, or the allocating op's result (SMEM, barriers, accumulators) */
  uint8_t space;                 /* mgpu_space */
  uint8_t rank;
  int8_t dev;                    /* GMEM: the device whose copy of the parameter it views */
  int8_t cta;                    /* SMEM: 1 + the cluster rank of the block whose SMEM it views (cluster_ref), 0: its own */
  int8_t dim[IR_MAXRANK];        /* view dim -> root dim */
  int64_t off[IR_MAXRANK];       /* offset along every root dim */
} iref;

typedef struct islot {
  ival *data;                    /* scalars, arrays and accumulators */
  iref *ref;                     /* refs */
} islot;

typedef struct iframe {
  uint32_t op;                   /* the region op */
  uint8_t region;
  int64_t iv, hi, step;          /* loops */
} iframe;

typedef VEC(uint32_t) iclocks;

typedef struct iagent {
  uint32_t pc;
  int wg;                        /* warpgroup index in the block */
  int block;                     /* block index among the clusters of every device (device * cblocks + index in the cluster) */
  int dev;                       /* the device it runs on */
  bool done;
  VEC(iframe) stack;
  islot *slots;                  /* per value, pointing into the blocks below */
  ival *data_block;
  iref *ref_block;
  int64_t *waits;                /* per mbarrier of its block: completions this agent has waited for */
  int64_t group;                 /* SMEM->GMEM copies: the open (uncommitted) group */
  uint32_t epoch;                /* commit_smem calls so far (generic SMEM writes of an older epoch are committed) */
  uint32_t tmem_ld_epoch;        /* wait_load_tmem calls so far (TMEM loads of an older epoch have read) */
  uint32_t tmem_st_epoch;        /* commit_tmem calls so far (TMEM stores of an older epoch are visible) */
  uint32_t *clock;               /* vector clock, per agent: the last event of each this agent has synchronised with (its own: arrivals made) */
  iclocks ld_clock;              /* its own clock at each wait_load_tmem (by tmem_ld_epoch) */
  iclocks st_clock;              /* its own clock at each commit_tmem (by tmem_st_epoch) */
  strbuf out;                    /* debug_print lines, written out in agent order when its cluster ends */
} iagent;

typedef struct iparam {
  unsigned char *data;
  int dtype;
  uint8_t rank;
  int64_t shape[IR_MAXRANK];
  int64_t stride[IR_MAXRANK];    /* elements */
} iparam;

/* One mbarrier. */
typedef struct ibar {
  int32_t count;                 /* arrivals per phase */
  int32_t missing;               /* arrivals the current phase still needs */
  int64_t tx;                    /* bytes the current phase still expects */
  int64_t completed;             /* phases completed */
  const ir_op *last;             /* the current phase's latest arrival */
  uint32_t *clock, *done_clock;  /* per agent: the vector clocks the current phase's arrivals carry, and the last completed phase's */
} ibar;

/* What the race checks know of one SMEM byte: its latest generic
** (register) write not yet followed by a commit_smem of the writer, the
** latest TMA load into it with the barrier completion that lands it, and
** the wgmmas in flight that read it. */
typedef struct ishadow {
  uint32_t gop;                  /* generic write: op index + 1, or 0 */
  uint32_t gepoch;               /* the writer's epoch at the write */
  uint32_t gclk;                 /* the writer's own clock at the write (cross-block reads must have synchronised past it) */
  uint32_t lop;                  /* TMA load: op index + 1, or 0 */
  uint32_t lphase;               /* the barrier completion (1-based) that lands it */
  uint32_t mop;                  /* the latest wgmma reading it: op index + 1 */
  uint16_t gagent;               /* the writing agent */
  uint16_t lbar;                 /* TMA load: barrier index in its block */
  uint16_t lblk;                 /* TMA load: the block whose barrier lands it */
  uint16_t mma;                  /* wgmmas in flight that read it */
} ishadow;

/* What the race checks know of one 32-bit TMEM cell (interp_tmem.c): ops
** as their index + 1, 0 = none. */
typedef struct itshadow {
  uint32_t mma;                  /* a tcgen05_mma in flight that writes it */
  uint32_t mma_seq;              /* which issue of it (interp.mma_seq then): an earlier one landing leaves the mark */
  uint32_t ld, ld_epoch;         /* the latest TMEM load of it, and its agent's tmem_ld_epoch then */
  uint32_t st, st_epoch;         /* the latest TMEM store to it, and its agent's tmem_st_epoch then */
  uint16_t ld_agent, st_agent;
  bool written;                  /* an MMA or a store has written it since the cluster began */
} itshadow;

typedef struct iblock {
  unsigned char *smem;
  ishadow *shadow;               /* per SMEM byte */
  unsigned char *tmem;           /* 128 rows of the kernel's TMEM columns (4 bytes each) */
  itshadow *tshadow;             /* per TMEM cell */
  ibar *bars;
  int cidx[3];                   /* index in the cluster along each cluster axis */
} iblock;

/* An asynchronous operation in flight. */
enum { IA_LOAD, IA_STORE, IA_WGMMA, IA_TCMMA, IA_TCCOMMIT, IA_CANCEL };
typedef struct iasync {
  uint8_t kind;
  int agent;                     /* the issuing agent */
  const ir_op *op;
  iref gmem, smem;               /* copies */
  int block;                     /* the block whose SMEM is written (loads) or read (stores) */
  int bar_block;                 /* loads: the block whose barrier they complete (the pair's first for partitioned ones) */
  int bar;                       /* loads: barrier index in that block */
  int part_dim;                  /* loads: the dim the copy's part is cut along, or -1 for the whole tile */
  int64_t part_lo, part_hi;      /* its index range along that dim */
  int64_t group;                 /* stores and wgmma: the group */
  ival *acc;                     /* wgmma: element (0, 0) of the accumulator (slice) */
  int64_t acc_ld;                /* wgmma: its row stride (the whole accumulator's N) */
  iref a, b;                     /* wgmma operands (a unused when areg); tcgen05_mma operands */
  ival *areg;                    /* wgmma: A from registers (a copy) */
  iref d;                        /* tcgen05_mma: the TMEM accumulator */
  bool accumulate;               /* tcgen05_mma: add to the accumulator (else overwrite it) */
  int peer;                      /* tcgen05 work of a cluster pair: the other block (block: the first), else -1 */
  uint32_t answer[4];            /* cluster cancel: the 16 bytes landing in smem (canceled?, first CTA id x, y, z) */
  uint32_t seq;                  /* tcgen05_mma: its issue's number (interp.mma_seq) */
} iasync;

typedef struct irace irace;      /* interp_race.c */

typedef struct interp {
  const ir_kernel *k;
  const kinfo *ki;
  diag *d;
  jmp_buf jmp;
  int64_t block[8];              /* program id per grid axis (the cluster's) */
  iparam *params;                /* per device, per parameter (device * np + parameter) */
  uint32_t np;                   /* parameters */
  int ndev;                      /* devices running the kernel together (1 but for multi-device launches) */
  iagent *agents;
  int nagents;
  int cblocks;                   /* blocks per cluster */
  int nblocks;                   /* blocks running together: one cluster per device */
  iblock *blocks;
  xf_map *maps;                  /* per smem_alloc op, in op order */
  uint32_t *map_of;              /* per value: index into maps (smem_alloc results) */
  uint32_t nmaps;
  int32_t *bar_of;               /* per value: first mbarrier of a barrier_alloc result */
  int nbars;                     /* mbarriers per block */
  uint32_t *clocks;              /* the vector clocks of every agent and barrier (iagent.clock, ibar.clock); kernels with TMEM only, else NULL */
  VEC(iasync) async;             /* operations in flight, in issue order */
  ival *scratch;                 /* carried-value staging, max numel */
  int64_t scratch_n;
  int64_t data_total, ref_total; /* elements and refs per agent */
  int64_t steps;                 /* ops evaluated so far: the profiler's clock */
  int64_t clusters_done;         /* clusters run so far (profile trace indices) */
  uint64_t next_cluster;         /* the grid's next cluster to start (row-major; cluster launch control cancels it) */
  uint64_t nclusters;            /* clusters in the grid */
  uint32_t mma_seq;              /* tcgen05_mma issues so far */
  int64_t work, work_limit;      /* interp_set_work_limit: done so far, the limit (0 = none) */
  int64_t timeout_ms;            /* interp_set_timeout: 0 = none */
  double deadline_ms;            /* time_ms() at which the run stops */
  uint32_t tick;                 /* ops since the clock was last read */
  irace *race;                   /* races between blocks in GMEM (NULL: not checked) */
} interp;

/* A fault of the interpreted kernel at op's script line (printf-style message). */
MGPU_NORET void interp_fault(const interp *I, const ir_op *op, const char *fmt, ...) MGPU_PRINTF(3, 4);
#define FAULT(I, op, ...) interp_fault((I), (op), __VA_ARGS__)

static inline ival *ival_of(iagent *a, uint32_t v) { return a->slots[v].data; }
/* The parameter a GMEM ref views (on its device), and its index in I->params. */
static inline int interp_pslot(const interp *I, const iref *r) { return r->dev * (int)I->np + r->root; }
static inline const iparam *interp_param(const interp *I, const iref *r) { return &I->params[interp_pslot(I, r)]; }

/* Race checks on SMEM element q (of `bytes` bytes) of block blk, accessed by
** agent a at op (interp.c).  Reads: generic ones fault on a TMA load that a
** has not awaited; async-proxy ones (TMA store source, wgmma operand) also
** on generic writes with no commit_smem by their writer since.  Writes:
** generic ones mark the bytes, TMA loads mark them with their barrier phase. */
enum { ISH_READ, ISH_ASYNC_READ, ISH_WRITE };
void interp_smem_access(interp *I, const iagent *a, const ir_op *op, int blk, const unsigned char *q, int bytes, int how);
/* A write to SMEM that a wgmma in flight reads (sh: its shadow). */
MGPU_NORET void interp_mma_overwrite(interp *I, const ir_op *op, const ishadow *sh);
void interp_smem_load_mark(interp *I, const ir_op *op, int blk, const unsigned char *q, int bytes, int bar_blk, int bar,
                           int64_t phase);

/* interp.c */
/* Address of element e (row-major in a view of shape vshape) of ref r;
** SMEM refs use the SMEM of block `blk`.  NULL for GMEM elements outside
** their parameter; an SMEM index out of range is a fault at op. */
unsigned char *interp_elem(const interp *I, const ir_op *op, const iref *r, const int64_t *vshape, int64_t e, int blk);
/* The block of rank `rank` in the cluster of block blk; a rank outside the cluster is a fault at op
** (`what` names it). */
int interp_cluster_block(interp *I, const ir_op *op, int blk, int64_t rank, const char *what);
/* The block whose SMEM an SMEM ref r used by block blk views (another of its cluster after cluster_ref). */
static inline int interp_smem_block(const interp *I, const iref *r, int blk) {
  return r->cta ? blk - blk % I->cblocks + r->cta - 1 : blk;
}
/* The name a user wrote for op, for messages. */
const char *interp_user_name(const ir_op *op);

/* Happens-before between agents, for the TMEM race checks: an agent's clock
** ticks at each of its arrivals, which carry its vector clock to the
** barrier; a wait takes in what the awaited phase's arrivals carried.
** (Arrivals of copies and tensor-core commits carry none.)
** interp_tmem_sync: the agent's clock when it called wait_load_tmem (load)
** or commit_tmem for the epoch-th time, recorded for the checks. */
void interp_tmem_sync(interp *I, iagent *a, bool load);

/* interp_tmem.c */
/* Every block's TMEM back to garbage, its race checks cleared (a cluster's start). */
void interp_tmem_init(interp *I);
/* Address of element e (row-major in a view of shape vshape) of TMEM ref r
** in block blk, and (sh not NULL) its cell's race record. */
unsigned char *interp_tmem_elem(const interp *I, const iref *r, const int64_t *vshape, int64_t e, int blk, itshadow **sh);
/* Race checks on one cell read (load: by a TMEM load, else by an MMA) or
** written (store: by a TMEM store, else by an MMA) at op by agent a. */
void interp_tmem_read_check(interp *I, const iagent *a, const ir_op *op, const itshadow *sh, bool load);
void interp_tmem_write_check(interp *I, const iagent *a, const ir_op *op, const itshadow *sh, bool store);
/* tmem_load and tmem_store. */
void interp_tmem_access(interp *I, iagent *a, const ir_op *op);

/* interp_async.c */
void interp_barriers_init(interp *I);
/* Ops that may wait return false (the agent stays on them) when they must. */
bool interp_barrier_wait(interp *I, iagent *a, const ir_op *op);
void interp_barrier_arrive(interp *I, iagent *a, const ir_op *op);
void interp_tma_load(interp *I, iagent *a, const ir_op *op);
void interp_async_store_smem(interp *I, iagent *a, const ir_op *op);
void interp_tma_store(interp *I, iagent *a, const ir_op *op);
void interp_wait_group(interp *I, iagent *a, int64_t n);
/* GMEM reads of parameter root: any SMEM->GMEM copy in flight into it?  Then
** root indices [lo, hi) per dim (hi NULL: the element lo) may not overlap one. */
bool interp_gmem_stores_pending(const interp *I, int slot);
void interp_gmem_read_check(interp *I, const iagent *a, const ir_op *op, int slot, int rank, const int64_t *lo,
                            const int64_t *hi);
void interp_wgmma(interp *I, iagent *a, const ir_op *op);
/* tcgen05_mma and tcgen05_commit: issued now, they land (the MMAs writing
** TMEM, then the commit's arrival) when a warpgroup waits on the commit's
** barrier. */
void interp_tcgen05_mma(interp *I, iagent *a, const ir_op *op);
void interp_tcgen05_commit(interp *I, iagent *a, const ir_op *op);
/* cluster_cancel: the arrivals, and from the cluster's first block the
** request, which takes the grid's next cluster (they start one at a time,
** in row-major order) and lands when a warpgroup waits; cancel_query
** decodes the answer. */
void interp_cluster_cancel(interp *I, iagent *a, const ir_op *op);
void interp_cancel_query(interp *I, iagent *a, const ir_op *op);
/* Finish this agent's wgmma groups until at most n are in flight. */
void interp_wgmma_wait(interp *I, iagent *a, int64_t n);
/* An agent ends: its SMEM->GMEM copies must have been awaited. */
void interp_agent_end(interp *I, iagent *a);

/* interp_race.c: races between blocks in GMEM (blk: the block of the
** running cluster; q: the element's address in parameter slot `slot`;
** nb: the bytes a write is about to store there, NULL for a read). */
void interp_race_init(interp *I);
void interp_race_free(interp *I);
void interp_race_cluster(interp *I);   /* a cluster starts */
void interp_race_access(interp *I, const ir_op *op, int blk, int slot, const unsigned char *q, const unsigned char *nb);
void interp_race_sync(interp *I, int blk, int slot, const unsigned char *q, bool acquire, bool release);
void interp_race_barrier(interp *I, int blk, bool arrive);   /* an mbarrier arrival, or a completed wait */
/* Drop whatever is still in flight when a cluster ends (copies nobody waited for). */
void interp_async_clear(interp *I);
/* Every agent waits: explain the deadlock. */
MGPU_NORET void interp_deadlock(interp *I);

#endif
