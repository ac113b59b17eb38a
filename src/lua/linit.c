/*
** linit.c -- making `require "mgpu"` work inside a Lua state that mgpu
** owns (the executable, the script layer): the C core and the embedded
** front-end modules go into package.preload.
*/
#include <lauxlib.h>
#include <lua.h>

#include "lmgpu.h"
#include "lmgpu_embed.h"

static int load_embedded(lua_State *L) {
  const lmgpu_module *m = lua_touserdata(L, lua_upvalueindex(1));
  if (!m->chunkname) { lua_pushlstring(L, m->source, m->len); return 1; }   /* a text module */
  if (luaL_loadbufferx(L, m->source, m->len, m->chunkname, "t") != LUA_OK) return lua_error(L);
  lua_pushvalue(L, 1);   /* module name */
  lua_call(L, 1, 1);
  return 1;
}

void lmgpu_install(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_mgpu_core);
  lua_setfield(L, -2, "mgpu.core");
  for (const lmgpu_module *m = lmgpu_modules; m->name; m++) {
    lua_pushlightuserdata(L, (void *)m);
    lua_pushcclosure(L, load_embedded, 1);
    lua_setfield(L, -2, m->name);
  }
  lua_pop(L, 1);
}
