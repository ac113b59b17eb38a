-- mgpu for Lua 5.4 through luarocks: in a clone,
--   luarocks --lua-version 5.4 make [--tree DIR]
-- builds the C module mgpu.core (the engine inside it) and installs it with
-- the Lua front end and the API reference (for mgpu.help).  The mgpu command,
-- libmgpu for C programs and the LuaJIT binding come from the CMake build
-- (README.md).
rockspec_format = "3.0"
package = "mgpu"
version = "scm-1"
source = {
  url = "git+file://.",
}
description = {
  summary = "NVIDIA Hopper kernels from Lua, the way JAX Pallas' Mosaic GPU backend writes them",
  detailed = [[
    Grids, refs and views, TMA, mbarriers, wgmma and pipelines, written in
    Lua; a small C engine owns the IR, lowers it to PTX and launches through
    the CUDA driver, or runs every kernel in its CPU interpreter without a GPU.
  ]],
}
dependencies = {
  "lua >= 5.4, < 5.5",
}
external_dependencies = {
  XXHASH = { header = "xxhash.h" },
  DLPACK = { header = "dlpack/dlpack.h" },
}
build = {
  type = "cmake",
  variables = {
    MGPU_LUAROCKS = "ON",
    MGPU_WERROR = "OFF",
    CMAKE_BUILD_TYPE = "Release",
    MGPU_LUA_DIR = "$(LUADIR)",
    MGPU_LUA_LIBDIR = "$(LIBDIR)",
    LUA_INCLUDE_DIR = "$(LUA_INCDIR)",
    XXHASH_INCLUDE_DIR = "$(XXHASH_INCDIR)",
    DLPACK_INCLUDE_DIR = "$(DLPACK_INCDIR)",
  },
}
