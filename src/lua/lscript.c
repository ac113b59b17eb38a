/*
** lscript.c -- the script layer of the C API (mgpu_script_*): an
** engine-owned Lua 5.4 state bound to the caller's context, running files
** and strings, and handing the kernels scripts define to C.
**
** It lives in libmgpu_script (the engine library itself holds no Lua) and,
** like the binding, uses only mgpu.h.  A script has its own one-thread
** guard; the context's guard is taken by each engine call the script
** makes, one call at a time.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "lmgpu.h"

#define MAGIC_SCRIPT 0x6d736372

struct mgpu_script {
  uint32_t magic;
  mgpu_ctx *ctx;
  mgpu_alloc_fn alloc;
  void *ud;
  lua_State *L;
  atomic_flag busy;
};

static mgpu_status fail(mgpu_script *s, mgpu_status st, const char *msg) { return mgpu_ctx_fail(s->ctx, st, msg); }

/* Run the function below `narg` arguments on the stack; on error record
** the message on the context. */
static mgpu_status pcall(mgpu_script *s, int narg, int nres) {
  lua_State *L = s->L;
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, lmgpu_msghandler);
  lua_insert(L, base);
  int st = lua_pcall(L, narg, nres, base);
  lua_remove(L, base);
  if (st == LUA_OK) return MGPU_OK;
  const char *msg = lua_tostring(L, -1);
  mgpu_status r = fail(s, st == LUA_ERRMEM ? MGPU_ERR_NOMEM : MGPU_ERR_SCRIPT, msg ? msg : "script error");
  lua_settop(L, 0);
  return r;
}

static int setup(lua_State *L) {
  mgpu_ctx *ctx = lua_touserdata(L, 1);
  luaL_openlibs(L);
  lmgpu_install(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "mgpu.context");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "use");
  lmgpu_push_ctx(L, ctx);
  lua_call(L, 1, 0);
  return 0;
}

mgpu_status mgpu_script_create(mgpu_ctx *ctx, mgpu_script **out) {
  mgpu_alloc_fn fn;
  void *ud;
  mgpu_status st = mgpu_ctx_allocator(ctx, &fn, &ud);
  if (st) return st;
  if (!out) return mgpu_ctx_fail(ctx, MGPU_ERR_ARG, "mgpu_script_create: out must not be NULL");
  *out = NULL;
  mgpu_script *s = fn(ud, NULL, 0, sizeof *s);
  if (!s) return mgpu_ctx_fail(ctx, MGPU_ERR_NOMEM, "out of memory");
  memset(s, 0, sizeof *s);
  s->ctx = ctx;
  s->alloc = fn;
  s->ud = ud;
  s->L = lua_newstate(fn, ud);
  if (!s->L) { fn(ud, s, sizeof *s, 0); return mgpu_ctx_fail(ctx, MGPU_ERR_NOMEM, "out of memory"); }
  atomic_flag_clear(&s->busy);
  mgpu_ctx_retain(ctx);
  s->magic = MAGIC_SCRIPT;
  lua_pushcfunction(s->L, setup);
  lua_pushlightuserdata(s->L, ctx);
  st = pcall(s, 1, 0);
  if (st) { mgpu_script_release(s); return st; }
  *out = s;
  return MGPU_OK;
}

void mgpu_script_release(mgpu_script *s) {
  if (!s || s->magic != MAGIC_SCRIPT) return;
  mgpu_ctx *ctx = s->ctx;
  lua_close(s->L);
  s->magic = 0;
  s->alloc(s->ud, s, sizeof *s, 0);
  mgpu_ctx_release(ctx);
}

lua_State *lmgpu_script_lua(mgpu_script *s) { return s && s->magic == MAGIC_SCRIPT ? s->L : NULL; }

#define SCRIPT_ENTER(s) \
  do { \
    if (!(s) || (s)->magic != MAGIC_SCRIPT) return MGPU_ERR_ARG; \
    if (atomic_flag_test_and_set(&(s)->busy)) return MGPU_ERR_THREAD; \
    fail((s), MGPU_OK, NULL); \
  } while (0)
#define SCRIPT_LEAVE(s) atomic_flag_clear(&(s)->busy)

mgpu_status mgpu_script_run_file(mgpu_script *s, const char *path, const char *const *args, int32_t nargs) {
  SCRIPT_ENTER(s);
  lua_State *L = s->L;
  mgpu_status st = MGPU_OK;
  if (!path || nargs < 0 || (nargs && !args)) {
    st = fail(s, MGPU_ERR_ARG, "mgpu_script_run_file: path must not be NULL, nor args when nargs > 0");
  } else if (luaL_loadfile(L, path) != LUA_OK) {
    st = fail(s, MGPU_ERR_SCRIPT, lua_tostring(L, -1));
    lua_settop(L, 0);
  } else if (!lua_checkstack(L, nargs + 2)) {
    lua_settop(L, 0);
    st = fail(s, MGPU_ERR_NOMEM, "out of memory");
  } else {
    lua_createtable(L, nargs, 1);          /* arg, as the mgpu command sets it */
    lua_pushstring(L, path);
    lua_rawseti(L, -2, 0);
    for (int32_t i = 0; i < nargs; i++) { lua_pushstring(L, args[i]); lua_rawseti(L, -2, i + 1); }
    lua_setglobal(L, "arg");
    for (int32_t i = 0; i < nargs; i++) lua_pushstring(L, args[i]);
    st = pcall(s, nargs, 0);
  }
  SCRIPT_LEAVE(s);
  return st;
}

mgpu_status mgpu_script_run_string(mgpu_script *s, const char *code, const char *chunkname) {
  SCRIPT_ENTER(s);
  lua_State *L = s->L;
  mgpu_status st;
  if (!code) {
    st = fail(s, MGPU_ERR_ARG, "mgpu_script_run_string: code must not be NULL");
  } else if (luaL_loadbuffer(L, code, strlen(code), chunkname ? chunkname : "=(script)") != LUA_OK) {
    st = fail(s, MGPU_ERR_SCRIPT, lua_tostring(L, -1));
    lua_settop(L, 0);
  } else {
    st = pcall(s, 0, 0);
  }
  SCRIPT_LEAVE(s);
  return st;
}

/* Pushes the table of mgpu specs for args[0..n) (arrays from mgpu.array's spec,
** scalars from mgpu.scalar) at the top of L's stack. */
static void push_specs(lua_State *L, const char *name, const mgpu_value_info *args, int n) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "mgpu");
  lua_call(L, 1, 1);
  int mgpu = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "mgpu.array");
  lua_call(L, 1, 1);
  int array = lua_gettop(L);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    const mgpu_value_info *v = &args[i];
    const char *dt = mgpu_dtype_name(v->dtype);
    if (!dt) luaL_error(L, "mgpu_script_kernel: '%s': argument %d has an unknown dtype %d", name, i + 1, v->dtype);
    if (v->kind == MGPU_VALUE_SCALAR) {
      lua_getfield(L, mgpu, "scalar");
      lua_pushinteger(L, 0);
      lua_pushstring(L, dt);
      lua_call(L, 2, 1);
    } else if (v->kind == MGPU_VALUE_REF || v->kind == MGPU_VALUE_ARRAY) {
      if (v->rank < 0 || v->rank > 8) luaL_error(L, "mgpu_script_kernel: '%s': argument %d has rank %d", name, i + 1, v->rank);
      lua_getfield(L, array, "spec");
      lua_createtable(L, v->rank, 0);
      for (int d = 0; d < v->rank; d++) { lua_pushinteger(L, v->shape[d]); lua_rawseti(L, -2, d + 1); }
      lua_pushstring(L, dt);
      lua_call(L, 2, 1);
    } else {
      luaL_error(L, "mgpu_script_kernel: '%s': argument %d has an unknown kind %d", name, i + 1, v->kind);
    }
    lua_rawseti(L, -2, i + 1);
  }
  lua_replace(L, mgpu);
  lua_settop(L, mgpu);
}

/* kernel(name, specs...) -> core kernel handle, in Lua.  The name holds an
** mgpu kernel, or a function that returns one for the arguments (a library
** that builds a kernel per shape). */
static int find_kernel(lua_State *L) {
  const char *name = lua_tostring(L, 1);
  const mgpu_value_info *args = lua_touserdata(L, 2);
  int n = (int)lua_tointeger(L, 3);
  /* resolve "a.b.c" from the globals */
  lua_pushglobaltable(L);
  for (const char *p = name; *p;) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    if (!lua_istable(L, -1)) {
      lua_pushlstring(L, p, len);
      return luaL_error(L, "mgpu_script_kernel: '%s' does not name a kernel (no table holds '%s')", name, lua_tostring(L, -1));
    }
    lua_pushlstring(L, p, len);
    lua_gettable(L, -2);
    lua_remove(L, -2);
    p = dot ? dot + 1 : p + len;
  }
  int value = lua_gettop(L);
  push_specs(L, name, args, n);
  int specs = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "mgpu.kernel");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "is_kernel");
  int is_kernel = lua_gettop(L);
  lua_pushvalue(L, is_kernel);
  lua_pushvalue(L, value);
  lua_call(L, 1, 1);
  int kernel = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!kernel && lua_isfunction(L, value)) {   /* a factory: kernel = f(specs...) */
    lua_pushvalue(L, value);
    for (int i = 1; i <= n; i++) lua_rawgeti(L, specs, i);
    lua_call(L, n, 1);
    lua_pushvalue(L, is_kernel);
    lua_pushvalue(L, -2);
    lua_call(L, 1, 1);
    if (!lua_toboolean(L, -1))
      return luaL_error(L, "mgpu_script_kernel: the function '%s' returned %s, not an mgpu kernel", name, luaL_typename(L, -2));
    lua_pop(L, 1);
    lua_replace(L, value);
  } else if (!kernel) {
    return luaL_error(L, "mgpu_script_kernel: '%s' is neither an mgpu kernel nor a function that returns one (%s)", name,
                      luaL_typename(L, value));
  }
  /* kernel:trace_for{ specs } */
  lua_getfield(L, value, "trace_for");
  lua_pushvalue(L, value);
  lua_pushvalue(L, specs);
  lua_call(L, 2, 1);
  if (!lmgpu_tokernel(L, -1)) return luaL_error(L, "mgpu_script_kernel: tracing '%s' returned no kernel", name);
  return 1;
}

mgpu_status mgpu_script_kernel(mgpu_script *s, const char *name, const mgpu_value_info *args, int32_t nargs,
                               mgpu_kernel **out) {
  SCRIPT_ENTER(s);
  lua_State *L = s->L;
  mgpu_status st;
  if (!name || !out || nargs < 0 || (nargs && !args)) {
    st = fail(s, MGPU_ERR_ARG, "mgpu_script_kernel: name and out must not be NULL, nor args when nargs > 0");
  } else {
    *out = NULL;
    lua_pushcfunction(L, find_kernel);
    lua_pushstring(L, name);
    lua_pushlightuserdata(L, (void *)args);
    lua_pushinteger(L, nargs);
    st = pcall(s, 3, 1);
    if (!st) {
      mgpu_kernel *k = lmgpu_tokernel(L, -1);
      mgpu_kernel_retain(k);
      *out = k;
      lua_settop(L, 0);
    }
  }
  SCRIPT_LEAVE(s);
  return st;
}
