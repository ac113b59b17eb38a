--[[
mgpu.wgmma -- warpgroup matrix multiply (Pallas' plgpu.ACC, wgmma,
wgmma_wait) and register reallocation (set_max_registers).

  mgpu.run_scoped(function(acc)
    mgpu.wgmma(acc, a_smem, b_smem)        -- acc += a @ b, asynchronously
    mgpu.wgmma_wait(0)
    out:store(acc:load():astype("bf16"))   -- reading the accumulator waits for its wgmmas
  end, mgpu.ACC({ 128, 128 }, "f32"))

Reading an accumulator waits for the wgmma groups into it; groups issued
after its last one (in the same region, with no wait or nested region
between) into other accumulators stay in flight.

Operands: A is an SMEM ref (M, K) or a 16-bit register array in the WGMMA
layout; B an SMEM ref (K, N).  SMEM operands are tiled (8, swizzle/bytes)
and swizzled (32, 64 or 128 bytes; A and B alike); a 16-bit operand may be
MN-major (an SMEM ref seen through transpose_ref), others are K-major.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"

local M = {}
local fail = compat.fail

local Acc = {}
-- an ACC spec used as if it were the accumulator: say how to allocate it
local ref_methods = { load = true, store = true, at = true, transpose = true, reshape = true, bitcast = true }
Acc.__index = function(_, k)
  if ref_methods[k] then fail("ACC_NOT_ALLOCATED", "acc:" .. k) end
  return nil
end
Acc.__tostring = function(s) return string.format("mgpu.ACC(%s, %s)", compat.shape_str(s.shape), s.dtype) end
Acc.__alloc = function(s)
  local ref = trace.op("acc_alloc", nil, { trace.dtype_code(s.dtype), s.shape[1], s.shape[2] }, nil, nil, s.where)
  if s.init then   -- ACC.init(array): the accumulator starts from the array (stored in the WGMMA layout)
    trace.op("store", { ref, s.init }, nil, nil, nil, s.where)
  end
  return ref
end

--- mgpu.ACC({M, N}, "f32"): a zero-initialised wgmma accumulator for run_scoped.
--- mgpu.ACC.init(array): one starting from a register array (M, N) of f32
--- (or f16) in the WGMMA layout.  (Acc specs are also WGMMAAccumulatorRef.)
M.ACC = setmetatable({}, { __call = function(_, shape, dtype)
  shape = compat.shape(shape, "ACC shape")
  if #shape ~= 2 then fail("ACC_SHAPE") end
  dtype = dtype or "f32"
  if dtype ~= "f32" and dtype ~= "f16" and dtype ~= "i32" then
    fail("ACC_DTYPE", tostring(dtype))
  end
  return setmetatable({ shape = shape, dtype = dtype, where = compat.where() }, Acc)
end })

function M.ACC.init(x)
  if not trace.is_value(x) or x.kind ~= "array" or #x.shape ~= 2 then
    fail("ACC_INIT_NOT_ARRAY", trace.is_value(x) and tostring(x) or type(x))
  end
  if x.dtype ~= "f32" and x.dtype ~= "f16" then
    fail("ACC_INIT_DTYPE", x.dtype)
  end
  local s = M.ACC(x.shape, x.dtype)
  s.init = x
  return s
end

--- acc += a @ b, asynchronously (one wgmma group).
function M.wgmma(acc, a, b)
  if getmetatable(acc) == Acc then fail("ACC_NOT_ALLOCATED", "wgmma") end
  if not trace.is_ref(acc) then fail("WGMMA_NOT_ACC") end
  if not trace.is_ref(a) and not trace.is_value(a) then fail("WGMMA_BAD_A") end
  if not trace.is_ref(b) then fail("WGMMA_BAD_B") end
  trace.op("wgmma", { acc, a, b })
end

--- Wait until at most n wgmma groups of this warpgroup are in flight.
function M.wgmma_wait(n) trace.op("wgmma_wait", {}, { compat.int(n or 0, "wgmma_wait n") }) end

--- setmaxnreg: this warpgroup's registers per thread become n (a multiple of
--- 8 from 24 to 256).  opts.action = "increase" or "decrease".
function M.set_max_registers(n, opts)
  opts = opts or {}
  if type(opts) ~= "table" then fail("MAX_REGISTERS_OPTIONS") end
  local act = opts.action
  if act ~= "increase" and act ~= "decrease" then fail("MAX_REGISTERS_ACTION") end
  trace.op("set_max_registers", {}, { compat.int(n, "set_max_registers n"), act == "increase" and 1 or 0 })
end

return M
