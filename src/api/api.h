/*
** api.h -- what the public handles of mgpu.h are.  Every entry point checks
** its handle, enters the context (one thread at a time), clears the last
** error and never lets a longjmp escape.
*/
#ifndef MGPU_API_H
#define MGPU_API_H

#include <stdatomic.h>

#include "../interp/interp.h"
#include "../passes/pass.h"
#include "../ptx/ptx.h"
#include "../runtime/drv.h"

enum { MAGIC_CTX = 0x6d637478, MAGIC_BUF = 0x6d627566, MAGIC_BLD = 0x6d626c64, MAGIC_KER = 0x6d6b6572 };

struct mgpu_ctx {
  uint32_t magic;
  mem_alloc alloc;
  atomic_flag busy;
  int refs;                     /* the context itself + every live handle made from it */
  diag d;
  mgpu_device_info info;        /* info.mode is the effective mode */
  drv *drv;                     /* NULL unless mode is GPU */
  CUevent ev[2];
  double timer_start;           /* host clock when not on a GPU */
  struct blas *blas;            /* cuBLAS, loaded by the first mgpu_blas_matmul (api_blas.c) */
  struct dist *dist;            /* the job this context is a device of (api_dist.c), or NULL */
  int32_t nsym;                 /* symmetric buffers made so far */
  struct {                      /* DLPack exports whose deleter ran, oldest first (api_dlpack.c) */
    struct export_rec *head, *tail;
    int n;
  } dl_released;
  bool serial_launch;           /* MGPU_PDL=0, or the driver refused it: no programmatic dependent launch */
  struct {                      /* kernels in flight, faults and the watchdog (api_ctx.c) */
    int64_t timeout_ms;         /* MGPU_TIMEOUT_MS / mgpu_ctx_set_timeout; 0: no bound */
    CUevent done;               /* recorded after each GPU launch while a timeout is set */
    bool in_flight;             /* `done` not yet seen complete */
    double launched_ms;         /* when the last GPU kernel was launched */
    char kernel[64];            /* the last kernel launched on the GPU */
    bool lost;                  /* a kernel faulted or ran past the timeout: only mgpu_ctx_recover helps */
    char why[320];              /* what was lost, for the refusals that follow */
    uint32_t gen;               /* bumped by each recovery: older buffers and modules are gone */
  } run;
};

struct mgpu_buffer {
  uint32_t magic;
  int refs;
  mgpu_ctx *ctx;
  uint64_t size;
  uint64_t addr;                /* device pointer, or host pointer without a GPU */
  bool owned;                   /* freed with the buffer */
  void (*on_release)(void *);   /* called when the last reference goes (DLPack imports) */
  void *on_release_arg;
  int32_t sym;                  /* symmetric allocation number, or -1 */
  uint32_t gen;                 /* ctx->run.gen when made: memory of an older one is gone */
};

struct mgpu_builder {
  uint32_t magic;
  mgpu_ctx *ctx;
  ir_builder *b;
};

struct mgpu_kernel {
  uint32_t magic;
  int refs;
  mgpu_ctx *ctx;
  ir_kernel *ir;
  kinfo ki;
  char *ir_text;
  size_t ir_len;
  char *ptx;
  size_t ptx_len;
  ptx_tmaps tmaps;          /* tensor maps each launch encodes (after the parameters) */
  CUmodule mod;
  CUfunction fn;
  uint32_t mod_gen;         /* ctx->run.gen when mod was loaded */
  bool pdl;                 /* mod's PTX waits for the kernels before it: launches allow PDL */
  mgpu_kernel_resources res;
  int32_t jit_maxreg;       /* mgpu_kernel_set_jit_options: 0 = default */
  int32_t jit_opt;          /* optimization level + 1; 0 = default */
  char *ptx_override;       /* mgpu_kernel_set_ptx: the PTX loaded instead of k->ptx (no cache), or NULL */
  size_t ptx_override_len;
  struct {                  /* what the kernel does with other devices (api_dist.c), found at the first launch */
    bool known, collective, multimem;
    uint8_t remote[256 / 8];  /* parameters viewed on other devices (remote, multimem), a bit each */
  } devices;
};

/* api_buffer.c: a buffer record over existing memory (one reference). */
mgpu_status api_buffer_new(mgpu_ctx *ctx, uint64_t n, uint64_t addr, bool owned, mgpu_buffer **out);
/* api_buffer.c: a buffer record in out over n bytes at addr, for one call (a launch argument
** given by address): nothing to release, and no reference on ctx. */
void api_buffer_view(mgpu_ctx *ctx, uint64_t addr, uint64_t n, mgpu_buffer *out);

/* api_kernel.c: scalar argument a of a parameter of dtype dt as the 8 bytes
** the kernel parameter holds (narrow integers as 32 bits); false when an
** integer parameter's value is not an integer in its range. */
bool api_scalar_bits(int dt, const mgpu_arg *a, uint64_t *bits);

/* api_dist.c */
/* The context's job ends (it leaves its world; NVSHMEM is finalized). */
void api_dist_close(mgpu_ctx *ctx);
/* A launch of kernel k (already compiled and checked) in a world: waits
** for the same launch on every device and runs them together. */
mgpu_status api_dist_launch(mgpu_kernel *k, const mgpu_launch_args *a);
/* Kernel k uses other devices (cached). */
bool api_dist_collective(mgpu_kernel *k);
/* For GPU launches: byte offset from a local symmetric address to device d's (0 without a job). */
int64_t api_dist_delta(const mgpu_ctx *ctx, int d);
/* GPU launches: kernels with multimem ops are refused (no multicast objects exist). */
mgpu_status api_dist_multicast(mgpu_kernel *k);
/* Every parameter a remote op views must be a symmetric buffer; else an error naming it. */
mgpu_status api_dist_check_args(mgpu_kernel *k, const mgpu_launch_args *a);

/* api_dlpack.c: frees the context's released DLPack export records. */
void api_dlpack_close(mgpu_ctx *ctx);

/* api_blas.c: frees the context's cuBLAS state. */
void api_blas_close(mgpu_ctx *ctx);

/* api_ctx.c */
bool api_enter(mgpu_ctx *c);
void api_leave(mgpu_ctx *c);
void api_ref(mgpu_ctx *c);
void api_unref(mgpu_ctx *c);
bool api_gpu(const mgpu_ctx *c);   /* kernels and buffers live on a GPU */
/* Before driver work on a GPU context (callers have entered it): an error
** when the context is lost. */
mgpu_status api_usable(mgpu_ctx *c);
/* Before waiting for the GPU: api_usable, then with a timeout set, waits for
** the kernels in flight; one still running after the timeout loses the
** context. */
mgpu_status api_ready(mgpu_ctx *c);
/* A failed driver call `what`: the error, and when it is fatal (a kernel
** faulted) the context is lost and the message names the last kernel. */
mgpu_status api_drv_fail(mgpu_ctx *c, const char *what, CUresult r);
/* A GPU launch of kernel `name` on `stream` was queued. */
mgpu_status api_launched(mgpu_ctx *c, const char *name, CUstream stream);
/* Buffer b's memory is gone with a lost context (an error set), or usable
** (api_usable included). */
mgpu_status api_buffer_live(mgpu_buffer *b);

/* Check a handle; on failure return from the calling function. */
#define API_CHECK(h, m) do { if (!(h) || (h)->magic != (m)) return MGPU_ERR_ARG; } while (0)

/* api_buffer.c: host memory of a buffer for the interpreter (copied from the
** device when the context runs on a GPU). */
mgpu_status api_buffer_host_copy(mgpu_buffer *b, void **host);
mgpu_status api_buffer_host_writeback(mgpu_buffer *b, void *host);
void api_buffer_host_free(mgpu_buffer *b, void *host);

#endif
