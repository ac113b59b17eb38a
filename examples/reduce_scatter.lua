--[[
Reduce-scatter across devices: every device holds x (n*M rows, a symmetric
array); device d ends with out = the sum over devices of their chunk d
(rows d*M .. d*M+M-1).  Each device pulls: its blocks read their tiles of
chunk `me` from every device's x (TMA loads through remote views, its own
copy included) into `depth` SMEM slots, a stream of parts (tile, device)
kept `depth` loads ahead, and sum each tile's parts in registers in device
order 0..n-1 (f32) as they land, so every chunk is rounded alike whichever
device reduces it, and nothing is staged: each byte crosses NVLink once and
the sum overlaps the transfers.  The tile leaves through a TMA store.

Contract (as NCCL's): every device calls it together.  A block first tells
its peers that this device's x is ready and waits for theirs; at the end it
tells them it has read its parts and waits until they have read theirs, so
x may be overwritten once the call has returned on this device.

  mgpu -n 2 examples/reduce_scatter.lua [M] [C] [dtype] [rows=64] [depth=4] [seed=200] [reps=20]
  (per device 8192x4096 bf16 out, 64 MiB; 64x256 simulated)
]]
local mgpu = require "mgpu"
local args, opt = mgpu.script_args(...)
local small = mgpu.interpreting()
local me, n = mgpu.process_index(), mgpu.process_count()
local M = tonumber(args[1]) or (small and 64 or 8192)
local C = tonumber(args[2]) or (small and 256 or 4096)
local dtype = args[3] or "bf16"
local TR, TC = opt.rows or (small and 16 or 64), math.min(C, 128)   -- one tile: TR x 128 (16 KiB of bf16)
local depth = opt.depth or 4
assert(M % TR == 0 and C % TC == 0, "M must be a multiple of the tile rows and C of 128")
local tiles = (M / TR) * (C / TC)                  -- tiles of one chunk
local B = math.min(tiles, small and 2 or mgpu.device().sm_count)

local reduce_scatter = mgpu.kernel{
  name = "reduce_scatter",
  grid = { B }, grid_names = { "b" },
  out_shape = mgpu.shape({ M, C }, dtype),
  scratch_shapes = { mgpu.SMEM({ depth, TR, TC }, dtype), mgpu.Barrier{ num_barriers = depth },
                     mgpu.SMEM({ 2, TR, TC }, dtype), mgpu.SemaphoreType.REGULAR({ 2, B }) },
  body = function(x, out, slots, bars, outs, sems)
    local b = mgpu.program_id(0)
    local dev = mgpu.device_id()
    local mine = mgpu.cdiv(tiles - b, B)            -- this block's tiles: b, b + B, ...
    local function tile_at(i)
      local tile = b + i * B
      return tile / (C / TC) * TR, mgpu.rem(tile, C / TC) * TC
    end
    -- part k = i * n + d: device d's copy of tile i, in slot k mod depth; fetched `depth` parts ahead
    local function fetch(i, d)
      mgpu.when(mgpu.lt(i, mine), function()
        local r, c = tile_at(i)
        local slot = mgpu.rem(i * n + d, depth)
        mgpu.copy_gmem_to_smem(x:on_device(d):at(mgpu.ds(dev * M + r, TR), mgpu.ds(c, TC)), slots:at(slot), bars:at(slot))
      end)
    end
    local function tell_peers(sem)              -- this block's counterpart on every other device
      for step = 1, n - 1 do mgpu.semaphore_signal(sem, 1, { device_id = mgpu.rem(dev + step, n) }) end
      mgpu.semaphore_wait(sem, n - 1)
    end
    if n > 1 then tell_peers(sems:at(0, b)) end   -- every device's x is ready
    for k = 0, depth - 1 do fetch(math.floor(k / n), k % n) end
    mgpu.fori(0, mine, function(i)
      local acc
      for d = 0, n - 1 do                         -- in device order, on every device
        local slot = mgpu.rem(i * n + d, depth)
        mgpu.barrier_wait(bars:at(slot))
        local part = slots:at(slot):load():astype("f32")
        acc = acc and acc + part or part
        mgpu.commit_smem()                        -- every thread has read the slot: refill it
        fetch(i + math.floor((d + depth) / n), (d + depth) % n)
      end
      local o = mgpu.rem(i, 2)
      mgpu.wait_smem_to_gmem(1, { wait_read_only = true })   -- the slot's last store has read it
      outs:at(o):store(acc:astype(dtype))
      mgpu.commit_smem()
      local r, c = tile_at(i)
      mgpu.copy_smem_to_gmem(outs:at(o), out:at(mgpu.ds(r, TR), mgpu.ds(c, TC)))
    end)
    mgpu.wait_smem_to_gmem(0)
    if n > 1 then tell_peers(sems:at(1, b)) end   -- every part read from the others has landed
  end,
}

-- x: fresh values from per-device seeds (seed + device), placed in the symmetric array
local seed = opt.seed or 200
local function input(d) return mgpu.random.normal({ n * M, C }, dtype, seed + d) end
local x = mgpu.symmetric({ n * M, C }, dtype)
local place = mgpu.kernel{ name = "place_input", grid = { n * M / TR, C / TC }, out_shape = mgpu.shape({ n * M, C }, dtype),
  body = function(src, dst)
    local r, c = mgpu.ds(mgpu.program_id(0) * TR, TR), mgpu.ds(mgpu.program_id(1) * TC, TC)
    dst:at(r, c):store(src:at(r, c):load())
  end }
place:call_into(x, input(me))
local out = reduce_scatter(x)
if mgpu.compile_only() then return end

-- check: exactly the f32 sum of every device's chunk `me`, in device order, rounded once
local H = mgpu.host
local ref
for d = 0, n - 1 do
  local part = H.from(input(d)):rows(me * M, M)
  ref = ref and (ref + part):round("f32") or part
end
local err = H.relerr(out, ref:round(dtype))
print(string.format("device %d of %d: reduce-scatter of %dx%d %s per device: rel. error %.3g", me, n, M, C, dtype, err))
assert(err == 0, "reduce-scatter result differs from the device-order sum")

if not small then
  mgpu.distributed.barrier()
  local ms = mgpu.bench(function() reduce_scatter:call_into(out, x) end, { reps = opt.reps or 20 })
  local bytes = (n - 1) * M * C * (dtype == "f32" and 4 or 2)
  print(string.format("device %d: %.3f ms, %.1f GB/s received per device", me, ms, bytes / ms / 1e6))
end
