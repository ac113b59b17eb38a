/*
** lmgpu.h -- the Lua 5.4 binding of mgpu.h (the C core module) and the
** script layer that runs Lua files inside an engine-owned state.
*/
#ifndef LMGPU_H
#define LMGPU_H

#include <lua.h>

#include "mgpu.h"

/* Exported only from the C module (mgpu/core.so); hidden inside libmgpu.so. */
#ifdef LMGPU_MODULE
#define LMGPU_EXPORT __attribute__((visibility("default")))
#else
#define LMGPU_EXPORT
#endif

/* require "mgpu.core" */
LMGPU_EXPORT int luaopen_mgpu_core(lua_State *L);

/* lua_pcall message handler: the message (through __tostring), with a
** traceback when MGPU_TRACEBACK is set. */
int lmgpu_msghandler(lua_State *L);

/* A Lua handle for an existing context (takes a reference). */
void lmgpu_push_ctx(lua_State *L, mgpu_ctx *ctx);
/* The kernel held by the core handle at idx, or NULL. */
mgpu_kernel *lmgpu_tokernel(lua_State *L, int idx);

/* The Lua state of a script (lscript.c), for harnesses that bound what a
** script may run (the fuzzers set a count hook on it). */
lua_State *lmgpu_script_lua(mgpu_script *s);

/* Preload "mgpu.core" and the embedded front end (linit.c). */
void lmgpu_install(lua_State *L);

#endif
