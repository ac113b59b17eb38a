--[[
mgpu.tcgen05 -- Blackwell (sm_100a) tensor memory and the fifth-generation
tensor core (Pallas' plgpu.TMEM, async_load_tmem, async_store_tmem,
wait_load_tmem, commit_tmem, tcgen05_mma, tcgen05_commit_arrive).

  scratch_shapes = { acc = mgpu.TMEM({ 128, 256 }, "f32") }
  local x = mgpu.async_load_tmem(s.acc:at(mgpu.all, mgpu.ds(0, 64)))   -- Layout.TCGEN05
  mgpu.wait_load_tmem()                      -- before the columns may be overwritten

TMEM is per block: 128 rows (lanes) of up to 512 32-bit columns; values
narrower than 32 bits are packed into columns (2 bf16, 4 f8).  Refs to it
are sliced along columns.  A load's array is ready when async_load_tmem
returns, but the columns may be written again (by an MMA, a store) only
after the loading warpgroup has called wait_load_tmem; stores become
visible to other warpgroups and to MMAs after commit_tmem.

  mgpu.tcgen05_mma(acc, a_smem, b_smem, { accumulate = mgpu.gt(k, 0) })
  mgpu.tcgen05_commit_arrive(mma_done)     -- arrives when the MMAs so far are done

An MMA is issued by one thread of the warpgroup (or of a single_warp
region) and runs asynchronously: acc (128, N) = a (128, K) @ b (K, N) + acc.
A comes from SMEM or TMEM, B from SMEM (tiled and swizzled like wgmma's
operands).  With collective_axis (the first cluster axis, of size 2) the
cluster pair runs one 2-CTA MMA, issued by the pair's first block: each
block holds 128 rows of A and of the accumulator and half of B's columns.
Barriers that tensor-core work arrives on, or that order TMEM reads and
writes between warpgroups, are made with orders_tensor_core = true.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"
local context = require "mgpu.context"

local M = {}
local fail = compat.fail

local Spec = {}
Spec.__index = Spec
Spec.__tostring = function(s)
  return string.format("mgpu.TMEM(%s, %s%s)", compat.shape_str(s.shape), s.dtype, s.collective and ", collective" or "")
end
Spec.__alloc = function(s)
  return trace.op("tmem_alloc", nil, { trace.dtype_code(s.dtype), s.shape[1], s.shape[2], s.collective and 1 or 0 }, nil, nil,
                  s.where)
end

--- mgpu.TMEM({rows, cols}, dtype, { collective = false, packed = true }):
--- tensor memory for scratch_shapes or run_scoped (Blackwell).  128 rows;
--- dtypes narrower than 32 bits are packed into 32-bit columns (packed =
--- false is not supported).  collective: the TMEM of a cluster pair's 2-CTA
--- MMAs (a kernel's TMEM is all collective or none).
function M.TMEM(shape, dtype, opts)
  dtype = context.memory_dtype(dtype, "TMEM")
  opts = opts or {}
  if type(opts) ~= "table" then fail("OPTIONS_NOT_TABLE", "TMEM") end
  compat.check_keys(opts, { collective = true, packed = true }, "TMEM")
  shape = compat.shape(shape, "TMEM shape")
  if #shape ~= 2 then fail("TMEM_RANK", #shape) end
  if opts.packed == false and context.core.dtype_size(dtype) < 4 then fail("TMEM_UNPACKED", dtype) end
  return setmetatable({ shape = shape, dtype = dtype, collective = opts.collective and true or false,
                        where = compat.where() }, Spec)
end

local function tmem_ref(r, what)
  if not trace.is_ref(r) then fail("NOT_REF", what, type(r)) end
  return r
end

--- The TMEM ref's values as an array (opts.layout: mgpu.Layout.TCGEN05, the
--- default for 32-bit values, or TCGEN05_TMEM_NATIVE, a row per thread, the
--- default for packed ones).
function M.async_load_tmem(r, opts)
  local text
  if opts ~= nil then
    if type(opts) ~= "table" then fail("OPTIONS_NOT_TABLE", "async_load_tmem") end
    compat.check_keys(opts, { layout = true }, "async_load_tmem")
    text = require("mgpu.layout").text(opts.layout, "async_load_tmem layout")
  end
  return trace.op("tmem_load", { tmem_ref(r, "async_load_tmem: the source") }, nil, nil, text)
end

--- Store an array of the TMEM ref's shape and dtype (visible to others after commit_tmem).
function M.async_store_tmem(r, x)
  if not trace.is_value(x) then fail("NOT_ARRAY", "async_store_tmem: the value", type(x)) end
  trace.op("tmem_store", { tmem_ref(r, "async_store_tmem: the destination"), x })
end

--- Wait until this warpgroup's TMEM loads have read their columns.
function M.wait_load_tmem() trace.op("tmem_wait_load", {}) end

--- Wait until this warpgroup's TMEM stores are done (then signal readers).
function M.commit_tmem() trace.op("tmem_commit", {}) end

-- The cluster pair of a collective_axis: the first cluster axis, of size 2.
local function pair_axis(axis, what)
  if axis == nil then return 0 end
  local mask = require("mgpu.barrier").cluster_mask(axis, what .. ": collective_axis")
  local spec = trace.tr().spec
  if mask ~= 1 or (spec.cluster or {})[1] ~= 2 then fail("COLLECTIVE_AXIS_PAIR", what, tostring(axis)) end
  return 1
end

--- acc = a @ b (+ acc): opts.accumulate (true, the default; false; or a
--- traced pred), opts.collective_axis (a 2-CTA MMA over the cluster pair),
--- opts.barrier (a commit arrives on it, as tcgen05_commit_arrive).  A
--- barrier may also come fourth, as in Pallas.
function M.tcgen05_mma(acc, a, b, barrier, opts)
  if opts == nil and type(barrier) == "table" and not trace.is_ref(barrier) then barrier, opts = nil, barrier end
  opts = opts or {}
  if type(opts) ~= "table" then fail("OPTIONS_NOT_TABLE", "tcgen05_mma") end
  for _, key in ipairs({ "a_scale", "b_scale", "a_sparse_metadata" }) do
    if opts[key] ~= nil then fail("TCGEN05_NOT_YET", "tcgen05_mma: " .. key, "block-scaled and sparse MMAs") end
  end
  compat.check_keys(opts, { accumulate = true, collective_axis = true, barrier = true }, "tcgen05_mma")
  for i, x in ipairs({ acc, a, b }) do
    if not trace.is_ref(x) then fail("ARGUMENT_NOT_REF", "tcgen05_mma", i, type(x)) end
  end
  barrier = barrier or opts.barrier
  local pair = pair_axis(opts.collective_axis, "tcgen05_mma")
  local accumulate, operands = opts.accumulate, { acc, a, b }
  local mode
  if accumulate == nil or accumulate == true then mode = 1
  elseif accumulate == false then mode = 0
  elseif trace.is_value(accumulate) then mode, operands[4] = 2, accumulate
  else fail("TCGEN05_ACCUMULATE", compat.describe(accumulate)) end
  trace.op("tcgen05_mma", operands, { mode, pair })
  if barrier ~= nil then M.tcgen05_commit_arrive(barrier, { collective_axis = opts.collective_axis }) end
end

--- One arrival on the barrier once every tcgen05_mma this warpgroup issued
--- so far is done (on both blocks' barriers with collective_axis).
function M.tcgen05_commit_arrive(barrier, opts)
  if type(opts) == "string" then opts = { collective_axis = opts } end
  opts = opts or {}
  if type(opts) ~= "table" then fail("OPTIONS_NOT_TABLE", "tcgen05_commit_arrive") end
  compat.check_keys(opts, { collective_axis = true }, "tcgen05_commit_arrive")
  if not trace.is_ref(barrier) then fail("NOT_BARRIER", "tcgen05_commit_arrive", type(barrier)) end
  trace.op("tcgen05_commit", { barrier }, { pair_axis(opts.collective_axis, "tcgen05_commit_arrive") })
end

return M
