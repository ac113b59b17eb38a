--[[
Ring all-gather across devices: every device holds a shard x (M rows) and
ends with out = the shards of all devices, device after device (n*M rows).
At step s a device sends chunk (me - s) mod n to the next device: tiles go
GMEM -> SMEM (TMA) -> the next device's `out` (TMA through a remote view),
and a semaphore per block tells the next device that the block's part of the
chunk has landed, so it can forward it at step s + 1.

  mgpu -n 2 examples/allgather.lua [M] [C] [dtype] [rows=64] [depth=4] [reps=20]
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
                     mgpu.SemaphoreType.REGULAR({ B }) },
  body = function(x, out, slots, bars, sems)
    local b = mgpu.program_id(0)
    local dev = mgpu.device_id()
    local nxt = mgpu.rem(dev + 1, n)
    local mine = mgpu.cdiv(tiles - b, B)            -- this block's tiles: b, b + B, ...
    local t = 0                                     -- tiles copied so far (Lua count of fori calls is traced)
    for s = 0, math.max(n - 2, 0) do              -- (one device: only its own shard, at step 0)
      local chunk = mgpu.rem(dev + n - s, n)
      if s > 0 then mgpu.semaphore_wait(sems:at(b)) end   -- the previous device's copy of this chunk has landed
      mgpu.fori(0, mine, function(i)
        local tile = b + i * B
        local r, c = tile / (C / TC) * TR, mgpu.rem(tile, C / TC) * TC
        local slot = mgpu.rem(i + t, depth)
        mgpu.wait_smem_to_gmem(depth - 1, { wait_read_only = true })   -- the slot's last copy has read it
        local src = s == 0 and x:at(mgpu.ds(r, TR), mgpu.ds(c, TC))
                             or out:at(mgpu.ds(chunk * M + r, TR), mgpu.ds(c, TC))
        mgpu.copy_gmem_to_smem(src, slots:at(slot), bars:at(slot))
        mgpu.barrier_wait(bars:at(slot))
        if s == 0 then   -- this device's own shard also goes into its own out
          mgpu.copy_smem_to_gmem(slots:at(slot), out:at(mgpu.ds(chunk * M + r, TR), mgpu.ds(c, TC)), { commit_group = n == 1 })
        end
        if n > 1 then mgpu.copy_smem_to_gmem(slots:at(slot), out:on_device(nxt):at(mgpu.ds(chunk * M + r, TR), mgpu.ds(c, TC))) end
      end)
      t = t + 1
      mgpu.wait_smem_to_gmem(0)                     -- every copy of this step has landed on the next device
      if n > 1 then mgpu.semaphore_signal(sems:at(b), 1, { device_id = nxt }) end
    end
    if n > 1 then mgpu.semaphore_wait(sems:at(b)) end    -- the last chunk has arrived
  end,
}

local x = mgpu.random.normal({ M, C }, dtype, 100 + me)
local out = mgpu.symmetric({ n * M, C }, dtype)
allgather:call_into(out, x)
if mgpu.compile_only() then return end

-- check: chunk d of out is device d's shard (made from the same seed here)
local H = mgpu.host
local worst = 0
for d = 0, n - 1 do
  local ref = H.from(mgpu.random.normal({ M, C }, dtype, 100 + d))
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
