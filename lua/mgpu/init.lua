--[[
mgpu -- Pallas-style Hopper and Blackwell kernels from Lua.

  local mgpu = require "mgpu"
  local add = mgpu.kernel{
    out_shape = mgpu.shape({1024}, "f32"), grid = {1},
    body = function(x, y, o) o:store(x:load() + y:load()) end,
  }
  local z = add(mgpu.iota(1024), mgpu.full(1024, 1))

The same scripts run under the `mgpu` command, under lua5.4 with the C
module, and under LuaJIT through the FFI.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local context = require "mgpu.context"
local array = require "mgpu.array"
local trace = require "mgpu.trace"
local ops = require "mgpu.ops"
local kernel = require "mgpu.kernel"
local bench = require "mgpu.bench"
local host = require "mgpu.host"
local layout = require "mgpu.layout"
local smem = require "mgpu.smem"
local barrier = require "mgpu.barrier"
local copy = require "mgpu.copy"
local wgmma = require "mgpu.wgmma"
local tcgen05 = require "mgpu.tcgen05"
local blockspec = require "mgpu.blockspec"
local loops = require "mgpu.loops"
local pipeline = require "mgpu.pipeline"
local pallas_call = require "mgpu.pallas_call"
local autotune = require "mgpu.autotune"
local distributed = require "mgpu.distributed"
local help = require "mgpu.help"

local mgpu = {
  _VERSION = "mgpu " .. context.core.version(),
  version = context.core.version(),
  engine_id = context.core.engine_id(),
  -- kernels
  kernel = kernel.kernel, shape = kernel.shape, show = kernel.show, CompilerParams = kernel.CompilerParams, scalar = kernel.scalar,
  ds = trace.ds, all = trace.all, const = trace.const,
  -- arrays
  array = array.array, from_table = array.from_table, empty = array.empty, zeros = array.zeros,
  full = array.full, iota = array.iota, random = array.random, is_array = array.is_array,
  abstract = array.abstract, is_abstract = array.is_abstract,
  from_dlpack = array.from_dlpack, dlpack_free = array.dlpack_free,
  -- configuration and device
  configure = context.configure,
  bench = bench.bench, autotune = autotune.autotune,
  host = host,
  Layout = layout.Layout, Replicated = layout.Replicated, LoweringSemantics = kernel.LoweringSemantics,
  -- shared memory
  SMEM = smem.SMEM, transforms = smem.transforms, find_swizzle = smem.find_swizzle, run_scoped = smem.run_scoped,
  transpose_ref = smem.transpose_ref, cluster_ref = smem.cluster_ref, TilingTransform = smem.TilingTransform, SwizzleTransform = smem.SwizzleTransform,
  TransposeTransform = smem.TransposeTransform,
  -- barriers, asynchronous copies, wgmma
  Barrier = barrier.Barrier, ClusterBarrier = barrier.ClusterBarrier, barrier_arrive = barrier.barrier_arrive,
  barrier_wait = barrier.barrier_wait,
  copy_gmem_to_smem = copy.copy_gmem_to_smem, copy_smem_to_gmem = copy.copy_smem_to_gmem, commit_smem = copy.commit_smem,
  async_store_smem = copy.async_store_smem,
  commit_smem_to_gmem_group = copy.commit_smem_to_gmem_group, wait_smem_to_gmem = copy.wait_smem_to_gmem,
  CopyPartition = copy.CopyPartition,
  ACC = wgmma.ACC, WGMMAAccumulatorRef = wgmma.ACC, wgmma = wgmma.wgmma, wgmma_wait = wgmma.wgmma_wait, set_max_registers = wgmma.set_max_registers,
  -- Blackwell: tensor memory, tcgen05, cluster launch control
  TMEM = tcgen05.TMEM, async_load_tmem = tcgen05.async_load_tmem, async_store_tmem = tcgen05.async_store_tmem,
  wait_load_tmem = tcgen05.wait_load_tmem, commit_tmem = tcgen05.commit_tmem,
  tcgen05_mma = tcgen05.tcgen05_mma, tcgen05_commit_arrive = tcgen05.tcgen05_commit_arrive,
  try_cluster_cancel = loops.try_cluster_cancel, query_cluster_cancel = loops.query_cluster_cancel,
  TryClusterCancelResult = loops.TryClusterCancelResult,
  -- pipelines and persistent loops
  BlockSpec = blockspec.BlockSpec, Element = blockspec.Element, squeezed = blockspec.squeezed, GMEM = blockspec.GMEM,
  MemorySpace = blockspec.MemorySpace,
  emit_pipeline = pipeline.emit_pipeline, emit_pipeline_warp_specialized = pipeline.emit_pipeline_warp_specialized,
  PipelineState = pipeline.PipelineState, nd_loop = loops.nd_loop, dynamic_scheduling_loop = loops.dynamic_scheduling_loop, planar_snake = loops.planar_snake,
  pallas_call = pallas_call.pallas_call,
  -- several devices
  distributed = distributed, process_index = distributed.process_index, process_count = distributed.process_count,
  symmetric = distributed.symmetric, device_id = distributed.device_id, SemaphoreType = distributed.SemaphoreType,
  semaphore_signal = distributed.semaphore_signal, semaphore_wait = distributed.semaphore_wait,
  SemaphoreSignal = distributed.SemaphoreSignal, semaphore_signal_parallel = distributed.semaphore_signal_parallel,
  multimem_store = distributed.multimem_store, multimem_load_reduce = distributed.multimem_load_reduce,
  -- the API reference
  help = help.help,
}

for k, v in pairs(ops) do mgpu[k] = v end
mgpu.in_kernel = nil
-- zeros, full, empty and iota make traced arrays inside a kernel body, device arrays elsewhere
for name, traced in pairs(ops.in_kernel) do
  local on_device = mgpu[name]
  mgpu[name] = function(...)
    if trace.current then return traced(...) end
    return on_device(...)
  end
end

-- Names of the Pallas Mosaic GPU module that mgpu does not provide, and what
-- to use instead; using one is an error that says so (rawget finds nil).
mgpu._NOT_PROVIDED = {
  as_torch_kernel = "called from Python: mgpu.as_torch_kernel(script, name) of the Python package (python/, " ..
                    "docs/python.md) runs this script's kernels on torch tensors; in Lua, exchange arrays " ..
                    "through DLPack (a:to_dlpack(), mgpu.from_dlpack(t))",
}
setmetatable(mgpu, { __index = function(_, k)
  local why = rawget(mgpu, "_NOT_PROVIDED")[k]
  if why then compat.fail("NOT_PROVIDED", "mgpu." .. tostring(k), why) end
end })

--- Device information: sm_count, name, smem_per_block, mode, ...
function mgpu.device() return context.info() end
--- True when kernels are only compiled (mgpu --emit-ptx, MGPU_COMPILE_ONLY=1):
--- arrays are abstract (no memory), kernels compile but do not run; scripts skip checks.
function mgpu.compile_only() return context.info().mode == "compile" end
--- True when kernels run in the CPU interpreter.
function mgpu.interpreting() return context.info().mode == "interpret" end
--- A script's arguments (`...`) split into the positional ones and a table
--- of `key=value` options (values that read as numbers become numbers):
--- `local pos, opt = mgpu.script_args(...)`.
function mgpu.script_args(...)
  local pos, opt = {}, {}
  for i = 1, select("#", ...) do
    local a = tostring((select(i, ...)))
    local k, v = a:match("^([%w_]+)=(.+)$")
    if k then opt[k] = tonumber(v) or v else pos[#pos + 1] = a end
  end
  return pos, opt
end
--- Wait for all launched work.
function mgpu.sync() context.core.sync(context.get()) end
--- Wait for all launched work and hand the memory that freed arrays left in
--- the driver's stream-ordered pool back to the device (for other libraries
--- in the process, such as torch after a DLPack exchange).
function mgpu.empty_cache() context.core.empty_cache(context.get()) end

return mgpu
