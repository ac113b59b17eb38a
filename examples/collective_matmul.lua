--[[
Collective matmul: A is sharded by rows over the devices, B (K x N) is each
device's own; every device computes C = all_gather(A) @ B ((n*M) x N) while
the gather is still going on.  It is the pipelined matmul of
examples/matmul.lua with hooks:

- A lives in a symmetric array `ag` of n*M rows; each device starts with its
  own shard in its chunk (rows me*M ..) and the others' chunks fill in,
  round a ring: device d passes chunks on to device d + 1;
- the blocks take output tiles chunk by chunk, this device's own chunk
  first, then chunks me - 1, me - 2, ...; before a tile of another chunk
  the memory warpgroup waits on the row block's semaphore, so the matmul of
  the chunks present overlaps the copies of the next.

Two ways to run the ring (ring=):
- side: the first `comm` blocks copy, row block by row block,
  chunk (me - s) mod n to the next device (TMA through a remote view) and
  signal its semaphore for that row block, with one count for each tile
  that will read it there (and one more when it is to be forwarded again);
- mma (the default, as Pallas' collective matmul): no copy blocks, so
  every SM computes (in clusters of 2); the tile in column 0
  of each row block of a chunk the next device still needs passes its A
  tiles, already in SMEM for the wgmma, on to the next device with a TMA
  store per K step, and once they have landed signals the row block's
  semaphore there with one count per tile that reads it.

With sk=1 (ring=mma), stream-K deals the K steps of a last round that does not fill the blocks
over all of them, after their whole tiles: at (2*8192)x8192x8192 the 2048 cluster tiles take 31
rounds of 66 clusters and 2 tiles, which otherwise hold two clusters for a whole round while the
others idle.  Those tiles lie in each device's last chunk, and each piece of one waits for its row
block, so the forwards there count the pieces.

  mgpu -n 2 examples/collective_matmul.lua [M] [N] [K] [dtype] [ring=mma|side] [comm=8 (side)] [reps=20] [key=value (matmul cfg)]
  (per device M=8192 rows of A, N = K = 8192 on GPUs; 256x256x128 simulated)
]]
local mgpu = require "mgpu"
local PEAK_TFLOPS = 989.4   -- dense 16-bit tensor-core peak of an H100 SXM / H200, as Pallas reports utilisation
local here = (arg and arg[0] or "examples/collective_matmul.lua"):match("^(.*)/[^/]*$") or "."
local lib = assert(loadfile(here .. "/matmul.lua"))("--lib")

local pos, cfg = mgpu.script_args(...)
local small = mgpu.interpreting()
local me, n = mgpu.process_index(), mgpu.process_count()
local M = tonumber(pos[1]) or (small and 256 or 8192)
local N = tonumber(pos[2]) or (small and 256 or 8192)
local K = tonumber(pos[3]) or (small and 128 or 8192)
local dtype = pos[4] or "bf16"
local ring = cfg.ring or "mma"
local comm = ring == "side" and (cfg.comm or (small and 1 or 8)) or 0
local reps = cfg.reps or 20
cfg.comm, cfg.reps, cfg.ring = nil, nil, nil
cfg.dtype = dtype
assert(ring == "side" or ring == "mma", "ring must be side or mma")
assert(cfg.sk ~= 1 or ring == "mma", "sk=1 needs ring=mma")

local tm, tn = cfg.tile_m or lib.defaults.tile_m, cfg.tile_n or lib.defaults.tile_n
local cta_m, cta_n = 2 * tm, tn                   -- wg_dim = M: the block's tile
assert(M % cta_m == 0 and N % cta_n == 0 and K % 64 == 0, "M must be a multiple of 2*tile_m, N of tile_n, K of 64")
local m_blocks, n_iters = M / cta_m, N / cta_n   -- row blocks of one chunk, column tiles
local TR, TC, slots_n = 64, 64, cfg.slots or 4    -- the ring's copies: 8 KiB tiles, loads slots_n - 1 ahead
cfg.slots = nil

cfg.wg_dim = "M"
cfg.side_blocks = comm > 0 and comm or nil
cfg.scratch = { mgpu.SemaphoreType.REGULAR({ n, m_blocks }), ring == "side" and mgpu.Barrier{ num_barriers = slots_n } or nil }
-- ring=mma keeps the matmul's clusters of 2 where a chunk's tiles pair up
local g = lib.geometry(cfg)
if ring == "mma" and cfg.cluster == nil and (m_blocks % g.cm ~= 0 or n_iters % g.cn ~= 0) then
  cfg.cluster = 1
  g = lib.geometry(cfg)
end
assert(m_blocks % g.cm == 0 and n_iters % g.cn == 0, "a chunk's row blocks and column tiles must pair up in clusters of 2")
local pm, pn = m_blocks / g.cm, n_iters / g.cn   -- a chunk's tiles in clusters

-- output tiles chunk by chunk, this device's chunk first, planar snake inside a chunk
cfg.tile_of = function(t)
  local per = pm * pn
  local s = t / per
  local lm, ln = mgpu.planar_snake(mgpu.rem(t, per), { pm, pn }, 1, cfg.snake or lib.defaults.snake)
  local chunk = mgpu.rem(mgpu.device_id() + n - s, n)
  return chunk * pm + lm, ln
end

-- sk=1: stream-K deals the last round's tiles, all in a device's last chunk, in pieces over every
-- block; each block of a piece waits for its row block, so a row block there takes g.cn counts
-- more (the cluster's blocks along N share it) per extra piece of its tiles: extra[cluster row in
-- the chunk] (the same on every device)
local extra, extra_rows = {}, {}   -- (extra_rows: its keys in order, for the same IR every run)
if cfg.sk == 1 then
  local t = lib.schedule(cfg, n * M, N, K)
  assert(not t.stream_k or t.r <= pm * pn, "sk=1: the last round must lie in one chunk")
  for j, pieces in ipairs(t.stream_k and lib.sk_pieces(t) or {}) do
    local lm = mgpu.planar_snake((t.q * t.P + j - 1) % (pm * pn), { pm, pn }, 1, cfg.snake or lib.defaults.snake)
    if not extra[lm] then extra_rows[#extra_rows + 1] = lm end
    extra[lm] = (extra[lm] or 0) + g.cn * (pieces - 1)
  end
  table.sort(extra_rows)
end
-- the counts a forward of row block mi (a chunk's row blocks, in all) gives device d: one per tile that
-- reads it there, and its pieces' extra ones where the chunk is d's last (d + 1's own)
local function forward_count(mi, d)
  local count = n_iters
  local lr = mgpu.rem(mi, m_blocks) / g.cm
  local last = mgpu.eq(mi / m_blocks, mgpu.rem(d + 1, n))
  for _, lm in ipairs(extra_rows) do count = count + mgpu.select(last:band(mgpu.eq(lr, lm)), extra[lm], 0) end
  return count
end

-- the memory warpgroup waits until another chunk's row block has landed here
cfg.before_tile = function(mi, _, wg, ext)
  local chunk = mi / m_blocks
  mgpu.when(mgpu.eq(wg, 2):band(mgpu.ne(chunk, mgpu.device_id())), function()
    mgpu.named_scope("wait", mgpu.semaphore_wait, ext[1]:at(chunk, mgpu.rem(mi, m_blocks)), 1)
  end)
end

-- ring=side: side block b copies row blocks b, b + comm, ... of each chunk to the next device
local function side(ext)
  local sems, bars = ext[1], ext[2]
  local wg = mgpu.axis_index("wg")
  mgpu.when(mgpu.eq(wg, 0), function()
    local ag = ext.a
    mgpu.run_scoped({ slots = mgpu.SMEM({ slots_n, TR, TC }, dtype) }, function(s)
      local b = mgpu.program_id(0)
      local dev = mgpu.device_id()
      local nxt = mgpu.rem(dev + 1, n)
      local mine = mgpu.cdiv(m_blocks - b, comm)
      local tiles = (cta_m / TR) * (K / TC)
      for step = 0, n - 2 do
        local chunk = mgpu.rem(dev + n - step, n)
        local forwarded = step + 1 <= n - 2 and 1 or 0     -- the next device passes it on again
        mgpu.fori(0, mine, function(i)
          local lm = b + i * comm
          if step > 0 then mgpu.semaphore_wait(sems:at(chunk, lm), 1) end   -- it has landed here
          local r0 = chunk * M + lm * cta_m
          local per_row = K / TC
          local function tile_ref(j)   -- j: a traced index, or a Lua number in the prologue
            local q, c = j / per_row, type(j) == "number" and j % per_row or mgpu.rem(j, per_row)
            if type(j) == "number" then q = math.floor(q) end
            return mgpu.ds(r0 + q * TR, TR), mgpu.ds(c * TC, TC)
          end
          local function load(j)    -- tile j into slot j mod slots_n
            local slot = type(j) == "number" and j % slots_n or mgpu.rem(j, slots_n)
            mgpu.copy_gmem_to_smem(ag:at(tile_ref(j)), s.slots:at(slot), bars:at(slot))
          end
          -- loads run slots_n - 1 tiles ahead of the stores
          for j = 0, math.min(slots_n - 1, tiles) - 1 do load(j) end
          mgpu.fori(0, tiles, function(j)
            local slot = mgpu.rem(j, slots_n)
            mgpu.barrier_wait(bars:at(slot))
            mgpu.copy_smem_to_gmem(s.slots:at(slot), ag:on_device(nxt):at(tile_ref(j)))
            mgpu.when(mgpu.lt(j + slots_n - 1, tiles), function()
              mgpu.wait_smem_to_gmem(1, { wait_read_only = true })   -- tile j - 1's store has read its slot
              load(j + slots_n - 1)
            end)
          end)
          mgpu.wait_smem_to_gmem(0)
          mgpu.semaphore_signal(sems:at(chunk, lm), n_iters + forwarded, { device_id = nxt })
        end)
      end
    end)
  end)
end

--[[ ring=mma: the tile in column 0 of each row block forwards it.  Device d computes chunk d - s
in step s and forwards it unless it is d + 1's own chunk (s = n - 1).
Order: the planar snake walks a chunk's first strip of columns (0 .. snake - 1) first, down the row
blocks and across each row block's columns in turn, so a row block's column-0 tile is its first
tile on the device: the forward starts with the row block's first use here and ends a fraction
of the chunk's time later, while the next device uses the row block a whole chunk later (its
step s + 1, in the same order).  The forwarding tiles are spread over the first strip's
rounds of tiles (every snake-th tile), so few blocks send at once.
Progress (no deadlock), for any n: a block takes its tiles in increasing index, hence step by
step (with sk=1 its last-round pieces come after its whole tiles, all of them in step n - 1);
only the memory warpgroup waits, before a tile of step s >= 1, for a row block that device
d - 1 forwards from a tile of its step s - 1, which itself waits only for step s - 2 tiles of
device d - 2, and so on down to step 0, where nothing waits.  By induction over s, every tile of
step s - 1 on every device finishes, so every wait in step s ends.  The forwarding tile's own
work never waits on anything but its loads: its memory warpgroup issued all of them before it
moves on (and may wait) for its next tile, and its compute warpgroups wait only for their own
stores.  Every block is resident (at most one per SM), so none waits for an SM.  With n = 2
only the own chunk is forwarded (step 0, waiting for nothing); with n = 4 chunks d, d - 1 and
d - 2 are, the last two by tiles that waited for them first.
The interpreter runs a device's clusters one after another, so there a tile may only wait for
forwards from the same or earlier clusters: interpreted runs with several tiles per cluster
keep the forwarding tiles in the first one (sms = a chunk's column tiles, as the ctest does). ]]
if ring == "mma" then
  local tk = g.tk
  local function nxt() return mgpu.rem(mgpu.device_id() + 1, n) end
  local function forwards(mi, ni, wg)   -- warpgroup 0 of a column-0 tile of a chunk the next device lacks
    return mgpu.eq(wg, 0):band(mgpu.eq(ni, 0)):band(mgpu.ne(mi / m_blocks, nxt()))
  end
  -- each K step's A tile goes on to the same place in the next device's ag
  cfg.on_k_step = function(mi, ni, k, a_smem, wg, ext)
    mgpu.when(forwards(mi, ni, wg), function()
      mgpu.copy_smem_to_gmem(a_smem, ext.a:on_device(nxt()):at(mgpu.ds(mi * cta_m, cta_m), mgpu.ds(k * tk, tk)))
    end)
  end
  -- a slot goes back to the memory warpgroup once its store has read it
  cfg.before_release = function(mi, ni, pending, wg)
    mgpu.when(forwards(mi, ni, wg), function() mgpu.wait_smem_to_gmem(pending, { wait_read_only = true }) end)
  end
  -- the row block has landed: one count for each tile that reads it there
  cfg.after_mainloop = function(mi, ni, wg, ext)
    mgpu.when(forwards(mi, ni, wg), function() mgpu.named_scope("forward", function()
      mgpu.wait_smem_to_gmem(0)
      mgpu.semaphore_signal(ext[1]:at(mi / m_blocks, mgpu.rem(mi, m_blocks)), forward_count(mi, nxt()),
                            { device_id = nxt() })
    end) end)
  end
else
  cfg.side = side
end

local matmul = lib.build(cfg)

-- A: this device's shard in its chunk of the symmetric array (fresh values, from per-device seeds)
local ag = mgpu.symmetric({ n * M, K }, dtype)
local function shard(d) return mgpu.random.normal({ M, K }, dtype, 300 + d) end
local fill = mgpu.kernel{ name = "place_shard", grid = { M / 8, K / 64 }, out_shape = mgpu.shape({ n * M, K }, dtype),
  body = function(x, ag_)
    local r, c = mgpu.program_id(0) * 8, mgpu.program_id(1) * 64
    ag_:at(mgpu.ds(me * M + r, 8), mgpu.ds(c, 64)):store(x:at(mgpu.ds(r, 8), mgpu.ds(c, 64)):load())
  end }
fill:call_into(ag, shard(me))
mgpu.distributed.barrier()                        -- every shard is in place before anyone reads it
local b = mgpu.random.normal({ K, N }, dtype, 400 + me)
local c = matmul(ag, b)
if mgpu.compile_only() then return end

-- check: rows of each chunk against the float64 product of that device's shard with B
local H = mgpu.host
local band = small and M or 64
local err, hb = 0, H.from(b)
for d = 0, n - 1 do
  local ref = H.matmul(H.from(shard(d):rows(0, band)), hb)
  err = math.max(err, H.relerr(H.from(c:rows(d * M, band)), ref))
end
print(string.format("device %d of %d: collective matmul (%d*%d)x%dx%d %s: relative error %.2e", me, n, n, M, N, K, dtype, err))
assert(err <= 1e-2, "collective matmul differs from the reference")

if not small then
  -- Back to back, as the anchor times NCCL + cuBLAS: each call waits for its own forwards (the
  -- semaphores count them per call), so the devices keep step without a host barrier.  A call may
  -- forward rows while the next device still reads the previous call's copy of them: the same
  -- values here, but a program that changes A between calls needs mgpu.distributed.barrier().
  local ms = mgpu.bench(function() matmul:call_into(c, ag, b) end, { reps = reps })
  local tflops = 2 * n * M * N * K / ms / 1e9
  print(string.format("device %d: %.3f ms, %.1f TFLOP/s, TC utilisation %.1f%% (all-gather overlapped; ring=%s, %s)",
                      me, ms, tflops, 100 * tflops / PEAK_TFLOPS, ring,
                      ring == "side" and comm .. " ring blocks" or "cluster " .. g.cm * g.cn))
end
