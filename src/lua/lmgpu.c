/*
** lmgpu.c -- the Lua 5.4 implementation of the core interface
** (`require "mgpu.core"`), written only against mgpu.h, as lauxlib is
** written only against lua.h.  lua/mgpu/ffi.lua implements the same table
** for LuaJIT; the front end (lua/mgpu) cannot tell them apart.
**
** Conventions: handles are full userdata with __gc; failures raise the
** engine's message as a Lua error without position (the front end adds
** the user's location where the engine has none).
*/
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lmgpu.h"

typedef struct handle {
  void *h;
  mgpu_ctx *ctx;     /* for error messages */
} handle;

#define T_CTX "mgpu.ctx"
#define T_BUF "mgpu.buffer"
#define T_BLD "mgpu.builder"
#define T_KER "mgpu.kernel"
#define T_HOST "mgpu.host"

static int fail(lua_State *L, mgpu_ctx *ctx, mgpu_status s) {
  const char *m = mgpu_errmsg(ctx);
  lua_pushstring(L, m && *m ? m : "mgpu error");
  (void)s;
  return lua_error(L);
}

#define CHECK(L, ctx, call) do { mgpu_status s_ = (call); if (s_) return fail(L, (ctx), s_); } while (0)

static handle *newh(lua_State *L, const char *tname, void *h, mgpu_ctx *ctx) {
  handle *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->h = h;
  u->ctx = ctx;
  luaL_setmetatable(L, tname);
  return u;
}

static handle *geth(lua_State *L, int i, const char *tname) {
  handle *u = luaL_checkudata(L, i, tname);
  if (!u->h) luaL_argerror(L, i, "handle already released");
  return u;
}

static int gc_ctx(lua_State *L) { handle *u = luaL_checkudata(L, 1, T_CTX); mgpu_ctx_release(u->h); u->h = NULL; return 0; }
static int gc_buf(lua_State *L) { handle *u = luaL_checkudata(L, 1, T_BUF); mgpu_buffer_release(u->h); u->h = NULL; return 0; }
static int gc_bld(lua_State *L) { handle *u = luaL_checkudata(L, 1, T_BLD); mgpu_builder_release(u->h); u->h = NULL; return 0; }
static int gc_ker(lua_State *L) { handle *u = luaL_checkudata(L, 1, T_KER); mgpu_kernel_release(u->h); u->h = NULL; return 0; }
static int gc_host(lua_State *L) { handle *u = luaL_checkudata(L, 1, T_HOST); mgpu_host_release(u->h); u->h = NULL; return 0; }

/* Array of integers from a Lua table (or nil), allocated as userdata on
** the stack so errors cannot leak it. */
static int64_t *int_array(lua_State *L, int i, int *n) {
  *n = 0;
  if (lua_isnoneornil(L, i)) return NULL;
  luaL_checktype(L, i, LUA_TTABLE);
  int len = (int)luaL_len(L, i);
  int64_t *a = lua_newuserdatauv(L, sizeof(int64_t) * (size_t)(len ? len : 1), 0);
  for (int j = 0; j < len; j++) {
    lua_geti(L, i, j + 1);
    int ok;
    lua_Integer v = lua_tointegerx(L, -1, &ok);
    if (!ok) luaL_error(L, "element %d of argument %d is not an integer", j + 1, i);
    a[j] = v;
    lua_pop(L, 1);
  }
  lua_replace(L, i);   /* keep it anchored in the argument slot */
  *n = len;
  return a;
}

static int mode_of(const char *s) {
  if (!s || !strcmp(s, "auto")) return MGPU_MODE_AUTO;
  if (!strcmp(s, "gpu")) return MGPU_MODE_GPU;
  if (!strcmp(s, "interpret")) return MGPU_MODE_INTERPRET;
  if (!strcmp(s, "compile")) return MGPU_MODE_COMPILE_ONLY;
  return -1;
}

static const char *const mode_names[] = { "auto", "gpu", "interpret", "compile" };

static int dtype_arg(lua_State *L, int i) {
  const char *n = luaL_checkstring(L, i);
  int d = mgpu_dtype_from_name(n);
  if (d < 0) luaL_error(L, "unknown dtype '%s'", n);
  return d;
}

/* -- Module-level ------------------------------------------------------------------ */

static int l_version(lua_State *L) { lua_pushstring(L, mgpu_version()); return 1; }
static int l_engine_id(lua_State *L) { lua_pushstring(L, mgpu_engine_id()); return 1; }
static int l_abi(lua_State *L) { lua_pushinteger(L, mgpu_abi_version()); return 1; }
static int l_kernel_cache_dir(lua_State *L) { lua_pushstring(L, mgpu_kernel_cache_dir()); return 1; }

static int l_dtype_size(lua_State *L) {
  int d = mgpu_dtype_from_name(luaL_checkstring(L, 1));
  if (d < 0) return 0;
  lua_pushinteger(L, mgpu_dtype_size(d));
  return 1;
}

/* An error object that is no string, for a message: mgpu.compat's
** description ({ code = 7 }) when the front end loads, else its type. */
static const char *describe_error(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "mgpu.compat");
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) {
    lua_getfield(L, -1, "describe");
    lua_pushvalue(L, 1);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) return lua_tostring(L, -1);
  }
  return luaL_typename(L, 1);
}

int lmgpu_msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) {   /* error({ code = 7 }): where it was raised, and what */
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    lua_Debug d;
    char at[256] = "";
    for (int level = 1; !*at && lua_getstack(L, level, &d); level++)   /* the innermost script line */
      if (lua_getinfo(L, "Sl", &d) && d.currentline > 0 && strncmp(d.short_src, "[mgpu]", 6) != 0)
        snprintf(at, sizeof at, "%s:%d: ", d.short_src, d.currentline);
    const char *what = describe_error(L);
    msg = lua_pushfstring(L, "%sthe script raised a non-string error: %s", at, what);
  }
  const char *tb = getenv("MGPU_TRACEBACK");
  if (tb && *tb && strcmp(tb, "0")) luaL_traceback(L, L, msg, 1);
  return 1;
}

void lmgpu_push_ctx(lua_State *L, mgpu_ctx *ctx) {
  mgpu_ctx_retain(ctx);
  newh(L, T_CTX, ctx, ctx);
}

mgpu_kernel *lmgpu_tokernel(lua_State *L, int idx) {
  handle *u = luaL_testudata(L, idx, T_KER);
  return u ? u->h : NULL;
}

static int l_ctx_new(lua_State *L) {
  int mode = mode_of(luaL_optstring(L, 1, "auto"));
  if (mode < 0) return luaL_argerror(L, 1, "mode must be auto, gpu, interpret or compile");
  mgpu_ctx_options o = { mode, (int32_t)luaL_optinteger(L, 2, 0), NULL, NULL };
  mgpu_ctx *ctx = NULL;
  if (mgpu_ctx_create(&o, &ctx)) return fail(L, NULL, MGPU_ERR_ARG);
  newh(L, T_CTX, ctx, ctx);
  return 1;
}

static int l_ctx_set_timeout(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  CHECK(L, u->ctx, mgpu_ctx_set_timeout(u->ctx, (int64_t)luaL_checkinteger(L, 2)));
  return 0;
}

static int l_ctx_lost(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  lua_pushboolean(L, mgpu_ctx_lost(u->ctx));
  return 1;
}

static int l_ctx_recover(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  CHECK(L, u->ctx, mgpu_ctx_recover(u->ctx));
  return 0;
}

static int l_device(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  mgpu_device_info d;
  CHECK(L, u->ctx, mgpu_device_query(u->ctx, &d));
  lua_createtable(L, 0, 13);
  lua_pushstring(L, mode_names[d.mode]); lua_setfield(L, -2, "mode");
  lua_pushinteger(L, d.sm_count); lua_setfield(L, -2, "sm_count");
  lua_pushinteger(L, d.cc_major); lua_setfield(L, -2, "cc_major");
  lua_pushinteger(L, d.cc_minor); lua_setfield(L, -2, "cc_minor");
  lua_pushinteger(L, d.smem_per_block); lua_setfield(L, -2, "smem_per_block");
  lua_pushinteger(L, d.driver_version); lua_setfield(L, -2, "driver_version");
  lua_pushinteger(L, d.l2_bytes); lua_setfield(L, -2, "l2_bytes");
  lua_pushinteger(L, d.clock_khz); lua_setfield(L, -2, "clock_khz");
  lua_pushinteger(L, d.global_mem); lua_setfield(L, -2, "global_mem");
  lua_pushstring(L, d.name); lua_setfield(L, -2, "name");
  lua_pushstring(L, d.reason); lua_setfield(L, -2, "reason");
  lua_pushinteger(L, d.device); lua_setfield(L, -2, "device");
  lua_pushinteger(L, d.target); lua_setfield(L, -2, "target");
  return 1;
}

/* -- Several devices ------------------------------------------------------------------ */

/* world_join(ctx, world, rank): world is a light userdata from the embedder (the CLI). */
static int l_world_join(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  luaL_checktype(L, 2, LUA_TLIGHTUSERDATA);
  CHECK(L, u->ctx, mgpu_world_join(u->ctx, lua_touserdata(L, 2), (int32_t)luaL_checkinteger(L, 3)));
  return 0;
}

static int l_world_leave(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  CHECK(L, u->ctx, mgpu_world_leave(u->ctx));
  return 0;
}

static int l_dist_uid(lua_State *L) {
  uint8_t uid[128];
  if (mgpu_dist_uniqueid(uid, (int32_t)sizeof uid))
    return luaL_error(L, "cannot make an NVSHMEM unique id (libnvshmem_host.so.3 missing or failing; MGPU_NVSHMEM names it)");
  lua_pushlstring(L, (const char *)uid, sizeof uid);
  return 1;
}

static int l_dist_init(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  size_t n = 0;
  const char *uid = luaL_checklstring(L, 4, &n);
  CHECK(L, u->ctx, mgpu_dist_init(u->ctx, (int32_t)luaL_checkinteger(L, 2), (int32_t)luaL_checkinteger(L, 3),
                                   (const uint8_t *)uid, (int32_t)n));
  return 0;
}

/* dist_rendezvous(ctx, rendezvous, key, rank, count, timeout_ms, uid): rank 0's uid (which it passes) on every rank. */
static int l_dist_rendezvous(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  int32_t rank = (int32_t)luaL_checkinteger(L, 4);
  uint8_t uid[128] = { 0 };
  size_t n = 0;
  const char *mine = luaL_optlstring(L, 7, NULL, &n);
  if (mine) memcpy(uid, mine, n < sizeof uid ? n : sizeof uid);
  CHECK(L, u->ctx, mgpu_dist_rendezvous(u->ctx, luaL_checkstring(L, 2), luaL_checkstring(L, 3), rank,
                                        (int32_t)luaL_checkinteger(L, 5), (int32_t)luaL_checkinteger(L, 6), uid,
                                        (int32_t)sizeof uid));
  lua_pushlstring(L, (const char *)uid, sizeof uid);
  return 1;
}

static int l_dist_info(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  int32_t rank = 0, count = 1;
  CHECK(L, u->ctx, mgpu_dist_info(u->ctx, &rank, &count));
  lua_pushinteger(L, rank);
  lua_pushinteger(L, count);
  return 2;
}

static int l_dist_barrier(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  CHECK(L, u->ctx, mgpu_dist_barrier(u->ctx));
  return 0;
}

static int alloc_with(lua_State *L, mgpu_status (*alloc)(mgpu_ctx *, uint64_t, mgpu_buffer **));
/* core.symmetric(ctx, nbytes, name): name says what the array is, for messages. */
static int l_symmetric(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  lua_Integer n = luaL_checkinteger(L, 2);
  if (n < 0) return luaL_argerror(L, 2, "size must not be negative");
  mgpu_buffer *b = NULL;
  CHECK(L, u->ctx, mgpu_symmetric_alloc_named(u->ctx, (uint64_t)n, luaL_optstring(L, 3, NULL), &b));
  newh(L, T_BUF, b, u->ctx);
  return 1;
}

static int l_buffer_symmetric(lua_State *L) {
  handle *u = geth(L, 1, T_BUF);
  lua_pushinteger(L, mgpu_buffer_symmetric(u->h));
  return 1;
}

static int l_dist_table(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  mgpu_buffer *b = NULL;
  CHECK(L, u->ctx, mgpu_dist_table(u->ctx, &b));
  newh(L, T_BUF, b, u->ctx);
  return 1;
}

/* -- DLPack -------------------------------------------------------------------------- */

static int l_dlpack_export(lua_State *L) {
  lua_settop(L, 3);
  handle *u = geth(L, 1, T_BUF);
  int dt = dtype_arg(L, 2);
  int rank;
  int64_t *shape = int_array(L, 3, &rank);
  void *t = NULL;
  CHECK(L, u->ctx, mgpu_dlpack_export(u->h, dt, shape, rank, &t));
  lua_pushlightuserdata(L, t);
  return 1;
}

/* Argument i: a DLManagedTensor pointer (a light userdata), else an error naming `what`. */
static void *dlpack_arg(lua_State *L, int i, const char *what) {
  if (!lua_islightuserdata(L, i))
    luaL_error(L, "%s: expected a DLPack tensor (a DLManagedTensor pointer), got %s", what, luaL_typename(L, i));
  return lua_touserdata(L, i);
}

static int l_dlpack_import(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  void *t = dlpack_arg(L, 2, "from_dlpack");
  mgpu_buffer *b = NULL;
  mgpu_value_info vi;
  CHECK(L, u->ctx, mgpu_dlpack_import(u->ctx, t, &b, &vi));
  newh(L, T_BUF, b, u->ctx);
  lua_pushstring(L, mgpu_dtype_name(vi.dtype));
  lua_createtable(L, vi.rank, 0);
  for (int i = 0; i < vi.rank; i++) { lua_pushinteger(L, vi.shape[i]); lua_rawseti(L, -2, i + 1); }
  return 3;
}

static int l_dlpack_free(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  void *t = dlpack_arg(L, 2, "dlpack_free");
  CHECK(L, u->ctx, mgpu_dlpack_free(u->ctx, t));
  return 0;
}

static int l_sync(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  CHECK(L, u->ctx, mgpu_synchronize(u->ctx));
  return 0;
}

static int l_empty_cache(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  CHECK(L, u->ctx, mgpu_empty_cache(u->ctx));
  return 0;
}

static int l_timer_start(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  CHECK(L, u->ctx, mgpu_timer_start(u->ctx));
  return 0;
}

static int l_timer_stop(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  double ms = 0;
  CHECK(L, u->ctx, mgpu_timer_stop(u->ctx, &ms));
  lua_pushnumber(L, ms);
  return 1;
}

/* core.blas_matmul(ctx, dtype, m, n, k, a, b, c [, stream]): cuBLAS, c = a @ b (row-major) */
static int l_blas_matmul(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  int dt = dtype_arg(L, 2);
  lua_Integer m = luaL_checkinteger(L, 3), n = luaL_checkinteger(L, 4), k = luaL_checkinteger(L, 5);
  handle *a = geth(L, 6, T_BUF), *b = geth(L, 7, T_BUF), *c = geth(L, 8, T_BUF);
  CHECK(L, u->ctx, mgpu_blas_matmul(u->ctx, dt, m, n, k, a->h, b->h, c->h, (uint64_t)luaL_optinteger(L, 9, 0)));
  return 0;
}

/* core.blas_matmul_f8(ctx, a_dtype, b_dtype, m, n, k, a, b, c, a_scale, b_scale [, stream]): cuBLAS's
** FP8 matmul, c = a_scale * b_scale * (a @ b^T) (row-major, b n x k, c bf16) */
static int l_blas_matmul_f8(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  int at = dtype_arg(L, 2), bt = dtype_arg(L, 3);
  lua_Integer m = luaL_checkinteger(L, 4), n = luaL_checkinteger(L, 5), k = luaL_checkinteger(L, 6);
  handle *a = geth(L, 7, T_BUF), *b = geth(L, 8, T_BUF), *c = geth(L, 9, T_BUF);
  handle *sa = geth(L, 10, T_BUF), *sb = geth(L, 11, T_BUF);
  CHECK(L, u->ctx, mgpu_blas_matmul_f8(u->ctx, at, bt, m, n, k, a->h, b->h, c->h, sa->h, sb->h,
                                       (uint64_t)luaL_optinteger(L, 12, 0)));
  return 0;
}

/* -- Buffers ----------------------------------------------------------------------- */

/* core.buffer(ctx, nbytes): a buffer from `alloc`. */
static int alloc_with(lua_State *L, mgpu_status (*alloc)(mgpu_ctx *, uint64_t, mgpu_buffer **)) {
  handle *u = geth(L, 1, T_CTX);
  lua_Integer n = luaL_checkinteger(L, 2);
  if (n < 0) return luaL_argerror(L, 2, "size must not be negative");
  mgpu_buffer *b = NULL;
  CHECK(L, u->ctx, alloc(u->ctx, (uint64_t)n, &b));
  newh(L, T_BUF, b, u->ctx);
  return 1;
}

static int l_buffer(lua_State *L) { return alloc_with(L, mgpu_buffer_alloc); }

static int l_buffer_size(lua_State *L) {
  handle *u = geth(L, 1, T_BUF);
  lua_pushinteger(L, (lua_Integer)mgpu_buffer_size(u->h));
  return 1;
}

static int l_buffer_address(lua_State *L) {
  handle *u = geth(L, 1, T_BUF);
  lua_pushinteger(L, (lua_Integer)mgpu_buffer_address(u->h));
  return 1;
}

static int l_buffer_fill(lua_State *L) {
  handle *u = geth(L, 1, T_BUF);
  static const char *const kinds[] = { "value", "iota", "uniform", "normal", NULL };
  mgpu_fill f;
  f.kind = luaL_checkoption(L, 2, NULL, kinds);
  f.dtype = dtype_arg(L, 3);
  f.count = (uint64_t)luaL_checkinteger(L, 4);
  f.a = luaL_optnumber(L, 5, 0);
  f.b = luaL_optnumber(L, 6, 0);
  f.seed = (uint64_t)luaL_optinteger(L, 7, 0);
  CHECK(L, u->ctx, mgpu_buffer_fill(u->h, &f));
  return 0;
}

/* Integer dtypes (not pred) travel as exact 64-bit integers. */
static bool int_dtype(int dt) {
  return dt != MGPU_PRED && dt != MGPU_F16 && dt != MGPU_BF16 && dt != MGPU_F32 && dt != MGPU_F64 &&
         dt != MGPU_F8E4M3 && dt != MGPU_F8E5M2;
}

static int l_buffer_get(lua_State *L) {
  handle *u = geth(L, 1, T_BUF);
  int dt = dtype_arg(L, 2);
  lua_Integer first = luaL_checkinteger(L, 3), count = luaL_checkinteger(L, 4);
  if (first < 0 || count < 0) return luaL_error(L, "buffer_get: negative range");
  if (count > (1 << 26)) return luaL_error(L, "buffer_get: at most 2^26 elements at a time");
  size_t n = (size_t)(count ? count : 1);
  bool isint = int_dtype(dt);
  void *tmp = lua_newuserdatauv(L, isint ? sizeof(int64_t) * n : sizeof(double) * n, 0);
  if (isint) CHECK(L, u->ctx, mgpu_buffer_get_i64(u->h, dt, (uint64_t)first, (uint64_t)count, tmp));
  else CHECK(L, u->ctx, mgpu_buffer_get_f64(u->h, dt, (uint64_t)first, (uint64_t)count, tmp));
  lua_createtable(L, (int)count, 0);
  for (lua_Integer i = 0; i < count; i++) {
    if (isint) {
      int64_t v = ((int64_t *)tmp)[i];
      /* u64 values from 2^63 up have no Lua integer: they come back as floats */
      if (dt == MGPU_U64 && v < 0) lua_pushnumber(L, (lua_Number)(uint64_t)v);
      else lua_pushinteger(L, (lua_Integer)v);
    } else if (dt == MGPU_PRED) lua_pushboolean(L, ((double *)tmp)[i] != 0);
    else lua_pushnumber(L, ((double *)tmp)[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* Elements i0 .. i1-1 of the table at index 4 into buffer u from `first`:
** integers exactly (set_i64), the rest as doubles. */
static int set_run(lua_State *L, handle *u, int dt, lua_Integer first, lua_Integer i0, lua_Integer i1, bool exact,
                   void *tmp) {
  uint64_t at = (uint64_t)(first + i0), n = (uint64_t)(i1 - i0);
  if (exact) CHECK(L, u->ctx, mgpu_buffer_set_i64(u->h, dt, at, n, (int64_t *)tmp + i0));
  else CHECK(L, u->ctx, mgpu_buffer_set_f64(u->h, dt, at, n, (double *)tmp + i0));
  return 0;
}

static int l_buffer_set(lua_State *L) {
  handle *u = geth(L, 1, T_BUF);
  int dt = dtype_arg(L, 2);
  lua_Integer first = luaL_checkinteger(L, 3);
  luaL_checktype(L, 4, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 4);
  if (first < 0) return luaL_error(L, "buffer_set: negative offset");
  /* each element as a double or (integer dtypes) an int64_t in the same 8 bytes; exact[i]: which */
  union { double d; int64_t i; } *tmp = lua_newuserdatauv(L, sizeof *tmp * (size_t)(n ? n : 1), 0);
  bool *exact = lua_newuserdatauv(L, (size_t)(n ? n : 1), 0);
  bool isint = int_dtype(dt);
  for (lua_Integer i = 0; i < n; i++) {
    lua_geti(L, 4, i + 1);
    int isnum;
    lua_Integer v = lua_tointegerx(L, -1, &isnum);
    exact[i] = isint && lua_isinteger(L, -1) && !(dt == MGPU_U64 && v < 0);   /* (u64 range: said by set_f64) */
    if (exact[i]) tmp[i].i = v;
    else if (lua_isboolean(L, -1)) tmp[i].d = lua_toboolean(L, -1);
    else {
      tmp[i].d = lua_tonumberx(L, -1, &isnum);
      if (!isnum) return luaL_error(L, "element %d is not a number", (int)(i + 1));
    }
    lua_pop(L, 1);
  }
  lua_Integer run = 0;   /* runs of elements of one kind, one call each */
  for (lua_Integer i = 1; i <= n; i++)
    if (i == n || exact[i] != exact[run]) {
      set_run(L, u, dt, first, run, i, exact[run], tmp);
      run = i;
    }
  return 0;
}

static int l_buffer_copy(lua_State *L) {
  handle *d = geth(L, 1, T_BUF);
  lua_Integer doff = luaL_checkinteger(L, 2);
  handle *s = geth(L, 3, T_BUF);
  lua_Integer soff = luaL_checkinteger(L, 4), n = luaL_checkinteger(L, 5);
  if (doff < 0 || soff < 0 || n < 0) return luaL_error(L, "buffer_copy: negative offset or size");
  CHECK(L, d->ctx, mgpu_buffer_copy(d->h, (uint64_t)doff, s->h, (uint64_t)soff, (uint64_t)n));
  return 0;
}

/* -- Tracing ----------------------------------------------------------------------- */

static int opt_intfield(lua_State *L, int t, const char *k, int def) {
  lua_getfield(L, t, k);
  int ok;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  int r = lua_isnil(L, -1) ? def : ok ? (int)v : (luaL_error(L, "option %s must be an integer", k), 0);
  lua_pop(L, 1);
  return r;
}

static int l_builder(lua_State *L) {
  handle *u = geth(L, 1, T_CTX);
  luaL_checktype(L, 2, LUA_TTABLE);
  mgpu_kernel_options o;
  memset(&o, 0, sizeof o);
  lua_getfield(L, 2, "name");
  o.name = lua_tostring(L, -1);   /* stays on the stack until the call returns */
  lua_getfield(L, 2, "grid");
  if (!lua_isnil(L, -1)) {
    luaL_checktype(L, -1, LUA_TTABLE);
    o.grid_rank = (int32_t)luaL_len(L, -1);
    if (o.grid_rank > 8) return luaL_error(L, "grid must have at most 8 dimensions");
    for (int i = 0; i < o.grid_rank; i++) {
      lua_geti(L, -1, i + 1);
      o.grid[i] = (int32_t)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
  }
  lua_getfield(L, 2, "cluster");
  if (!lua_isnil(L, -1)) {
    luaL_checktype(L, -1, LUA_TTABLE);
    o.cluster_rank = (int32_t)luaL_len(L, -1);
    if (o.cluster_rank > 3) return luaL_error(L, "cluster must have at most 3 dimensions");
    for (int i = 0; i < o.cluster_rank; i++) {
      lua_geti(L, -1, i + 1);
      o.cluster[i] = (int32_t)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
  }
  o.num_threads = opt_intfield(L, 2, "num_threads", 1);
  o.lowering_semantics = opt_intfield(L, 2, "lowering_semantics", 0);
  o.reduction_scratch_bytes = opt_intfield(L, 2, "reduction_scratch_bytes", 0);
  o.target = opt_intfield(L, 2, "target", 0);
  lua_getfield(L, 2, "unsafe_no_auto_barriers");
  o.unsafe_no_auto_barriers = lua_toboolean(L, -1);
  lua_getfield(L, 2, "approx_math");
  o.approx_math = lua_toboolean(L, -1);
  lua_getfield(L, 2, "disable_bounds_checks");
  o.disable_bounds_checks = lua_toboolean(L, -1);
  lua_getfield(L, 2, "interpret");
  o.interpret = lua_toboolean(L, -1);
  mgpu_builder *b = NULL;
  CHECK(L, u->ctx, mgpu_builder_create(u->ctx, &o, &b));
  newh(L, T_BLD, b, u->ctx);
  return 1;
}

static int l_loc(lua_State *L) {
  handle *u = geth(L, 1, T_BLD);
  CHECK(L, u->ctx, mgpu_builder_set_loc(u->h, luaL_optstring(L, 2, "")));
  return 0;
}

static int l_param(lua_State *L) {
  lua_settop(L, 4);
  handle *u = geth(L, 1, T_BLD);
  const char *role = luaL_checkstring(L, 2);
  int dt = dtype_arg(L, 3);
  int rank;
  int64_t *shape = int_array(L, 4, &rank);
  int32_t v = 0;
  int r = !strcmp(role, "out") ? MGPU_PARAM_OUTPUT : !strcmp(role, "scalar") ? MGPU_PARAM_SCALAR : MGPU_PARAM_INPUT;
  CHECK(L, u->ctx, mgpu_builder_param(u->h, r, dt, shape, rank, &v));
  lua_pushinteger(L, v);
  return 1;
}

/* op(b, name, operands?, ints?, number?, text?) -> result ids... */
static int l_op(lua_State *L) {
  lua_settop(L, 6);   /* temporaries go above the arguments */
  handle *u = geth(L, 1, T_BLD);
  const char *name = luaL_checkstring(L, 2);
  int nopd, nints;
  int64_t *opd64 = int_array(L, 3, &nopd);
  int64_t *ints = int_array(L, 4, &nints);
  int32_t *opds = lua_newuserdatauv(L, sizeof(int32_t) * (size_t)(nopd ? nopd : 1), 0);
  for (int i = 0; i < nopd; i++) opds[i] = (int32_t)opd64[i];
  mgpu_op_args a = { opds, nopd, ints, nints, luaL_optnumber(L, 5, 0), luaL_optstring(L, 6, NULL) };
  int32_t res[72];
  int32_t nres = 0;
  CHECK(L, u->ctx, mgpu_builder_op(u->h, name, &a, res, 72, &nres));
  luaL_checkstack(L, nres, "too many results");
  for (int i = 0; i < nres; i++) lua_pushinteger(L, res[i]);
  return nres;
}

static int l_value(lua_State *L) {
  handle *u = geth(L, 1, T_BLD);
  mgpu_value_info vi;
  CHECK(L, u->ctx, mgpu_builder_value(u->h, (int32_t)luaL_checkinteger(L, 2), &vi));
  static const char *const kinds[] = { "scalar", "array", "ref" };
  static const char *const spaces[] = { "none", "gmem", "smem", "regs", "barrier", "tmem" };   /* ORDER mgpu_space */
  lua_pushstring(L, kinds[vi.kind]);
  lua_pushstring(L, mgpu_dtype_name(vi.dtype));
  lua_createtable(L, vi.rank, 0);
  for (int i = 0; i < vi.rank; i++) { lua_pushinteger(L, vi.shape[i]); lua_rawseti(L, -2, i + 1); }
  lua_pushstring(L, (size_t)vi.space < sizeof spaces / sizeof spaces[0] ? spaces[vi.space] : "none");
  return 4;
}

static int l_finish(lua_State *L) {
  handle *u = geth(L, 1, T_BLD);
  mgpu_kernel *k = NULL;
  CHECK(L, u->ctx, mgpu_builder_finish(u->h, &k));
  newh(L, T_KER, k, u->ctx);
  return 1;
}

static int l_release(lua_State *L) {
  if (luaL_testudata(L, 1, T_BLD)) return gc_bld(L);
  if (luaL_testudata(L, 1, T_KER)) return gc_ker(L);
  if (luaL_testudata(L, 1, T_BUF)) return gc_buf(L);
  if (luaL_testudata(L, 1, T_CTX)) return gc_ctx(L);
  if (luaL_testudata(L, 1, T_HOST)) return gc_host(L);
  return luaL_argerror(L, 1, "not an mgpu handle");
}

/* -- Kernels ------------------------------------------------------------------------ */

static int l_compile(lua_State *L) {
  handle *u = geth(L, 1, T_KER);
  CHECK(L, u->ctx, mgpu_kernel_compile(u->h));
  return 0;
}

static int l_text(lua_State *L) {
  handle *u = geth(L, 1, T_KER);
  static const char *const kinds[] = { "ir", "ptx", NULL };
  const char *s = NULL;
  CHECK(L, u->ctx, mgpu_kernel_text(u->h, luaL_checkoption(L, 2, "ir", kinds), &s));
  lua_pushstring(L, s);
  return 1;
}

static int l_layout(lua_State *L) {
  handle *u = geth(L, 1, T_KER);
  char buf[512];
  CHECK(L, u->ctx, mgpu_kernel_layout(u->h, (int32_t)luaL_checkinteger(L, 2), buf, sizeof buf));
  lua_pushstring(L, buf);
  return 1;
}

static int l_resources(lua_State *L) {
  handle *u = geth(L, 1, T_KER);
  mgpu_kernel_resources r;
  CHECK(L, u->ctx, mgpu_kernel_resources_get(u->h, &r));
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, r.registers); lua_setfield(L, -2, "registers");
  lua_pushinteger(L, r.local_bytes); lua_setfield(L, -2, "local_bytes");
  lua_pushinteger(L, r.smem_bytes); lua_setfield(L, -2, "smem_bytes");
  lua_pushinteger(L, r.threads); lua_setfield(L, -2, "threads");
  lua_pushnumber(L, r.compile_ms); lua_setfield(L, -2, "compile_ms");
  lua_pushnumber(L, r.load_ms); lua_setfield(L, -2, "load_ms");
  return 1;
}

static int l_jit_options(lua_State *L) {
  handle *u = geth(L, 1, T_KER);
  CHECK(L, u->ctx, mgpu_kernel_set_jit_options(u->h, (int32_t)luaL_checkinteger(L, 2), (int32_t)luaL_checkinteger(L, 3)));
  return 0;
}

static int l_set_ptx(lua_State *L) {
  handle *u = geth(L, 1, T_KER);
  CHECK(L, u->ctx, mgpu_kernel_set_ptx(u->h, luaL_optstring(L, 2, NULL)));
  return 0;
}

static int l_launch(lua_State *L) {
  lua_settop(L, 3);
  handle *u = geth(L, 1, T_KER);
  luaL_checktype(L, 2, LUA_TTABLE);
  int n = (int)luaL_len(L, 2);
  mgpu_arg *args = lua_newuserdatauv(L, sizeof(mgpu_arg) * (size_t)(n ? n : 1), 0);
  for (int i = 0; i < n; i++) {
    lua_geti(L, 2, i + 1);
    args[i] = (mgpu_arg){ .buffer = NULL };
    if (lua_type(L, -1) == LUA_TNUMBER) {
      args[i].scalar = lua_tonumber(L, -1);
      if ((args[i].has_integer = lua_isinteger(L, -1))) args[i].integer = lua_tointeger(L, -1);   /* exact */
    }
    else {
      handle *b = luaL_testudata(L, -1, T_BUF);
      if (!b || !b->h) return luaL_error(L, "launch: argument %d is neither a number nor a live buffer", i + 1);
      args[i].buffer = b->h;
    }
    lua_pop(L, 1);
  }
  mgpu_launch_args a = { args, n, (uint64_t)luaL_optinteger(L, 3, 0) };
  CHECK(L, u->ctx, mgpu_kernel_launch(u->h, &a));
  return 0;
}

/* -- Host arrays ---------------------------------------------------------------------- */

static const char *const host_ops[] = { "add", "sub", "mul", "div", "max", "min", "neg", "abs", "exp", "log",
                                        "sqrt", "tanh", "round", "sum", "mean", NULL };

static int l_host_new(lua_State *L) {
  lua_settop(L, 2);
  handle *u = geth(L, 1, T_CTX);
  int rank;
  int64_t *shape = int_array(L, 2, &rank);
  mgpu_host *h = NULL;
  CHECK(L, u->ctx, mgpu_host_create(u->ctx, shape, rank, &h));
  newh(L, T_HOST, h, u->ctx);
  return 1;
}

static int l_host_download(lua_State *L) {
  handle *h = geth(L, 1, T_HOST), *b = geth(L, 2, T_BUF);
  CHECK(L, h->ctx, mgpu_host_download(h->h, b->h, dtype_arg(L, 3)));
  return 0;
}

static int l_host_upload(lua_State *L) {
  handle *h = geth(L, 1, T_HOST), *b = geth(L, 2, T_BUF);
  CHECK(L, h->ctx, mgpu_host_upload(h->h, b->h, dtype_arg(L, 3)));
  return 0;
}

static int l_host_map(lua_State *L) {
  int op = luaL_checkoption(L, 1, NULL, host_ops);
  handle *a = geth(L, 2, T_HOST);
  handle *b = lua_isuserdata(L, 3) ? geth(L, 3, T_HOST) : NULL;
  double sc = b ? 0 : luaL_optnumber(L, 3, 0);
  mgpu_host *out = NULL;
  CHECK(L, a->ctx, mgpu_host_map(op, a->h, b ? b->h : NULL, sc, &out));
  newh(L, T_HOST, out, a->ctx);
  return 1;
}

static int l_host_reduce(lua_State *L) {
  int op = luaL_checkoption(L, 1, NULL, host_ops);
  handle *a = geth(L, 2, T_HOST);
  mgpu_host *out = NULL;
  CHECK(L, a->ctx, mgpu_host_reduce(op, a->h, (int32_t)luaL_checkinteger(L, 3), lua_toboolean(L, 4), &out));
  newh(L, T_HOST, out, a->ctx);
  return 1;
}

static int l_host_slice(lua_State *L) {
  handle *a = geth(L, 1, T_HOST);
  mgpu_host *out = NULL;
  CHECK(L, a->ctx, mgpu_host_slice(a->h, luaL_checkinteger(L, 2), luaL_checkinteger(L, 3), &out));
  newh(L, T_HOST, out, a->ctx);
  return 1;
}

static int l_host_transpose(lua_State *L) {
  handle *a = geth(L, 1, T_HOST);
  mgpu_host *out = NULL;
  CHECK(L, a->ctx, mgpu_host_transpose(a->h, &out));
  newh(L, T_HOST, out, a->ctx);
  return 1;
}

static int l_host_matmul(lua_State *L) {
  handle *a = geth(L, 1, T_HOST), *b = geth(L, 2, T_HOST);
  mgpu_host *out = NULL;
  CHECK(L, a->ctx, mgpu_host_matmul(a->h, b->h, &out));
  newh(L, T_HOST, out, a->ctx);
  return 1;
}

static int l_host_relerr(lua_State *L) {
  handle *a = geth(L, 1, T_HOST), *b = geth(L, 2, T_HOST);
  double e = 0;
  CHECK(L, a->ctx, mgpu_host_relerr(a->h, b->h, &e));
  lua_pushnumber(L, e);
  return 1;
}

static int l_host_shape(lua_State *L) {
  handle *a = geth(L, 1, T_HOST);
  int r = mgpu_host_rank(a->h);
  lua_createtable(L, r, 0);
  for (int i = 0; i < r; i++) { lua_pushinteger(L, mgpu_host_dim(a->h, i)); lua_rawseti(L, -2, i + 1); }
  return 1;
}

static int64_t host_count(mgpu_host *h) {
  int64_t n = 1;
  for (int i = 0; i < mgpu_host_rank(h); i++) n *= mgpu_host_dim(h, i);
  return n;
}

static int l_host_get(lua_State *L) {
  handle *a = geth(L, 1, T_HOST);
  lua_Integer first = luaL_checkinteger(L, 2), cnt = luaL_checkinteger(L, 3);
  if (first < 0 || cnt < 0 || first + cnt > host_count(a->h)) return luaL_error(L, "host_get: range out of bounds");
  const double *v = mgpu_host_data(a->h);
  lua_createtable(L, (int)cnt, 0);
  for (lua_Integer i = 0; i < cnt; i++) { lua_pushnumber(L, v[first + i]); lua_rawseti(L, -2, i + 1); }
  return 1;
}

static int l_host_set(lua_State *L) {
  handle *a = geth(L, 1, T_HOST);
  lua_Integer first = luaL_checkinteger(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 3);
  if (first < 0 || first + n > host_count(a->h)) return luaL_error(L, "host_set: range out of bounds");
  double *v = mgpu_host_data(a->h);
  for (lua_Integer i = 0; i < n; i++) {
    lua_geti(L, 3, i + 1);
    v[first + i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  return 0;
}

static const luaL_Reg core_funcs[] = {
  { "version", l_version }, { "engine_id", l_engine_id }, { "abi", l_abi }, { "kernel_cache_dir", l_kernel_cache_dir },
  { "dtype_size", l_dtype_size },
  { "ctx_new", l_ctx_new }, { "device", l_device }, { "sync", l_sync }, { "empty_cache", l_empty_cache },
  { "ctx_set_timeout", l_ctx_set_timeout }, { "ctx_lost", l_ctx_lost }, { "ctx_recover", l_ctx_recover },
  { "timer_start", l_timer_start }, { "timer_stop", l_timer_stop }, { "blas_matmul", l_blas_matmul },
  { "blas_matmul_f8", l_blas_matmul_f8 },
  { "buffer", l_buffer }, { "buffer_size", l_buffer_size }, { "buffer_address", l_buffer_address },
  { "buffer_fill", l_buffer_fill }, { "buffer_get", l_buffer_get }, { "buffer_set", l_buffer_set },
  { "buffer_copy", l_buffer_copy },
  { "builder", l_builder }, { "loc", l_loc }, { "param", l_param }, { "op", l_op }, { "value", l_value },
  { "finish", l_finish }, { "release", l_release },
  { "compile", l_compile }, { "text", l_text }, { "resources", l_resources }, { "jit_options", l_jit_options }, { "set_ptx", l_set_ptx },
  { "launch", l_launch },
  { "layout", l_layout },
  { "host_new", l_host_new }, { "host_download", l_host_download }, { "host_upload", l_host_upload },
  { "host_map", l_host_map }, { "host_reduce", l_host_reduce }, { "host_slice", l_host_slice },
  { "host_transpose", l_host_transpose }, { "host_matmul", l_host_matmul }, { "host_relerr", l_host_relerr }, { "host_shape", l_host_shape },
  { "host_get", l_host_get }, { "host_set", l_host_set },
  { "dlpack_export", l_dlpack_export }, { "dlpack_import", l_dlpack_import }, { "dlpack_free", l_dlpack_free },
  { "world_join", l_world_join }, { "world_leave", l_world_leave }, { "dist_uid", l_dist_uid }, { "dist_init", l_dist_init },
  { "dist_rendezvous", l_dist_rendezvous },
  { "dist_info", l_dist_info }, { "dist_barrier", l_dist_barrier }, { "symmetric", l_symmetric },
  { "buffer_symmetric", l_buffer_symmetric }, { "dist_table", l_dist_table },
  { NULL, NULL }
};

static void meta(lua_State *L, const char *name, lua_CFunction gc) {
  luaL_newmetatable(L, name);
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__close");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
}

int luaopen_mgpu_core(lua_State *L) {
  luaL_checkversion(L);
  meta(L, T_CTX, gc_ctx);
  meta(L, T_BUF, gc_buf);
  meta(L, T_BLD, gc_bld);
  meta(L, T_KER, gc_ker);
  meta(L, T_HOST, gc_host);
  luaL_newlib(L, core_funcs);
  lua_pushstring(L, "c");
  lua_setfield(L, -2, "impl");
  return 1;
}
