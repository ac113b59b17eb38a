--[[
mgpu.copy -- asynchronous copies between GMEM and SMEM through the tensor
memory accelerator (Pallas' copy_gmem_to_smem, copy_smem_to_gmem,
commit_smem, commit_smem_to_gmem_group, wait_smem_to_gmem), and
asynchronous stores of registers into another block's SMEM
(async_store_smem).

  mgpu.copy_gmem_to_smem(a:at(mgpu.ds(i * 128, 128), mgpu.all), a_smem:at(slot), bars:at(slot))
  mgpu.barrier_wait(bars:at(slot))            -- the tile has landed
  ...
  mgpu.commit_smem()                          -- register stores visible to TMA
  mgpu.copy_smem_to_gmem(out_smem, out:at(...))
  mgpu.wait_smem_to_gmem(0)

A GMEM->SMEM copy is one arrival on its barrier plus the bytes it brings;
parts of the box outside the array are filled with zeros.  The SMEM side's
tiling appears to the copy engine as extra GMEM dims, so the tile lands in
exactly the layout wgmma and register loads read.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"
local barrier = require "mgpu.barrier"
local smem = require "mgpu.smem"

local M = {}
local fail = compat.fail

local function check_opts(opts, what, known)
  if opts == nil then return {} end
  if type(opts) ~= "table" then fail("OPTIONS_NOT_TABLE", what) end
  compat.check_keys(opts, known, what)
  return opts
end

local function pred_of(p, what)
  if p == nil or p == true then return nil end
  if p == false then return trace.const(false) end
  if not trace.is_value(p) or p.dtype ~= "pred" then fail("COPY_PREDICATE", what) end
  return p
end

local oob_modes = { zeros = 0, undefined = 1, promise_in_bounds = 2 }

local Partition = {}
Partition.__index = Partition
Partition.__tostring = function(p) return string.format("mgpu.CopyPartition.PARTITIONED(%d)", p.dim) end
--- How a copy shared by a cluster pair is split (Blackwell, for 2-CTA MMAs):
--- PARTITIONED(dim): the GMEM view is twice the SMEM ref along dim (0-based),
--- each block of the pair loads its half into its own SMEM, and only the
--- pair's first block's barrier counts the bytes (its MMA reads both).
M.CopyPartition = {
  PARTITIONED = function(dim)
    return setmetatable({ dim = compat.int(dim, "CopyPartition.PARTITIONED dim") }, Partition)
  end,
}

--- Copy src (a GMEM ref or view) into dst (an SMEM ref of the same shape);
--- completion arrives on `barrier`.  opts: collective_axes (multicast to
--- every block of the cluster along them: each loads a part; with
--- leader_tracked = mgpu.CopyPartition.PARTITIONED(dim), the cluster pair
--- instead splits src between its blocks, see CopyPartition), predicate,
--- oob: what the part of the box outside src holds: "zeros" (the default,
--- the tensor copy's zero fill), "undefined" (anything), "promise_in_bounds"
--- (the program promises there is none; the interpreter checks).  With the
--- last two, a copy of one contiguous GMEM range into a contiguous part of
--- an untransformed SMEM buffer, 16-byte aligned, is a plain bulk copy (no
--- tensor map); "undefined" stops it at the source's end.
function M.copy_gmem_to_smem(src, dst, bar, opts)
  local what = "copy_gmem_to_smem"
  opts = check_opts(opts, what, { collective_axes = true, predicate = true, oob = true, leader_tracked = true })
  local oob = oob_modes[opts.oob == nil and "zeros" or opts.oob]
  if not oob then
    fail("COPY_OOB", what, tostring(opts.oob))
  end
  if bar == nil then fail("COPY_NO_BARRIER", what) end
  for i, r in ipairs({ src, dst, bar }) do
    if not trace.is_ref(r) then fail("ARGUMENT_NOT_REF", what, i, type(r)) end
  end
  local mask = barrier.cluster_mask(opts.collective_axes, what)
  local p = pred_of(opts.predicate, what)
  local operands = { src, dst, bar }
  if p then operands[4] = p end
  if opts.leader_tracked ~= nil then   -- the pair is the collective axis, which must be the first cluster axis, of size 2
    if getmetatable(opts.leader_tracked) ~= Partition then fail("COPY_LEADER_TRACKED", what, compat.describe(opts.leader_tracked)) end
    if mask ~= 1 or (trace.tr().spec.cluster or {})[1] ~= 2 then
      fail("COLLECTIVE_AXIS_PAIR", what, tostring(opts.collective_axes))
    end
    trace.op("tma_load", operands, { 0, p and 1 or 0, oob, 1 + opts.leader_tracked.dim })
    return
  end
  trace.op("tma_load", operands, oob == 0 and { mask, p and 1 or 0 } or { mask, p and 1 or 0, oob })
end

local reductions = { add = 1, min = 2, max = 3, inc = 4, dec = 5, ["and"] = 6, ["or"] = 7, xor = 8 }

--- Copy src (SMEM) into dst (GMEM) asynchronously.  opts: commit_group
--- (default true: the copy ends a group awaited by wait_smem_to_gmem),
--- reduction_op ("add", "min", "max", ...: combine with what dst holds),
--- predicate.
function M.copy_smem_to_gmem(src, dst, opts)
  local what = "copy_smem_to_gmem"
  opts = check_opts(opts, what, { commit_group = true, reduction_op = true, predicate = true })
  for i, r in ipairs({ src, dst }) do
    if not trace.is_ref(r) then fail("ARGUMENT_NOT_REF", what, i, type(r)) end
  end
  local red = 0
  if opts.reduction_op ~= nil then
    red = reductions[opts.reduction_op]
    if not red then fail("COPY_REDUCTION", what, tostring(opts.reduction_op)) end
  end
  local p = pred_of(opts.predicate, what)
  local operands = { src, dst }
  if p then operands[3] = p end
  trace.op("tma_store", operands, { opts.commit_group == false and 0 or 1, red, p and 1 or 0 })
end

--- Store register array `value` asynchronously into SMEM ref `ref` (this
--- block's, of value's shape and dtype) as it is in the cluster's block
--- cluster_idx along cluster axis cluster_dim (Pallas' async_store_smem).
--- That block's `barrier` gets this warpgroup's one arrival, expecting the
--- bytes, and completes once they have all landed: the receiver waits on it
--- before reading.  opts: cluster_idx, cluster_dim, atomic ("add", "min",
--- "max", "and", "or", "xor": combine with what the SMEM holds; 32-bit
--- integers only), optimized (accepted; the stores take the widest access
--- the layout allows, as every SMEM store does).
function M.async_store_smem(value, ref, bar, opts)
  local what = "async_store_smem"
  if type(opts) ~= "table" then fail("ASYNC_STORE_SMEM_ARGS", "the options table is missing") end
  compat.check_keys(opts, { cluster_idx = true, cluster_dim = true, atomic = true, optimized = true }, what)
  if opts.cluster_idx == nil or opts.cluster_dim == nil then fail("ASYNC_STORE_SMEM_ARGS", "cluster_idx and cluster_dim are required") end
  if not trace.is_value(value) or value.kind ~= "array" then fail("ASYNC_STORE_SMEM_ARGS", "value must be a register array") end
  if not trace.is_ref(ref) then fail("ARGUMENT_NOT_REF", what, 2, type(ref)) end
  if not trace.is_ref(bar) then fail("ARGUMENT_NOT_REF", what, 3, type(bar)) end
  local red = 0
  if opts.atomic ~= nil then   -- (the reductions of copy_smem_to_gmem but inc and dec, which red.async lacks)
    red = opts.atomic ~= "inc" and opts.atomic ~= "dec" and reductions[opts.atomic]
    if not red then fail("ASYNC_STORE_SMEM_ATOMIC", tostring(opts.atomic)) end
  end
  local rank = smem.cluster_rank({ [opts.cluster_dim] = opts.cluster_idx }, what)
  trace.op("async_store_smem", { value, ref, bar, rank }, { red })
end

--- Make this warpgroup's ordinary SMEM writes visible to TMA and wgmma
--- (a proxy fence and a warpgroup barrier).  Needed between register stores
--- to SMEM and a copy or wgmma reading them.
function M.commit_smem() trace.op("commit_smem", {}) end

--- Close the current group of SMEM->GMEM copies.
function M.commit_smem_to_gmem_group() trace.op("commit_group", {}) end

--- Wait until at most n groups of this warpgroup's SMEM->GMEM copies are in
--- flight.  opts.wait_read_only: only until their SMEM may be reused; a full
--- wait also orders the copies' GMEM writes before the warpgroup's own later
--- generic accesses (fence.proxy.async.global).  Another block of the kernel
--- must read them with TMA (docs/reference.md).
function M.wait_smem_to_gmem(n, opts)
  opts = check_opts(opts, "wait_smem_to_gmem", { wait_read_only = true })
  trace.op("wait_group", {}, { compat.int(n or 0, "wait_smem_to_gmem n"), opts.wait_read_only and 1 or 0 })
end

return M
