--[[
mgpu.distributed -- kernels over several devices, as Pallas Mosaic GPU
writes them: one program per device (SPMD), symmetric arrays, views of
another device's copy (ref:on_device(d)), GMEM semaphores signalled across
devices, and host barriers.

A job is `mgpu -n N script.lua` (one process per GPU over NVSHMEM, or N
simulated devices in the interpreter when there is no such setup), a job a
launcher started (torchrun, srun, mpirun: one process per GPU, joined by
mgpu.distributed.init{}, which the mgpu command calls before the script), or,
for embedders, mgpu.distributed.init{ rank, count, uid } on a GPU.  Without
a job there is one device: device_id() is 0 and on_device(0) is the ref.

Kernels that view other devices take the job's peer table (a hidden
parameter); in a simulated job every device's launch of such a kernel waits
for the others' and the interpreter runs them together.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local context = require "mgpu.context"
local array = require "mgpu.array"
local trace = require "mgpu.trace"
local smem = require "mgpu.smem"
local launcher = require "mgpu.launcher"

local M = {}
local fail = compat.fail

-- The job set up by the mgpu command (mgpu -n N) before the script runs:
-- { world = light userdata, rank, count } or { rank, count, uid }.
M.job = nil

--- Join a new default context to the job, if there is one.
context.on_create = function(ctx)
  local job = M.job
  if not job or job.compile then return end
  if job.world then context.core.world_join(ctx, job.world, job.rank)
  else context.core.dist_init(ctx, job.rank, job.count, job.uid) end
end

-- Join the job launcher `l` (mgpu.launcher.detect) started, waiting at most
-- `timeout` seconds for rank 0's unique id; a compiling context only takes
-- its rank, as mgpu -n N --emit-ptx does.
local function join_launched(l, timeout)
  if l.count == 1 then return end                  -- one rank: no job, as mgpu without -n
  if not context.created() and context.config.device == nil then context.configure{ device = l.device } end
  local ctx, info = context.get(), context.info()
  if info.mode == "compile" then M.job = { rank = l.rank, count = l.count, compile = true }; return end
  if info.mode ~= "gpu" then fail("LAUNCH_NO_GPU", l.launcher, l.rank, l.count, info.reason, l.count) end
  local ok, uid = true, nil
  if l.rank == 0 then ok, uid = pcall(context.core.dist_uid) end
  if not ok then fail("FAILED_WITH", "distributed.init", tostring(uid)) end
  local ms = math.floor(timeout * 1000)
  ok, uid = pcall(context.core.dist_rendezvous, ctx, l.where, l.key, l.rank, l.count, ms, uid)
  if not ok then fail("LAUNCH_RENDEZVOUS", l.launcher, l.via, l.where, tostring(uid)) end
  ok, uid = pcall(context.core.dist_init, ctx, l.rank, l.count, uid)
  if l.rank == 0 and l.file then os.remove(l.file) end   -- the others have read it: NVSHMEM's init waits for all
  if not ok then fail("FAILED_WITH", "distributed.init", tostring(uid)) end
end

--- mgpu.distributed.init{} (or { timeout = seconds }): make this process
--- its device of the job of the launcher that started it (torchrun, srun,
--- mpirun; mgpu.launcher), on the GPU of its local rank.  The mgpu command
--- does it before the script; in a process that is a device of a job already
--- (that, or mgpu -n) it does nothing.
--- mgpu.distributed.init{ rank = r, count = n, uid = s }: for embedders,
--- make this process device r of an NVSHMEM job of n GPUs; rank 0 makes uid
--- with mgpu.distributed.unique_id() and hands it to every rank.
function M.init(opts)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then fail("DIST_INIT_OPTIONS") end
  if opts.rank == nil and opts.count == nil and opts.uid == nil then
    compat.check_keys(opts, { timeout = true }, "distributed.init")
    local t = opts.timeout
    if t ~= nil and (type(t) ~= "number" or not (t > 0 and t < math.huge)) then fail("LAUNCH_TIMEOUT", tostring(t)) end
    if M.job or (context.created() and M.process_count() > 1) then return end   -- a device of a job already
    local l, why = launcher.detect(os.getenv)
    if not l then fail("LAUNCH_NONE", why and " (" .. why .. ")" or "") end
    return join_launched(l, t or l.timeout)
  end
  compat.check_keys(opts, { rank = true, count = true, uid = true }, "distributed.init")
  local count = compat.int(opts.count, "distributed.init: count")
  local rank = compat.int(opts.rank, "distributed.init: rank")
  if count < 1 or rank < 0 or rank >= count then fail("DIST_INIT_RANK", rank, count) end
  if type(opts.uid) ~= "string" or #opts.uid ~= 128 then
    fail("DIST_INIT_UID")
  end
  local ok, err = pcall(context.core.dist_init, context.get(), rank, count, opts.uid)
  if not ok then fail("FAILED_WITH", "distributed.init", tostring(err)) end
end

--- A fresh NVSHMEM unique id (128 bytes), made by rank 0.
function M.unique_id()
  local ok, uid = pcall(context.core.dist_uid)
  if not ok then fail("ENGINE_ERROR", tostring(uid)) end
  return uid
end

--- This device's index and the device count.
function M.process_index()
  if M.job then return M.job.rank end
  return (context.core.dist_info(context.get()))
end
function M.process_count()
  if M.job then return M.job.count end
  local _, n = context.core.dist_info(context.get())
  return n
end

--- Wait until every device has finished its earlier work and got here.
function M.barrier()
  local ok, err = pcall(context.core.dist_barrier, context.get())
  if not ok then fail("ENGINE_ERROR", tostring(err)) end
end

--- A zeroed symmetric array (collective).
M.symmetric = array.symmetric

-- -- In kernels -------------------------------------------------------------------

-- The peer table of the kernel being traced (a hidden parameter).
local function peers(what)
  local t = trace.tr()
  if not t.peers then fail("SINGLE_DEVICE", what) end
  return t.peers
end

--- This device's index (an i32 scalar; 0 without a job), read at the
--- kernel's entry (kernel.lua), so calls in loops cost nothing.
function M.device_id()
  local t = trace.tr()
  if not t.peers then return trace.const(0, "i32") end
  return t.device_id
end

--- The number of devices (a Lua number, known when tracing).
function M.device_count() return M.process_count() end

-- Device d (a number, checked against the job, or a traced scalar) as an
-- i32 value; `arg` names it in messages ("device", "device_id").
local function device_arg(d, what, arg)
  local n = M.process_count()
  arg = arg or "device"
  if type(d) == "number" then
    d = compat.int(d, what .. ": " .. arg)
    if d < 0 or d >= n then fail("DEVICE_OUT_OF_RANGE", what, arg, d, n, n == 1 and "" or "s", n - 1) end
    return trace.const(d, "i32")
  end
  if not trace.is_value(d) or d.kind ~= "scalar" then fail("DEVICE_BAD", what) end
  if d.dtype ~= "i32" then d = d:astype("i32") end
  return d
end

local spaces = { smem = "SMEM", regs = "registers (an accumulator)", barrier = "barrier memory", tmem = "TMEM" }

--- ref:on_device(d): the same view of a symmetric array's copy on device d.
function trace.ref_methods.on_device(ref, d)
  if not trace.is_ref(ref) then fail("ON_DEVICE_NO_COLON") end
  if ref.space ~= "gmem" then fail("ON_DEVICE_NOT_GMEM", spaces[ref.space] or ref.space, ref.dtype, compat.shape_str(ref.shape)) end
  local dev = device_arg(d, "on_device")
  if not trace.tr().peers then return ref end   -- one device: device 0 is this one
  return trace.op("remote", { ref, dev, peers("on_device") })
end

--- mgpu.multimem_store(x, ref): x into ref's view on every device at once
--- (NVLink multicast, multimem.st).  The interpreter runs it; GPU launches
--- refuse it, as mgpu never creates multicast objects.
function M.multimem_store(x, ref)
  if not trace.is_ref(ref) then fail("MULTIMEM_STORE_NOT_REF") end
  x = trace.lift(x, ref)
  if not trace.tr().peers then return ref:store(x) end
  trace.op("multimem_store", { ref, x, peers("multimem_store") })
end

local reductions = { add = 0, min = 1, max = 2 }
--- mgpu.multimem_load_reduce(ref, op = "add"): the reduction over every
--- device's copy of ref's view (multimem.ld_reduce); as multimem_store.
function M.multimem_load_reduce(ref, op)
  if not trace.is_ref(ref) then fail("MULTIMEM_LOAD_NOT_REF") end
  if type(op) == "table" then compat.check_keys(op, { reduction_op = true }, "multimem_load_reduce"); op = op.reduction_op end
  local code = reductions[op or "add"]
  if not code then fail("MULTIMEM_REDUCTION", tostring(op)) end
  if not trace.tr().peers then return ref:load() end
  return trace.op("multimem_load", { ref, peers("multimem_load_reduce") }, { code })
end

-- -- Semaphores -----------------------------------------------------------------------

local Sem = { __hidden = true }     -- a SemaphoreType.REGULAR scratch spec
Sem.__index = Sem

--- The ref of a hidden GMEM scratch spec (a semaphore or mgpu.GMEM scratch):
--- the parameter kernel.lua made for it before tracing, in allocation order.
--- Outside scratch_shapes (in run_scoped) fails with `code`.
function M.take_hidden(spec, code)
  local q = trace.tr().hidden_queue
  if not q or #q == 0 then fail(code) end
  local ref = table.remove(q, 1)
  assert(ref.spec == spec)   -- an internal check: parameters are made in allocation order
  return ref.ref
end
Sem.__alloc = function(spec) return M.take_hidden(spec, "SEMAPHORE_IN_RUN_SCOPED") end

local function sem_spec(shape)
  shape = shape == nil and {} or shape
  if type(shape) == "number" then shape = { shape } end
  return setmetatable({ shape = compat.shape(shape, "SemaphoreType.REGULAR shape"), where = compat.where() }, Sem)
end

--- mgpu.SemaphoreType.REGULAR(shape) (or .REGULAR for one): i32 GMEM
--- semaphores in scratch_shapes, symmetric and zero at the kernel's start;
--- every signal must be matched by a wait before the kernel ends.
M.SemaphoreType = setmetatable({}, { __index = function(_, k)
  if k == "REGULAR" then
    return setmetatable({ shape = {}, where = "?" }, {
      __index = Sem, __alloc = Sem.__alloc, __hidden = true,
      __call = function(_, shape) return sem_spec(shape) end })
  end
  if k == "BARRIER" then fail("SEMAPHORE_BARRIER") end
  fail("SEMAPHORE_TYPE_UNKNOWN", tostring(k))
end })

function M.is_sem_spec(x)
  local mt = getmetatable(x)
  return mt == Sem or (type(mt) == "table" and mt.__alloc == Sem.__alloc)
end

local function sem_ref(sem, what)
  if not trace.is_ref(sem) or sem.dtype ~= "i32" then
    fail("NOT_SEMAPHORE", what)
  end
  if #sem.shape ~= 0 then
    fail("SEMAPHORE_NOT_ONE", what, compat.shape_str(sem.shape))
  end
  return sem
end

local function signal_args(sem, inc, opts, what)
  if type(inc) == "table" and opts == nil then opts, inc = inc, nil end
  opts = opts or {}
  if type(opts) ~= "table" then fail("SIGNAL_OPTIONS", what) end
  compat.check_keys(opts, { device_id = true, inc = true }, what)
  inc = inc or opts.inc or 1
  sem = sem_ref(sem, what)
  if opts.device_id ~= nil then sem = sem:on_device(device_arg(opts.device_id, what, "device_id")) end
  return sem, trace.lift(inc, sem)
end

--- mgpu.semaphore_signal(sem, inc, { device_id = d }) (or (sem, { inc, device_id })):
--- add inc to the semaphore (on device d), releasing the warpgroup's
--- earlier writes to whoever waits for it.
function M.semaphore_signal(sem, inc, opts)
  local s, v = signal_args(sem, inc, opts, "semaphore_signal")
  trace.op("atomic", { s, v }, { 0, 2, 3 })       -- add, release, system scope
end

--- mgpu.semaphore_wait(sem, value = 1): wait until the semaphore holds at
--- least value, take value off, and see what the signallers released.
function M.semaphore_wait(sem, value)
  sem = sem_ref(sem, "semaphore_wait")
  trace.op("sem_wait", { sem, trace.lift(value == nil and 1 or value, sem) })
end

--- mgpu.SemaphoreSignal(sem, { device_id, inc }): one signal for semaphore_signal_parallel.
function M.SemaphoreSignal(sem, opts)
  return { sem = sem, opts = opts or {}, where = compat.where() }
end

--- mgpu.semaphore_signal_parallel(signal, ...): every signal, each releasing
--- the writes before it.
function M.semaphore_signal_parallel(...)
  local n = select("#", ...)
  for i = 1, n do
    local s = select(i, ...)
    if type(s) ~= "table" or s.sem == nil then fail("SIGNAL_PARALLEL_ARG", i) end
    M.semaphore_signal(s.sem, s.opts)
  end
end

-- -- Kernel set-up (kernel.lua) ------------------------------------------------------------

--- The hidden GMEM scratch specs of a kernel (semaphores and mgpu.GMEM
--- scratch), in allocation order (the order smem.alloc / alloc_tree visit them).
function M.hidden_specs(scratch, named)
  local out = {}
  local function hidden(v) local mt = getmetatable(v); return type(mt) == "table" and mt.__hidden == true end
  local function walk(v)
    if hidden(v) then out[#out + 1] = v
    elseif type(v) == "table" and getmetatable(v) == nil then
      for _, k in ipairs(smem.tree_keys(v)) do walk(v[k]) end
    end
  end
  if named then walk(scratch) else for i = 1, #scratch do if hidden(scratch[i]) then out[#out + 1] = scratch[i] end end end
  return out
end

--- The job's device count when the context is a device of one, else nil.
function M.job_count()
  local n = M.process_count()
  if n > 1 or M.job then return n end
  return nil
end

--- After an interpreted launch: every semaphore is back at zero (the next
--- launch reuses them), else an error naming the count left over.
function M.check_sems(name, arrays)
  for i, a in ipairs(arrays) do
    for j, x in ipairs(a:to_table()) do   -- flat, row-major
      if x ~= 0 then
        fail("SEMAPHORE_LEFT_OVER", name, j - 1, i, x)
      end
    end
  end
end

--- The peer table buffer of the context (i64[3 + count]).
function M.table_buffer()
  M.table_buf = M.table_buf or context.core.dist_table(context.get())
  return M.table_buf
end

return M
