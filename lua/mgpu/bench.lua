--[[
mgpu.bench -- timing launches with device events (host clock in the
interpreter).  Benchmarks are not tests: use them from examples and tools.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local context = require "mgpu.context"

local M = {}

local function callable(f)
  return type(f) == "function" or (type(getmetatable(f)) == "table" and getmetatable(f).__call ~= nil)
end

-- A function launching a kernel that keeps one SM busy for about a tenth of a millisecond (a chain
-- of 20,000 dependent multiplies and adds), so that the host queues the launches behind it.  The
-- kernel is built once; its output is made per call of compare (arrays do not outlive a context
-- the REPL recovers).
local spin
local function lead_kernel()
  local mgpu = require "mgpu"
  spin = spin or mgpu.kernel{
    name = "bench_spin", grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
    body = function(o)
      local x0 = mgpu.astype(mgpu.program_id(0), "f32")   -- (not a constant: nothing to fold)
      local x = mgpu.fori(0, 20000, function(_, v) return v * 0.999 + 1.0 end, x0)
      o:store(mgpu.broadcast(x, { 128 }, "f32"))
    end,
  }
  local out = mgpu.empty({ 128 }, "f32")
  return function() spin:call_into(out) end
end

--- Median milliseconds of each of fns (a list of functions) over `reps`
--- timed batches of `inner` calls, after `warmup` calls of each.  The
--- batches take turns, in alternating order (fns[1], ..., fns[n], then
--- fns[n], ..., fns[1], ...), so clock and temperature drift weigh on every
--- function alike, and so does the place in a round (the first of a fixed
--- order reads slow against the same kernel later in it): the fair way to
--- compare two kernels.  opts:
--- warmup (default 5), reps (default 20), inner (default 10: back-to-back
--- launches).  On a GPU each timed batch starts behind a short kernel
--- (about 0.1 ms, untimed), so the batch's first launch is queued while
--- the GPU is busy and, as long as the later launches keep ahead of the
--- device, the batch times the device's work only, as the anchors' timers
--- (triton.testing.do_bench, behind its L2 flush) do: the first launch's
--- host time (which differs between libraries and would weigh on the side
--- that launches slower) stays out of the batch.  opts.host = true leaves the GPU idle
--- instead, so each batch's time includes its first launch's host time
--- (with inner = 1: each launch from an idle GPU).  Returns the medians,
--- then each function's sorted times.  opts.before, a function, runs
--- before each timed batch and outside it (M.l2_flush() with inner = 1
--- times as triton.testing.do_bench does: each launch after an L2 flush).
function M.compare(fns, opts)
  opts = opts or {}
  if type(fns) ~= "table" or #fns == 0 then compat.fail("BENCH_COMPARE_NOT_LIST") end
  for i, f in ipairs(fns) do
    if not callable(f) then compat.fail("BENCH_COMPARE_NOT_FUNCTION", i, type(f)) end
  end
  if type(opts) ~= "table" then compat.fail("BENCH_OPTIONS", type(opts)) end
  local warmup = compat.int(opts.warmup or 5, "warmup")
  local reps = compat.int(opts.reps or 20, "reps")
  local inner = compat.int(opts.inner or 10, "inner")
  if reps < 1 or inner < 1 then compat.fail("BENCH_REPS") end
  local before = opts.before
  if before ~= nil and not callable(before) then compat.fail("BENCH_BEFORE", type(before)) end
  local mode = context.info().mode
  if mode == "compile" then compat.fail("BENCH_COMPILE_ONLY") end   -- nothing runs: no time to report
  local lead = not opts.host and mode == "gpu" and lead_kernel() or nil
  local core, ctx = context.core, context.get()
  for _, fn in ipairs(fns) do for _ = 1, warmup do fn() end end
  core.sync(ctx)
  local times, medians = {}, {}
  for i = 1, #fns do times[i] = {} end
  for r = 1, reps do
    for k = 1, #fns do
      local i = r % 2 == 1 and k or #fns + 1 - k
      if before then before() end
      if lead then lead() end
      core.timer_start(ctx)
      for _ = 1, inner do fns[i]() end
      times[i][r] = core.timer_stop(ctx) / inner
    end
  end
  for i = 1, #fns do
    table.sort(times[i])
    medians[i] = times[i][math.floor((reps + 1) / 2)]
  end
  return medians, times
end

--- Median milliseconds of fn() over `reps` timed batches of `inner` calls
--- after `warmup` calls (bench.compare with one function).  opts: warmup
--- (default 5), reps (default 20), inner (default 10), before, host.  Returns the
--- median and the sorted times.
function M.bench(fn, opts)
  if not callable(fn) then compat.fail("BENCH_NOT_FUNCTION", type(fn)) end
  local medians, times = M.compare({ fn }, opts)
  return medians[1], times[1]
end

--- A function that overwrites a 256 MiB device buffer (allocated on the
--- first call) four times, in stream order: as opts.before, each timed
--- batch starts with a cold L2, as do_bench's do, and the GPU is busy long
--- enough (about 0.35 ms on an H100) for the host to queue the timed
--- launches behind it, so that their time leaves out the host's.
--- Interpreted, it does nothing (there is no cache to flush).
function M.l2_flush()
  local mgpu = require "mgpu"
  if mgpu.interpreting() then return function() end end
  local n, blk = 64 * 1024 * 1024, 8192
  local buf
  local k = mgpu.kernel{
    name = "l2_flush", grid = { n / blk }, out_shape = mgpu.shape({ n }, "i32"),
    body = function(b)
      b:at(mgpu.ds(mgpu.program_id(0) * blk, blk)):store(mgpu.broadcast(mgpu.program_id(0), { blk }, "i32"))
    end,
  }
  return function()
    buf = buf or mgpu.empty({ n }, "i32")
    for _ = 1, 4 do k:call_into(buf) end
  end
end

--- cuBLAS on the same device and stream as our kernels (timed the same way
--- with bench): c = a @ b for row-major 2-D arrays a (M, K), b (K, N) and
--- c (M, N) of one dtype, bf16 or f16, accumulated in f32.  Writes c and
--- returns it.  Needs a GPU and libcublasLt (found by the loader, or named
--- by the environment variable MGPU_CUBLASLT).
function M.cublas_matmul(a, b, c)
  local array = require "mgpu.array"
  local names, xs = { "a", "b", "c" }, { a, b, c }
  for i = 1, 3 do
    local x = xs[i]
    if not array.is_array(x) then compat.fail("CUBLAS_NOT_ARRAY", names[i], type(x)) end
    if #x.shape ~= 2 then compat.fail("CUBLAS_NOT_2D", names[i], #x.shape) end
    array.no_data(x, "cublas_matmul")
  end
  if b.dtype ~= a.dtype or c.dtype ~= a.dtype then
    compat.fail("CUBLAS_DTYPES", a.dtype, b.dtype, c.dtype)
  end
  if a.dtype ~= "bf16" and a.dtype ~= "f16" then
    compat.fail("CUBLAS_DTYPE", a.dtype)
  end
  local m, k, n = a.shape[1], a.shape[2], b.shape[2]
  if b.shape[1] ~= k or c.shape[1] ~= m or c.shape[2] ~= n then
    compat.fail("CUBLAS_SHAPES", m, k, b.shape[1], n, c.shape[1], c.shape[2])
  end
  local ok, err = pcall(context.core.blas_matmul, context.get(), a.dtype, m, n, k, a.buf, b.buf, c.buf)
  if not ok then compat.fail("FAILED_WITH", "cublas_matmul", tostring(err)) end
  return c
end

return M
