/*
** simio.c -- what the script of a simulated device (a thread of mgpu -n N)
** sees of the process it shares: its stdout text is kept until a line is
** complete and complete lines go out in one write, so the lines of
** different devices never mix; os.exit ends that device's script, not the
** process, with a message naming the device.
*/
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "cli.h"

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static void out_write(const char *s, size_t n) {
  pthread_mutex_lock(&out_mu);
  fwrite(s, 1, n, stdout);
  fflush(stdout);
  pthread_mutex_unlock(&out_mu);
}

/* Append text; the complete lines go out.  Without memory the text goes out
** as it is (torn lines rather than lost ones). */
static void lines_put(cli_lines *b, const char *s, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      out_write(b->p, b->n);
      out_write(s, n);
      b->n = 0;
      return;
    }
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  size_t whole = b->n;
  while (whole && b->p[whole - 1] != '\n') whole--;
  if (!whole) return;
  out_write(b->p, whole);
  memmove(b->p, b->p + whole, b->n - whole);
  b->n -= whole;
}

void cli_lines_close(cli_lines *b) {
  if (b->n) out_write(b->p, b->n);
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

/* Arguments first.. of the call, written as io.write writes them (integers
** with LUA_INTEGER_FMT, floats with LUA_NUMBER_FMT, strings as they are). */
static void put_args(lua_State *L, cli_lines *b, int first) {
  for (int i = first; i <= lua_gettop(L); i++) {
    char num[64];
    size_t n;
    const char *s = num;
    if (lua_type(L, i) == LUA_TNUMBER)
      n = (size_t)(lua_isinteger(L, i) ? snprintf(num, sizeof num, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointeger(L, i))
                                       : snprintf(num, sizeof num, LUA_NUMBER_FMT, (LUAI_UACNUMBER)lua_tonumber(L, i)));
    else s = luaL_checklstring(L, i, &n);
    lines_put(b, s, n);
  }
}

static cli_lines *lines_of(lua_State *L) { return lua_touserdata(L, lua_upvalueindex(1)); }

/* print(...): one line, as the base library's print makes it. */
static int sim_print(lua_State *L) {
  cli_lines *b = lines_of(L);
  int n = lua_gettop(L);
  for (int i = 1; i <= n; i++) {
    size_t len;
    const char *s = luaL_tolstring(L, i, &len);
    if (i > 1) lines_put(b, "\t", 1);
    lines_put(b, s, len);
    lua_pop(L, 1);
  }
  lines_put(b, "\n", 1);
  return 0;
}

/* io.stdout's write method (upvalues: the lines, the original method, io.stdout). */
static int sim_file_write(lua_State *L) {
  if (!lua_rawequal(L, 1, lua_upvalueindex(3))) {
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
  }
  put_args(L, lines_of(L), 2);
  lua_settop(L, 1);
  return 1;
}

/* io.write (upvalues: the lines, the original io.write, io.stdout, io.output). */
static int sim_io_write(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(4));
  lua_call(L, 0, 1);
  bool out = lua_rawequal(L, -1, lua_upvalueindex(3));
  lua_pop(L, 1);
  if (!out) {   /* io.output() is a file of the script's */
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
  }
  put_args(L, lines_of(L), 1);
  lua_pushvalue(L, lua_upvalueindex(3));
  return 1;
}

typedef struct sim_exit {
  int rank;
  int *code;
  char msg[320];   /* a location (at most 200 bytes) and the sentence */
} sim_exit;

/* Once os.exit was called, every instruction raises its message again, so
** that no pcall keeps the script going. */
static void exit_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_getfield(L, LUA_REGISTRYINDEX, "mgpu.sim_exit");
  sim_exit *e = lua_touserdata(L, -1);
  lua_pushstring(L, e->msg);
  lua_error(L);
}

/* os.exit([code]) (upvalue: the sim_exit record): ends this device's script. */
static int sim_os_exit(lua_State *L) {
  sim_exit *e = lua_touserdata(L, lua_upvalueindex(1));
  int code = lua_isboolean(L, 1) ? (lua_toboolean(L, 1) ? EXIT_SUCCESS : EXIT_FAILURE)
                                 : (int)luaL_optinteger(L, 1, EXIT_SUCCESS);
  *e->code = code;
  lua_Debug d;
  const char *where = "";
  char at[200] = "";
  for (int level = 1; lua_getstack(L, level, &d); level++)   /* the innermost Lua line (pcall(os.exit) has none) */
    if (lua_getinfo(L, "Sl", &d) && d.currentline > 0) {
      snprintf(at, sizeof at, "%s:%d: ", d.short_src, d.currentline);
      where = at;
      break;
    }
  snprintf(e->msg, sizeof e->msg, "%sos.exit(%d) ends device %d's script (the other devices go on)", where, code,
           e->rank);
  lua_sethook(L, exit_hook, LUA_MASKCOUNT, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  lua_sethook(lua_tothread(L, -1), exit_hook, LUA_MASKCOUNT, 1);   /* when called in a coroutine, its resumer too */
  lua_pop(L, 1);
  lua_pushstring(L, e->msg);
  return lua_error(L);
}

void cli_sim_install(lua_State *L, int rank, cli_lines *lines, int *exit_code) {
  *exit_code = -1;
  lua_pushlightuserdata(L, lines);
  lua_pushcclosure(L, sim_print, 1);
  lua_setglobal(L, "print");
  lua_getglobal(L, "io");
  lua_getfield(L, -1, "stdout");                 /* io, stdout */
  lua_getmetatable(L, -1);
  lua_getfield(L, -1, "__index");                /* io, stdout, mt, methods */
  lua_pushlightuserdata(L, lines);
  lua_getfield(L, -2, "write");
  lua_pushvalue(L, -5);
  lua_pushcclosure(L, sim_file_write, 3);
  lua_setfield(L, -2, "write");
  lua_pop(L, 2);                                 /* io, stdout */
  lua_pushlightuserdata(L, lines);
  lua_getfield(L, -3, "write");
  lua_pushvalue(L, -3);
  lua_getfield(L, -5, "output");
  lua_pushcclosure(L, sim_io_write, 4);
  lua_setfield(L, -3, "write");
  lua_pop(L, 2);
  sim_exit *e = lua_newuserdatauv(L, sizeof *e, 0);
  e->rank = rank;
  e->code = exit_code;
  e->msg[0] = 0;
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "mgpu.sim_exit");
  lua_pushcclosure(L, sim_os_exit, 1);
  lua_getglobal(L, "os");
  lua_insert(L, -2);
  lua_setfield(L, -2, "exit");
  lua_pop(L, 1);
}
