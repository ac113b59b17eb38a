--[[
All-gather across devices: every device holds a shard x (M rows) and ends
with out = the shards of all devices, device after device (n*M rows, a
symmetric array).  Each device pushes its own shard straight to every
device: a block's tiles go GMEM -> SMEM (TMA) once, then from the slot to
its chunk of `out` on every device (TMA through remote views, the next
device first), with `depth` slots of stores in flight.  No device forwards
another's data, so nothing waits on a peer between the first and the last
tile.

Contract (as NCCL's): every device calls it together.  A block first tells
its peers that this device's out may be written and waits for theirs; at
the end it tells them its tiles have landed and waits until theirs have.

  mgpu -n 2 examples/allgather.lua [M] [C] [dtype] [rows=64] [depth=4] [seed=100] [reps=20]
  (per device 8192x4096 bf16 = 64 MiB on GPUs; 128x256 simulated)
]]
local mgpu = require "mgpu"
local args, opt = mgpu.script_args(...)
local small = mgpu.interpreting()
local me, n = mgpu.process_index(), mgpu.process_count()
local M = tonumber(args[1]) or (small and 128 or 8192)
local C = tonumber(args[2]) or (small and 256 or 4096)
local dtype = args[3] or "bf16"
local TR, TC = opt.rows or (small and 32 or 64), math.min(C, 128)   -- one tile: TR x 128 (16 KiB of bf16)
local depth = opt.depth or 4
assert(M % TR == 0 and C % TC == 0, "M must be a multiple of the tile rows and C of 128")
local tiles = (M / TR) * (C / TC)                  -- tiles of one chunk
local B = math.min(tiles, small and 2 or mgpu.device().sm_count)

local allgather = mgpu.kernel{
  name = "allgather",
  grid = { B }, grid_names = { "b" },
  out_shape = mgpu.shape({ n * M, C }, dtype),
  scratch_shapes = { mgpu.SMEM({ depth, TR, TC }, dtype), mgpu.Barrier{ num_barriers = depth },
                     mgpu.SemaphoreType.REGULAR({ 2, B }) },
  body = function(x, out, slots, bars, sems)
    local b = mgpu.program_id(0)
    local dev = mgpu.device_id()
    local mine = mgpu.cdiv(tiles - b, B)            -- this block's tiles: b, b + B, ...
    local function tell_peers(sem)              -- this block's counterpart on every other device
      for step = 1, n - 1 do mgpu.semaphore_signal(sem, 1, { device_id = mgpu.rem(dev + step, n) }) end
      mgpu.semaphore_wait(sem, n - 1)
    end
    if n > 1 then tell_peers(sems:at(0, b)) end   -- every device's out may be written
    mgpu.fori(0, mine, function(i)
      local tile = b + i * B
      local r, c = tile / (C / TC) * TR, mgpu.rem(tile, C / TC) * TC
      local slot = mgpu.rem(i, depth)
      mgpu.wait_smem_to_gmem(depth - 1, { wait_read_only = true })   -- the slot's last stores have read it
      mgpu.copy_gmem_to_smem(x:at(mgpu.ds(r, TR), mgpu.ds(c, TC)), slots:at(slot), bars:at(slot))
      mgpu.barrier_wait(bars:at(slot))
      for step = 1, n do                          -- the next device first, this one last (closing the group)
        local d = mgpu.rem(dev + step, n)
        mgpu.copy_smem_to_gmem(slots:at(slot), out:on_device(d):at(mgpu.ds(dev * M + r, TR), mgpu.ds(c, TC)),
                               { commit_group = step == n })
      end
    end)
    mgpu.wait_smem_to_gmem(0)
    if n > 1 then tell_peers(sems:at(1, b)) end   -- every device's tiles of this block have landed here
  end,
}

local seed = opt.seed or 100
local x = mgpu.random.normal({ M, C }, dtype, seed + me)
local out = mgpu.symmetric({ n * M, C }, dtype)
allgather:call_into(out, x)
if mgpu.compile_only() then return end

-- check: chunk d of out is device d's shard (made from the same seed here)
local H = mgpu.host
local worst = 0
for d = 0, n - 1 do
  local ref = H.from(mgpu.random.normal({ M, C }, dtype, seed + d))
  local err = H.relerr(H.from(out):rows(d * M, M), ref)
  if err ~= err or err > worst then worst = err end
end
print(string.format("device %d of %d: all-gather of %dx%d %s per device: max rel. error %.3g", me, n, M, C, dtype, worst))
assert(worst == 0, "all-gather result differs from the shards")

if not small then
  local reps = opt.reps or 20
  mgpu.distributed.barrier()
  local ms = mgpu.bench(function() allgather:call_into(out, x) end, { reps = reps })
  local bytes = (n - 1) * M * C * (dtype == "f32" and 4 or 2)
  print(string.format("device %d: %.3f ms, %.1f GB/s received per device", me, ms, bytes / ms / 1e6))
end
