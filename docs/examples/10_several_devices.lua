--[[
Tutorial 10: several devices (docs/tutorial/10-several-devices.md).

Every device squares its own shard x (n elements) and writes the result
into row d of the (devices x n) `out` array of every device: every device
ends with all devices' squares (an all-gather).  `out` is a
symmetric array (allocated at the same place on every device), so a kernel
can view another device's copy with ref:on_device(d).  A semaphore per
block says when every other device's part has arrived.

  mgpu -n 2 docs/examples/10_several_devices.lua [n]     (2 devices; simulated without GPUs)
  mgpu docs/examples/10_several_devices.lua [n]          (one device)
]]
local mgpu = require "mgpu"

local me, count = mgpu.process_index(), mgpu.process_count()   -- this device, and how many
local n = tonumber((...)) or 4096
local B = 1024                                    -- elements per block
local NB = mgpu.cdiv(n, B)

local gather_squares = mgpu.kernel{
  name = "gather_squares",
  grid = { NB },
  out_shape = mgpu.shape({ count, n }, "f32"),
  scratch_shapes = { mgpu.SemaphoreType.REGULAR({ NB }) },     -- i32 counters in GMEM, zero at the start
  body = function(x, out, sems)
    local b = mgpu.program_id(0)
    local dev = mgpu.device_id()                  -- traced: this device's index
    local sq = x:at(mgpu.ds(b * B, B)):load()
    sq = sq * sq
    for d = 0, count - 1 do                       -- a Lua loop: one store per device, traced
      out:on_device(d):at(dev, mgpu.ds(b * B, B)):store(sq)   -- row `dev` of device d's out
    end
    for d = 0, count - 1 do                       -- "my part of block b is there" to the others
      mgpu.when(mgpu.ne(dev, d), function() mgpu.semaphore_signal(sems:at(b), 1, { device_id = d }) end)
    end
    mgpu.semaphore_wait(sems:at(b), count - 1)    -- every other device's part of block b is here
  end,
}

local x = mgpu.random.normal({ n }, "f32", 100 + me)        -- each device's shard (seeded by device)
local out = mgpu.symmetric({ count, n }, "f32")             -- collective: every device makes it
gather_squares:call_into(out, x)
if mgpu.compile_only() then return end

-- every device checks the whole result against the shards (remade from their seeds)
local H = mgpu.host
local worst = 0
for d = 0, count - 1 do
  local xd = H.from(mgpu.random.normal({ n }, "f32", 100 + d))
  worst = math.max(worst, H.relerr(H.from(out:reshape({ count * n })):rows(d * n, n), xd * xd))
end
print(string.format("device %d of %d: gather_squares of %d elements each: relative error %.2e", me, count, n, worst))
assert(worst < 1e-6, "gather_squares: wrong result")
