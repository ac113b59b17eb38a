--[[
Reduce-scatter across devices: every device holds x (n*M rows); device d ends
with out = the sum over devices of their chunk d (rows d*M .. d*M+M-1).
Each device first pushes its chunk d to device d's symmetric staging area
(slot `me`, TMA through a remote view), then a semaphore per block says the
block's tiles have landed; every device then sums the n slots of its own
chunk in a fixed device order (f32 in registers), so all devices round alike.

  mgpu -n 2 examples/reduce_scatter.lua [M] [C] [dtype] [rows=64] [reps=20]
  (per device 8192x4096 bf16 out, 64 MiB; 64x256 simulated)
]]
local mgpu = require "mgpu"
local args, opt = mgpu.script_args(...)
local small = mgpu.interpreting()
local me, n = mgpu.process_index(), mgpu.process_count()
local M = tonumber(args[1]) or (small and 64 or 8192)
local C = tonumber(args[2]) or (small and 256 or 4096)
local dtype = args[3] or "bf16"
local TR, TC = opt.rows or (small and 16 or 64), math.min(C, 128)
assert(M % TR == 0 and C % TC == 0, "M must be a multiple of the tile rows and C of 128")
local tiles = (M / TR) * (C / TC)
local B = math.min(tiles, small and 2 or mgpu.device().sm_count)

local reduce_scatter = mgpu.kernel{
  name = "reduce_scatter",
  grid = { B }, grid_names = { "b" },
  out_shape = mgpu.shape({ M, C }, dtype),
  scratch_shapes = { mgpu.SMEM({ 2, TR, TC }, dtype), mgpu.Barrier{ num_barriers = 2 }, mgpu.SemaphoreType.REGULAR({ B }) },
  body = function(x, stage, out, slots, bars, sems)
    local b = mgpu.program_id(0)
    local dev = mgpu.device_id()
    local mine = mgpu.cdiv(tiles - b, B)
    local function tile_at(i)
      local tile = b + i * B
      return tile / (C / TC) * TR, mgpu.rem(tile, C / TC) * TC
    end
    -- 1. chunk d of x -> stage[dev] on device d, for every other device d
    for step = 1, n - 1 do
      local d = mgpu.rem(dev + step, n)
      mgpu.fori(0, mine, function(i)
        local r, c = tile_at(i)
        local slot = mgpu.rem(i, 2)
        mgpu.wait_smem_to_gmem(1, { wait_read_only = true })
        mgpu.copy_gmem_to_smem(x:at(mgpu.ds(d * M + r, TR), mgpu.ds(c, TC)), slots:at(slot), bars:at(slot))
        mgpu.barrier_wait(bars:at(slot))
        mgpu.copy_smem_to_gmem(slots:at(slot), stage:on_device(d):at(dev, mgpu.ds(r, TR), mgpu.ds(c, TC)))
      end)
      mgpu.wait_smem_to_gmem(0)
      mgpu.semaphore_signal(sems:at(b), 1, { device_id = d })
    end
    -- 2. every other device's part of this device's chunk has landed: sum in device order
    if n > 1 then mgpu.semaphore_wait(sems:at(b), n - 1) end
    mgpu.fori(0, mine, function(i)
      local r, c = tile_at(i)
      local acc
      for d = 0, n - 1 do
        local own = x:at(mgpu.ds(dev * M + r, TR), mgpu.ds(c, TC)):load():astype("f32")
        local part = stage:at(d, mgpu.ds(r, TR), mgpu.ds(c, TC)):load():astype("f32")
        local v = mgpu.select(mgpu.eq(dev, d), own, part)
        acc = acc and acc + v or v
      end
      out:at(mgpu.ds(r, TR), mgpu.ds(c, TC)):store(acc:astype(dtype))
    end)
  end,
}

local x = mgpu.random.normal({ n * M, C }, dtype, 200 + me)
local stage = mgpu.symmetric({ n, M, C }, dtype)
local out = reduce_scatter(x, stage)
if mgpu.compile_only() then return end

-- check against the sum of every device's chunk `me` (the inputs are made from known seeds)
local H = mgpu.host
local ref
for d = 0, n - 1 do
  local part = H.from(mgpu.random.normal({ n * M, C }, dtype, 200 + d)):rows(me * M, M)
  ref = ref and ref + part or part
end
local err = H.relerr(out, ref)
print(string.format("device %d of %d: reduce-scatter of %dx%d %s per device: rel. error %.3g", me, n, M, C, dtype, err))
assert(err < 1e-2, "reduce-scatter result differs from the sum")

if not small then
  mgpu.distributed.barrier()
  local ms = mgpu.bench(function() reduce_scatter(x, stage) end, { reps = opt.reps or 20 })
  local bytes = (n - 1) * M * C * (dtype == "f32" and 4 or 2)
  print(string.format("device %d: %.3f ms, %.1f GB/s received per device", me, ms, bytes / ms / 1e6))
end
