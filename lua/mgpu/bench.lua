--[[
mgpu.bench -- timing launches with device events (host clock in the
interpreter).  Benchmarks are not tests: use them from examples and tools.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local context = require "mgpu.context"

local M = {}

--- Median milliseconds of fn() over `reps` timed batches of `inner` calls
--- after `warmup` calls.  opts: warmup (default 5), reps (default 20),
--- inner (default 1).
function M.bench(fn, opts)
  opts = opts or {}
  local warmup = compat.int(opts.warmup or 5, "warmup")
  local reps = compat.int(opts.reps or 20, "reps")
  local inner = compat.int(opts.inner or 1, "inner")
  if reps < 1 or inner < 1 then compat.fail("bench: reps and inner must be at least 1") end
  local core, ctx = context.core, context.get()
  for _ = 1, warmup do fn() end
  core.sync(ctx)
  local times = {}
  for r = 1, reps do
    core.timer_start(ctx)
    for _ = 1, inner do fn() end
    times[r] = core.timer_stop(ctx) / inner
  end
  table.sort(times)
  return times[math.floor((reps + 1) / 2)], times
end

return M
