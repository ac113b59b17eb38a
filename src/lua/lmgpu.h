/*
** lmgpu.h -- the Lua 5.4 binding of mgpu.h (the C core module) and the
** script layer that runs Lua files inside an engine-owned state.
*/
#ifndef LMGPU_H
#define LMGPU_H

#include <lua.h>

#include "mgpu.h"

/* require "mgpu.core" (exported from the C module) */
__attribute__((visibility("default"))) int luaopen_mgpu_core(lua_State *L);

/* Preload "mgpu.core" and the embedded front end (linit.c). */
void lmgpu_install(lua_State *L);

#endif
