--[[
mgpu.context -- which core implementation is in use (the Lua 5.4 C module
or LuaJIT's FFI), the process-wide default context, and configuration.
]]
local compat = require "mgpu.compat"
compat.mark_lib()

local M = {}

M.core = jit and require "mgpu.ffi" or require "mgpu.core"

-- Settings read when the default context is created.  The `mgpu` command
-- sets them from its flags; MGPU_EMIT_PTX=dir does the same as --emit-ptx;
-- MGPU_COMPILE_ONLY=1 compiles without running (and without writing PTX).
M.config = {
  mode = nil,                               -- "auto", "gpu", "interpret" or "compile"
  emit_ptx = os.getenv("MGPU_EMIT_PTX"),    -- directory for compiled kernels' PTX
  poison_outputs = nil,                     -- fill outputs with 0xFF before launch (default: in interpret mode)
  quiet = false,                            -- no interpret-mode notice
  abstract_arrays = nil,                    -- false: compile-only mode still allocates arrays
  device = nil,                             -- CUDA device ordinal (mgpu -n N: the process's rank)
}

local ctx, info

--- Set options; only possible before the first kernel or array is made.
function M.configure(opts)
  if ctx then compat.fail("mgpu.configure must be called before the first kernel or array is created") end
  if type(opts) ~= "table" then compat.fail("mgpu.configure expects a table of options, got %s", type(opts)) end
  for k, v in pairs(opts) do
    if M.config[k] == nil and k ~= "mode" and k ~= "emit_ptx" and k ~= "poison_outputs" and k ~= "abstract_arrays"
       and k ~= "device" then
      compat.fail("mgpu.configure: unknown option '%s'", tostring(k))
    end
    M.config[k] = v
  end
end

--- Make an existing context handle the default (the script layer binds its
--- engine-owned state to the embedder's context this way).
function M.use(handle)
  if ctx then compat.fail("mgpu.context.use must come before the first kernel or array is created") end
  ctx = handle
  info = M.core.device(ctx)
  if M.config.poison_outputs == nil then M.config.poison_outputs = info.mode ~= "gpu" end
end

--- The default context, created on first use.
function M.get()
  if ctx then return ctx end
  local co = os.getenv("MGPU_COMPILE_ONLY")
  co = co and co ~= "" and co ~= "0"
  local mode = M.config.mode or ((M.config.emit_ptx or co) and "compile") or "auto"
  ctx = M.core.ctx_new(mode, M.config.device)
  info = M.core.device(ctx)
  if M.on_create then M.on_create(ctx) end
  if info.mode == "interpret" and not M.config.quiet and mode ~= "interpret" then
    local why = info.reason:match("^MGPU_INTERPRET") and info.reason or ("no GPU: " .. info.reason)
    io.stderr:write("mgpu: " .. why .. "; kernels run in the interpreter\n")
  end
  if M.config.poison_outputs == nil then M.config.poison_outputs = info.mode ~= "gpu" end
  return ctx
end

-- Memory held outside the Lua heap (device buffers, host arrays) is freed by
-- the collector, which sees only the small Lua objects holding it.  After
-- every `external_step` bytes of such allocations a full collection runs,
-- so unreachable buffers cannot pile up between collections.
local external, external_step = 0, 16 * 2 ^ 20

--- Note `bytes` newly allocated outside the Lua heap.
function M.track(bytes)
  external = external + bytes
  if external >= external_step then
    external = 0
    collectgarbage()
  end
end

function M.info()
  M.get()
  return info
end

return M
