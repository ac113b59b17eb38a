--[[
mgpu.context -- which core implementation is in use (the Lua 5.4 C module
or LuaJIT's FFI), the process-wide default context, and configuration.
]]
local compat = require "mgpu.compat"
compat.mark_lib()

local M = {}

M.core = jit and require "mgpu.ffi" or require "mgpu.core"

--- The element type of a memory declaration (mgpu.shape, GMEM, SMEM, TMEM):
--- dtype (f32 when nil) when the engine knows it and it is not pred, else an
--- error naming `what`.
function M.memory_dtype(dtype, what)
  dtype = dtype or "f32"
  if type(dtype) ~= "string" or not M.core.dtype_size(dtype) or dtype == "pred" then
    compat.fail("UNKNOWN_DTYPE", what, tostring(dtype))
  end
  return dtype
end

-- Settings read when the default context is created.  The `mgpu` command
-- sets them from its flags; MGPU_EMIT_PTX=dir does the same as --emit-ptx;
-- MGPU_COMPILE_ONLY=1 compiles without running (and without writing PTX).
M.config = {
  mode = nil,                               -- "auto", "gpu", "interpret" or "compile"
  emit_ptx = os.getenv("MGPU_EMIT_PTX"),    -- directory for compiled kernels' PTX
  ptx_override = os.getenv("MGPU_PTX_OVERRIDE"),  -- directory of hand-edited PTX kernels load instead
  poison_outputs = nil,                     -- fill outputs with 0xFF before launch (default: in interpret mode)
  quiet = false,                            -- no interpret-mode notice
  abstract_arrays = nil,                    -- false: compile-only mode still allocates arrays
  device = nil,                             -- CUDA device ordinal (mgpu -n N: the process's rank)
  timeout_ms = nil,                         -- the watchdog (default: MGPU_TIMEOUT_MS; 0 = none)
  max_trace_ops = nil,                      -- ops one kernel body may trace (default: MGPU_MAX_TRACE_OPS, else 100000)
  target = nil,                             -- "sm_90a" or "sm_100a" (default: MGPU_TARGET, else the device's)
}

--- Code-generation targets by name, and the engine's codes for them (mgpu_target).
M.targets = { sm_90a = 90, sm_100a = 100 }
local target_names = { [90] = "sm_90a", [100] = "sm_100a" }

local ctx, info
local options = { mode = true, emit_ptx = true, ptx_override = true, poison_outputs = true, quiet = true,
                  abstract_arrays = true, device = true, timeout_ms = true, max_trace_ops = true,
                  target = true }
local anytime = { timeout_ms = true, max_trace_ops = true, target = true }   -- options that apply at once

M.DEFAULT_MAX_TRACE_OPS = 100000

--- The ops one kernel body may trace before tracing stops with an error:
--- a Lua loop that unrolls far more than meant would otherwise take seconds
--- and gigabytes.  mgpu.configure{ max_trace_ops = n } or MGPU_MAX_TRACE_OPS.
function M.max_trace_ops()
  local n = M.config.max_trace_ops
  if n then return n end
  local env = os.getenv("MGPU_MAX_TRACE_OPS")
  n = env and tonumber(env)
  if env and env ~= "" and not (n and n >= 1 and n == math.floor(n)) then
    compat.fail("MAX_TRACE_OPS_ENV", env)
  end
  return n or M.DEFAULT_MAX_TRACE_OPS
end

local function set_timeout(ms)
  local ok, err = pcall(M.core.ctx_set_timeout, ctx, ms)
  if not ok then compat.rethrow(err) end
end

--- Set options; only possible before the first kernel or array is made,
--- except timeout_ms (milliseconds a kernel may run, 0 = no bound) and
--- max_trace_ops (ops a kernel body may trace), which apply at once, and
--- target ("sm_90a" or "sm_100a"), which kernels traced from then on are
--- compiled for.
function M.configure(opts)
  if type(opts) ~= "table" then compat.fail("EXPECTS_OPTIONS_GOT", "mgpu.configure", type(opts)) end
  local t = opts.timeout_ms
  if t ~= nil and (type(t) ~= "number" or t < 0 or t ~= math.floor(t)) then
    compat.fail("CONFIGURE_TIMEOUT", tostring(t))
  end
  local m = opts.max_trace_ops   -- (false: back to the default)
  if m ~= nil and m ~= false and (type(m) ~= "number" or m < 1 or m ~= math.floor(m) or m == math.huge) then
    compat.fail("CONFIGURE_MAX_TRACE_OPS", tostring(m))
  end
  if opts.target ~= nil and not M.targets[opts.target] then compat.fail("CONFIGURE_TARGET", compat.describe(opts.target)) end
  for k in pairs(opts) do
    if not options[k] then compat.fail("UNKNOWN_OPTION", "mgpu.configure", tostring(k)) end
    if ctx and not anytime[k] then
      compat.fail("TOO_LATE", "mgpu.configure{ " .. tostring(k) .. " }")
    end
  end
  for k, v in pairs(opts) do M.config[k] = v end
  if ctx and t then set_timeout(t) end
  if info and opts.target then info.target = opts.target end
end

-- The context's device information; `target` is the target kernels are compiled for, by name
-- (mgpu.configure's, else the context's default).
local function device_info(c)
  local d = M.core.device(c)
  d.target = M.config.target or target_names[d.target]
  return d
end

--- The target kernels are compiled for: "sm_90a" or "sm_100a".
function M.target() return M.info().target end

--- Bumped when the default context is replaced (kernels key their compiled
--- entries on it).
M.epoch = 0

--- After a GPU fault or timeout lost the context: a fresh one (arrays made
--- before are gone, kernels load again) and a notice; nil when nothing was
--- lost.  When the driver refuses the process a new context (it keeps
--- illegal-address and illegal-instruction faults for the process's life),
--- the default context becomes an interpreter one and the notice says so.
function M.recover()
  if not ctx or not M.core.ctx_lost(ctx) then return nil end
  local ok, err = pcall(M.core.ctx_recover, ctx)
  if ok then return "the GPU context was lost; a fresh one is ready (arrays made before it are gone)" end
  local why = tostring(err):match("%((.-)%)") or tostring(err)
  ctx = M.core.ctx_new("interpret", M.config.device)
  info = device_info(ctx)
  M.epoch = M.epoch + 1
  if M.config.timeout_ms then set_timeout(M.config.timeout_ms) end
  M.config.poison_outputs = true
  return "the GPU context was lost and the driver will not make this process a new one (" .. why .. "): kernels run "
         .. "in the interpreter from now on (arrays made before are gone); restart mgpu to use the GPU again"
end

--- Make an existing context handle the default (the script layer binds its
--- engine-owned state to the embedder's context this way).
function M.use(handle)
  if ctx then compat.fail("TOO_LATE", "mgpu.context.use") end
  ctx = handle
  info = device_info(ctx)
  if M.config.timeout_ms then set_timeout(M.config.timeout_ms) end
  if M.config.poison_outputs == nil then M.config.poison_outputs = info.mode ~= "gpu" end
end

--- Whether the default context exists yet (configure's settings apply until it does).
function M.created() return ctx ~= nil end

--- The default context, created on first use.
function M.get()
  if ctx then return ctx end
  local co = os.getenv("MGPU_COMPILE_ONLY")
  co = co and co ~= "" and co ~= "0"
  local mode = M.config.mode or ((M.config.emit_ptx or co) and "compile") or "auto"
  ctx = M.core.ctx_new(mode, M.config.device)
  info = device_info(ctx)
  if M.config.timeout_ms then set_timeout(M.config.timeout_ms) end
  if M.on_create then M.on_create(ctx) end
  if info.mode == "interpret" and not M.config.quiet and mode ~= "interpret" then
    -- one short line: the reason's first clause without its details (`mgpu info` prints them)
    local short = info.reason:gsub("%s*%b()", ""):match("^[^;]*")
    local why = info.reason:match("^MGPU_INTERPRET") and info.reason or ("no GPU (" .. short .. ")")
    io.stderr:write("mgpu: " .. why .. "; kernels run in the interpreter\n")
  end
  if M.config.poison_outputs == nil then M.config.poison_outputs = info.mode ~= "gpu" end
  return ctx
end

-- Memory held outside the Lua heap (device buffers, host arrays) is freed by
-- the collector, which sees only the small Lua objects holding it.  After
-- every step of such allocations a full collection runs, so unreachable
-- buffers cannot pile up for long; an allocation that fails collects and
-- tries again (array.lua), so the step only bounds how much waits for the
-- collector.  A full collection takes about 50 us: GPU memory has a step of
-- 256 MiB, so a loop making 4 MiB outputs pays it every 64 calls; host
-- memory (host arrays, and arrays in the interpreter) keeps 16 MiB, so the
-- process's resident set stays close to what it uses.
local pending = { gpu = 0, host = 0 }
local step = { gpu = 256 * 2 ^ 20, host = 16 * 2 ^ 20 }

--- Note `bytes` newly allocated outside the Lua heap, on the GPU when
--- `gpu` is true (a device array with a GPU), else in host memory.
function M.track(bytes, gpu)
  local kind = gpu and "gpu" or "host"
  pending[kind] = pending[kind] + bytes
  if pending[kind] >= step[kind] then
    pending.gpu, pending.host = 0, 0
    collectgarbage()
  end
end

function M.info()
  M.get()
  return info
end

return M
