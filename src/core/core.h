/*
** core.h -- engine-wide utilities: allocation, growable arrays, string
** building, element types and diagnostics.  No Lua, no CUDA.
*/
#ifndef MGPU_CORE_H
#define MGPU_CORE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mgpu.h"

#define MGPU_NORET _Noreturn
#define MGPU_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define MGPU_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* -- Allocation (alloc.c) ------------------------------------------------ */

/* The allocator of a context (lua_Alloc contract, see mgpu.h). */
typedef struct mem_alloc {
  mgpu_alloc_fn fn;
  void *ud;
} mem_alloc;

void mem_alloc_default(mem_alloc *a);
/* Returns NULL on failure; size 0 returns NULL. */
void *mem_realloc(const mem_alloc *a, void *p, size_t osize, size_t nsize);
void mem_free(const mem_alloc *a, void *p, size_t size);
/* Zeroed memory or NULL. */
void *mem_calloc(const mem_alloc *a, size_t size);

/* Arena: many small zeroed allocations released together. */
typedef struct mem_chunk mem_chunk;
typedef struct mem_arena {
  const mem_alloc *alloc;
  mem_chunk *head;
} mem_arena;

void mem_arena_init(mem_arena *ar, const mem_alloc *a);
void *mem_arena_alloc(mem_arena *ar, size_t size);   /* zeroed, 16-aligned, NULL on failure */
char *mem_arena_strdup(mem_arena *ar, const char *s);
void mem_arena_free(mem_arena *ar);

/* Growable array of T: struct { T *v; uint32_t n, cap; }.  vec_grow makes
** room for `extra` more elements and returns false on allocation failure. */
#define VEC(T) struct { T *v; uint32_t n, cap; }
bool vec_grow_(const mem_alloc *a, void **v, uint32_t *cap, uint32_t need, size_t esz);
#define vec_reserve(a, vec, extra) \
  ((vec)->n + (extra) <= (vec)->cap || \
   vec_grow_((a), (void **)&(vec)->v, &(vec)->cap, (vec)->n + (extra), sizeof(*(vec)->v)))
#define vec_free(a, vec) \
  (mem_free((a), (vec)->v, (size_t)(vec)->cap * sizeof(*(vec)->v)), (vec)->v = NULL, (vec)->n = (vec)->cap = 0)

/* -- String building (strbuf.c) ------------------------------------------ */

/* A growing NUL-terminated string.  On allocation failure `oom` is set and
** further appends are ignored, so callers check once at the end. */
typedef struct strbuf {
  const mem_alloc *alloc;
  char *s;
  size_t len, cap;
  bool oom;
} strbuf;

void sb_init(strbuf *sb, const mem_alloc *a);
void sb_free(strbuf *sb);
void sb_putc(strbuf *sb, char c);
void sb_puts(strbuf *sb, const char *s);
void sb_putn(strbuf *sb, const char *s, size_t n);
void sb_printf(strbuf *sb, const char *fmt, ...) MGPU_PRINTF(2, 3);
void sb_vprintf(strbuf *sb, const char *fmt, va_list ap);
const char *sb_str(const strbuf *sb);   /* "" when empty */
/* Detach the text (caller frees with mem_free(a, p, len + 1)). */
char *sb_take(strbuf *sb, size_t *len);

/* -- Element types (dtype.c) --------------------------------------------- */

typedef enum dt_class { DT_PRED, DT_SINT, DT_UINT, DT_FLOAT } dt_class;

/*  name      enum          bytes  bits  class     ptx    ptx-bits  ORDER DTYPE */
#define DT_DEF(_) \
  _(pred,     MGPU_PRED,     1,    1,   DT_PRED,  "pred", "pred") \
  _(i8,       MGPU_I8,       1,    8,   DT_SINT,  "s8",   "b8")   \
  _(i16,      MGPU_I16,      2,   16,   DT_SINT,  "s16",  "b16")  \
  _(i32,      MGPU_I32,      4,   32,   DT_SINT,  "s32",  "b32")  \
  _(i64,      MGPU_I64,      8,   64,   DT_SINT,  "s64",  "b64")  \
  _(u8,       MGPU_U8,       1,    8,   DT_UINT,  "u8",   "b8")   \
  _(u16,      MGPU_U16,      2,   16,   DT_UINT,  "u16",  "b16")  \
  _(u32,      MGPU_U32,      4,   32,   DT_UINT,  "u32",  "b32")  \
  _(u64,      MGPU_U64,      8,   64,   DT_UINT,  "u64",  "b64")  \
  _(f16,      MGPU_F16,      2,   16,   DT_FLOAT, "f16",  "b16")  \
  _(bf16,     MGPU_BF16,     2,   16,   DT_FLOAT, "bf16", "b16")  \
  _(f32,      MGPU_F32,      4,   32,   DT_FLOAT, "f32",  "b32")  \
  _(f64,      MGPU_F64,      8,   64,   DT_FLOAT, "f64",  "b64")  \
  _(f8e4m3,   MGPU_F8E4M3,   1,    8,   DT_FLOAT, "e4m3", "b8")   \
  _(f8e5m2,   MGPU_F8E5M2,   1,    8,   DT_FLOAT, "e5m2", "b8")

typedef struct dt_info {
  const char *name;
  uint8_t bytes, bits;
  uint8_t cls;            /* dt_class */
  const char *ptx;        /* typed PTX suffix */
  const char *ptxbits;    /* untyped PTX suffix */
} dt_info;

extern const dt_info dt_table[MGPU_DTYPE_COUNT];
#define dt_valid(t) ((t) >= 0 && (t) < MGPU_DTYPE_COUNT)
#define dt_bytes(t) (dt_table[t].bytes)
#define dt_name(t) (dt_table[t].name)
#define dt_isfloat(t) (dt_table[t].cls == DT_FLOAT)
#define dt_isint(t) (dt_table[t].cls == DT_SINT || dt_table[t].cls == DT_UINT)
#define dt_issigned(t) (dt_table[t].cls == DT_SINT)
int dt_lookup(const char *name);           /* -1 when unknown */

/* Round a double to the nearest value of a float dtype (RNE, saturating
** f8 formats to their largest finite value as cvt.satfinite does), or wrap
** an integer value to the dtype's width.  Exactly what a store of `x` into
** an element of that dtype and a load back yields. */
double dt_round(int dtype, double x);
/* Encode/decode one element in memory. */
void dt_store(int dtype, void *dst, double x);
double dt_load(int dtype, const void *src);
/* Integer variants that keep all 64 bits. */
void dt_store_int(int dtype, void *dst, int64_t x);
int64_t dt_load_int(int dtype, const void *src);
int64_t dt_wrap_int(int dtype, int64_t x);
/* Integer dtype dt holds x exactly (u64 takes any bit pattern, pred any value). */
bool dt_int_fits(int dtype, int64_t x);
/* "i32 holds integers from -2147483648 to 2147483647", for messages. */
void dt_range_str(int dtype, char *out, size_t n);
/* Why x does not fit dtype ("not an integer", "out of range"), or NULL when
** it does: integer dtypes take finite integers in their range; floats
** (which round, f8 saturating) and pred take any. */
const char *dt_misfit(int dtype, double x);
/* x as the shortest text that reads back as it ("2.7", "1e+10", "nan"). */
void dt_num_str(double x, char *out, size_t n);

uint16_t dt_f32_to_bf16(float f);
float dt_bf16_to_f32(uint16_t h);
uint16_t dt_f32_to_f16(float f);
float dt_f16_to_f32(uint16_t h);

/* -- Diagnostics (diag.c, errmsg.h) -------------------------------------- */

/* Stable error identifiers with their status and message format. */
#define ERRDEF(name, status, fmt) ERR_##name,
typedef enum err_id {
#include "errmsg.h"
  ERR__COUNT
} err_id;
#undef ERRDEF

/* Where one failing operation reports its error.  `jmp`, when set, lets
** deep code (passes, lowering) bail out with diag_throw; API entry points
** set it and turn the jump into a status. */
typedef struct diag {
  mgpu_status status;
  err_id id;
  char msg[2048];
  jmp_buf *jmp;
} diag;

void diag_clear(diag *d);
/* Format the message of `id` ("loc: text" when loc is non-empty) into d and
** return its status. */
mgpu_status diag_set(diag *d, err_id id, const char *loc, ...);
mgpu_status diag_vset(diag *d, err_id id, const char *loc, va_list ap);
/* diag_set, then longjmp to d->jmp (which must be set). */
MGPU_NORET void diag_throw(diag *d, err_id id, const char *loc, ...);
/* Append a line of context ("\n  ...") to the current message. */
void diag_note(diag *d, const char *fmt, ...) MGPU_PRINTF(2, 3);

/* Internal invariant checks: report file:line and abort. */
MGPU_NORET void mgpu_panic(const char *file, int line, const char *msg);
#define mgpu_assert(c) ((c) ? (void)0 : mgpu_panic(__FILE__, __LINE__, #c))
#define mgpu_unreachable() mgpu_panic(__FILE__, __LINE__, "unreachable")

/* -- Hashing, time and file descriptors (util.c) -------------------------- */

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);
double time_ms(void);   /* monotonic milliseconds */
void sleep_ms(long ms);  /* at least ms milliseconds, signals or not */
/* Exactly n bytes (retrying short and interrupted calls); false at end of
** file or on an error (errno says which; EIO for a write of 0 bytes). */
bool fd_read_all(int fd, void *p, size_t n);
bool fd_write_all(int fd, const void *p, size_t n);

#endif
