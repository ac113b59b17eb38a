--[[
The configuration and schedule of examples/matmul.lua (it loads this file
with dofile): the tuning options and their defaults, the block's geometry,
the persistent grid and stream-K's plan for a problem size, and the tile
width chosen by shape.  Nothing here emits kernel code except dealing
stream-K's K steps to a block (stream_k_items), which is the plan in traced
form.

Options (cfg fields; `mgpu examples/matmul.lua M N K dtype key=value ...`):
  tile_m tile_n tile_k  the tile of one compute warpgroup, K step (64 256, and 128 bytes of K: 64
                        16-bit or 128 8-bit elements; where tile_n is not given, the shape picks it:
                        tile_n_for)
  depth                 SMEM slots of the pipeline (4)
  snake                 planar-snake band width of the tile order (8)
  wg_dim = M | N        the two compute warpgroups split the block's tile along M or N (M)
  cluster = 1 | 2       blocks per cluster (2; 1 with sched=dynamic or side blocks; for_shape
                        picks 1 where the tiles take at most two rounds of the SMs: cluster_for)
  cdim = M | N | wg     a cluster's blocks are neighbours along M (sharing B), N (sharing A), or
                        wg_dim (wg)
  mcast = 1 | 0         multicast the operand a cluster shares, or let each block load it (1)
  delay = 0 | 1         wgmma groups kept in flight across K steps (1; for_shape takes 0 with tiles
                        of 128 or narrower, whose K steps are too short to gain from it)
  mma                   the N of each wgmma instruction, dividing tile_n (256: one per K step)
  epi                   the epilogue's column chunk, through two small SMEM slots (64; 0: the whole
                        tile through one slot)
  sched = static | dynamic  tiles dealt round robin, or claimed at run time from a GMEM counter
  sms                   at most this many blocks (default: the device's SMs)
  balance = 1 | 0       take only as many clusters as the rounds of tiles need (1)
  sk = auto | 1 | 0     stream-K: split the K steps of a last round that does not fill the blocks
                        over all of them (auto: where the steps saved outweigh the exchange)
  split = auto | S      split-K: S blocks per tile, each over a 1/S of K, adding their f32 partial
                        sums (auto: for_shape picks S where few tiles leave SMs idle over a long K;
                        a kernel built with auto does not split)
  reduce = auto | dsmem | gmem  how split-K adds: the S blocks form a cluster, each owns a 1/S band
                        of columns and the others store their partials of it into its SMEM with
                        async_store_smem (dsmem: S of 2, 4 or 8 with cluster=1 and 64x128 tiles or
                        smaller); or every block TMA-adds its partial into a GMEM workspace and the
                        last to arrive (a count) stores the tile (gmem); auto: dsmem for S = 2
  mwarps = 4 | 1        the memory warpgroup's warps that run the load loop
  nobar = 0 | 1         1: no automatic warpgroup barriers (wgmma_wait, commit_smem and
                        wait_smem_to_gmem order the SMEM traffic themselves)
  profile = DIR         the in-kernel profiler's trace, written to DIR, with profile_space events
                        per warpgroup (64)
  dtype                 bf16 (default) or f16 in and out, f32 accumulation; or f8e4m3 or f8e5m2 in
                        (FP8, below), bf16 out
  b_dtype               B's dtype where it is not dtype's: f8e4m3 and f8e5m2 mix either way
  epilogue              a function of the f32 tile applied before the cast (act= on the command line)
FP8 (8-bit dtypes): wgmma reads 8-bit operands K-major only, so the kernel
takes B transposed, (N, K) row-major, as cublasLt's FP8 matmul does ("TN"),
and after B two f32 arrays of shape {} (one element each), a_scale and
b_scale: C = a_scale * b_scale * (A @ B^T), the scales applied to the f32
tile in the epilogue, before `epilogue`.  The wgmma accumulator sums all of
K with the tensor cores' FP8 accumulation, never promoted to a separate f32
sum: cublasLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM mode.
Hooks for kernels built on this one (examples/collective_matmul.lua), mi and ni being the
block's tile, wg its warpgroup, ext the hooks' scratch with the operands as ext.a and ext.b:
  scratch                    scratch shapes of the hooks (ext[1], ext[2], ...)
  side_blocks, side(ext)     blocks before the matmul's that run side(ext) instead
  tile_of(index, ext)        the cluster tile (row, column, in cluster tiles) of a linear index
  before_tile(mi, ni, wg, ext)  in every warpgroup before a tile's pipeline (under stream-K, before
                             each piece of a tile; with tile_of, stream-K runs only with sk=1)
  on_k_step(mi, ni, k, a_smem, wg, ext)  in each compute warpgroup after a K step's wgmmas are
                             issued; a_smem is the block's whole A tile of step k
  before_release(mi, ni, pending, wg, ext)  the pipeline's before_release (lua/mgpu/pipeline.lua):
                             before a compute warpgroup releases a slot
  after_mainloop(mi, ni, wg, ext)  in each compute warpgroup after the tile's last K step
]]
local mgpu = require "mgpu"

local P = {}

--- The default configuration (Pallas' TuningConfig fields): clusters of two
--- sharing B by multicast, four slots with the epilogue in 64-column chunks,
--- and one wgmma group kept in flight (delay=1): faster than one slot less,
--- no cluster and the whole-tile epilogue over the benchmark shapes, because
--- the multicast cuts the L2 traffic by an eighth and the card, at its power
--- limit, clocks higher.
--- sched=dynamic and side blocks claim or take tiles per block, so there the
--- cluster defaults to 1.
P.defaults = { tile_m = 64, tile_n = 256, tile_k = false, depth = 4, snake = 8, wg_dim = "M", cluster = 2, cdim = "wg",
               delay = 1, balance = 1, nobar = 0, sched = "static", mcast = 1, epi = 64, mma = 256, mwarps = 4, sk = "auto",
               split = "auto", reduce = "auto", sms = false, dtype = "bf16", b_dtype = false, profile_space = 64 }
               -- (false: tile_k 128 bytes of K, sms the device's SMs, b_dtype dtype)

local f8 = { f8e4m3 = true, f8e5m2 = true }

--- The dtypes of a configuration: a and b (the operands'), out (the result's: bf16 for FP8), bits
--- (of an operand element) and f8 (8-bit operands: B taken as (N, K), scales after it).
function P.operands(c)
  local o = { a = c.dtype, b = c.b_dtype or c.dtype }
  o.f8 = f8[o.a] or false
  assert(f8[o.a] == f8[o.b] and (o.f8 or o.a == o.b), "b_dtype may differ from dtype only between f8e4m3 and f8e5m2")
  o.out = o.f8 and "bf16" or o.a
  o.bits = o.f8 and 8 or (o.a == "f32" and 32 or 16)
  return o
end

--- cfg with the defaults filled in (clusters of one by default with sched=dynamic or side blocks;
--- K steps of 128 bytes, one 128-byte swizzle row, by default).
function P.filled(cfg)
  local c = {}
  for k, v in pairs(P.defaults) do c[k] = v end
  for k, v in pairs(cfg or {}) do c[k] = v end
  if (cfg or {}).cluster == nil and (c.sched == "dynamic" or c.side_blocks) then c.cluster = 1 end
  if not c.tile_k then c.tile_k = P.operands(c).f8 and 128 or 64 end
  return c
end

--- The geometry of a filled configuration: the block's tile (cta_m x cta_n, tk deep), the
--- cluster's extent along M and N (cm, cn), the bound on the persistent grid (sms blocks) and
--- whether stream-K may run (sk); errors name the option that does not fit.
function P.geometry(c)
  assert(c.wg_dim == "M" or c.wg_dim == "N", "wg_dim must be M or N")
  assert(c.cluster == 1 or c.cluster == 2, "cluster must be 1 or 2")
  assert(c.cdim == "wg" or c.cdim == "M" or c.cdim == "N", "cdim must be M, N or wg")
  assert(c.sched == "static" or c.sched == "dynamic", "sched must be static or dynamic")
  local cdim = c.cdim == "wg" and c.wg_dim or c.cdim
  local g = { cta_m = c.wg_dim == "M" and 2 * c.tile_m or c.tile_m,   -- two warpgroups' tiles
              cta_n = c.wg_dim == "N" and 2 * c.tile_n or c.tile_n, tk = c.tile_k,
              cm = (c.cluster == 2 and cdim == "M") and 2 or 1,       -- a cluster's two blocks are
              cn = (c.cluster == 2 and cdim == "N") and 2 or 1 }      -- neighbours along cdim
  g.sms = c.sms or mgpu.device().sm_count
  assert(type(g.sms) == "number" and g.sms == math.floor(g.sms) and g.sms >= c.cluster,
         "sms must be a whole number, at least the cluster size")
  assert(c.sk == 0 or c.sk == 1 or c.sk == "auto", "sk must be 0, 1 or auto")
  assert(c.balance == 0 or c.balance == 1, "balance must be 0 or 1")
  local sk_allowed = c.sched == "static" and (c.side_blocks or 0) == 0 and not c.tile_of
  -- (with tile_of, stream-K only when asked: the hooks' waits must count its pieces)
  assert(c.sk ~= 1 or sk_allowed or (c.tile_of and c.sched == "static" and (c.side_blocks or 0) == 0),
         "sk=1 needs sched=static and no side blocks")
  g.sk = c.sk == 1 or (c.sk == "auto" and sk_allowed)   -- (auto: the shape decides, in plan)
  assert(c.split == "auto" or (type(c.split) == "number" and c.split >= 1 and c.split == math.floor(c.split)),
         "split must be auto or a whole number, at least 1")
  g.split = c.split ~= "auto" and c.split or 1            -- (auto: for_shape decides)
  assert(g.split == 1 or sk_allowed, "split needs sched=static and no side blocks or tile_of")
  assert(c.reduce == "auto" or c.reduce == "dsmem" or c.reduce == "gmem", "reduce must be auto, dsmem or gmem")
  local dsmem_ok = P.dsmem_fits(c, g.split)
  assert(c.reduce ~= "dsmem" or g.split == 1 or dsmem_ok,
         "reduce=dsmem needs split=2, 4 or 8, cluster=1 and tile_m * tile_n at most 8192")
  -- (the kernel's cluster: the split's blocks; auto takes SMEM for pairs only, as larger clusters
  -- were slower than the GMEM workspace)
  g.dsmem = dsmem_ok and (c.reduce == "dsmem" or (c.reduce == "auto" and g.split == 2))
  g.pieces_last = c.tile_of ~= nil   -- (stream_k_items)
  return g
end

--- Whether split-K over `split` blocks may add through SMEM under configuration c: clusters of the
--- split's 2, 4 or 8 blocks and none of M or N, and tiles whose partials fit beside the pipeline
--- (the other blocks' bands of a 64x128 tile take up to 56 KiB).
function P.dsmem_fits(c, split)
  return (split == 2 or split == 4 or split == 8) and c.cluster == 1 and c.tile_m * c.tile_n <= 8192
end

--- The widths the kernel's loops use, checked: mma_n (each wgmma's N), epi (the epilogue's
--- column chunk: the whole tile, or epi > 0 through two slots per warpgroup, which leaves SMEM
--- for a deeper pipeline), nslot (epilogue slots per warpgroup) and side (side blocks).
function P.widths(c)
  local tn = c.tile_n
  local w = { mma_n = math.min(c.mma, tn), epi = (c.epi == 0 or c.epi >= tn) and tn or c.epi, side = c.side_blocks or 0 }
  assert(tn % w.mma_n == 0 and w.mma_n % 8 == 0, "mma must divide tile_n and be a multiple of 8")
  assert(c.sched == "static" or c.cluster == 1, "sched=dynamic claims tiles per block: use cluster=1")
  assert(w.side == 0 or (c.sched == "static" and c.cluster == 1), "side blocks need sched=static and cluster=1")
  assert(tn % w.epi == 0 and w.epi % 8 == 0, "epi must divide tile_n and be a multiple of 8")
  w.nslot = w.epi < tn and 2 or 1
  return w
end

--- M, N, K of the operands a (M x K) and b (K x N; N x K with FP8) of configuration c, or an error
--- naming the sizes or dtypes; with FP8 the scales a_scale and b_scale are checked too.
function P.dims(c, a, b, a_scale, b_scale)
  local o = P.operands(c)
  if a.dtype ~= o.a or b.dtype ~= o.b then
    error(string.format("matmul: A and B are %s and %s but the kernel was built for %s and %s (dtype, b_dtype)",
                        a.dtype, b.dtype, o.a, o.b), 0)
  end
  for _, x in ipairs(o.f8 and { a_scale or "nothing", b_scale or "nothing" } or {}) do
    if type(x) ~= "table" or x.dtype ~= "f32" or #x.shape ~= 0 then
      error("matmul: FP8 takes a_scale and b_scale after B, f32 arrays of shape {}", 0)
    end
  end
  local M, K = a.shape[1], a.shape[2]
  local N, Kb = b.shape[o.f8 and 1 or 2], b.shape[o.f8 and 2 or 1]
  if Kb ~= K then
    error(string.format("matmul: A is %dx%d but B is %dx%d%s", M, K, b.shape[1], b.shape[2],
                        o.f8 and " (with FP8 operands B is taken as N x K)" or ""), 0)
  end
  if N % 64 ~= 0 then
    error(string.format("matmul: N = %d must be a multiple of 64 (the output's column tiles)", N), 0)
  end
  return M, N, K
end

--- The schedule of an M x N x K problem under configuration c and its geometry g: its tile counts,
--- the persistent grid P (in clusters, at most one block per SM), and whether stream-K splits the
--- last round (q whole rounds, r tiles left, U of their K steps dealt as block ranges).  Without
--- stream-K, balance=1 (the default) takes no more clusters than the rounds need, so that every
--- cluster runs the same number of tiles: at 4096³ 64 clusters of 2 run 4 tiles each, where 66
--- would leave 8 with 3.  The rounds are as many, and the idle SMs draw no power, so the busy ones
--- may run at a higher clock.
function P.plan(c, g, M, N, K)
  local t = { m_iters = mgpu.cdiv(M, g.cta_m), n_iters = mgpu.cdiv(N, g.cta_n), k_iters = mgpu.cdiv(K, g.tk) }
  t.pm, t.pn = mgpu.cdiv(t.m_iters, g.cm), mgpu.cdiv(t.n_iters, g.cn)
  local tiles = t.pm * t.pn
  -- split-K through SMEM: a cluster of the split's blocks per tile, however many fit at once (a
  -- split with more blocks than K steps leaves some without any)
  if g.dsmem then
    t.split, t.tiles, t.P, t.stream_k, t.dsmem = g.split, tiles, tiles, false, true
    t.steps = mgpu.cdiv(t.k_iters, g.split) + P.dsmem_cost + (tiles > P.cluster_fit(g.split, g.sms) and t.k_iters or 0)
    return t
  end
  -- split-K through GMEM: a cluster per tile and split, where they fit on the SMs at once (no more
  -- splits than K steps); else the schedule below
  local split = math.min(g.split, t.k_iters)
  if split > 1 and tiles * split <= math.floor(g.sms / c.cluster) then
    t.split, t.tiles, t.P, t.stream_k = split, tiles, tiles * split, false
    t.steps = mgpu.cdiv(t.k_iters, split) + P.split_cost
    return t
  end
  -- whole tiles need no more clusters than there are tiles; stream-K may deal a short round's K
  -- steps over every SM
  local dp = math.max(1, math.floor(math.min(g.sms, t.m_iters * t.n_iters) / c.cluster))
  t.P = g.sk and math.max(1, math.floor(g.sms / c.cluster)) or dp
  t.q, t.r = math.floor(tiles / t.P), tiles % t.P
  t.U = t.r * t.k_iters
  t.stream_k = g.sk and t.r > 0
  -- stream-K saves k_iters - U / P steps on the critical path, and costs the exchange of partial
  -- f32 tiles: about 6 steps to leave a partial and 6 per partial taken (measured with the
  -- in-kernel profiler)
  local per_block = t.U / t.P
  local exchange = 6 + 6 * t.k_iters / math.max(per_block, 1)
  if t.stream_k and c.sk == "auto" then
    -- taken with a margin of 1.5, so it runs at 8192³ and not at 4096³, 4096x8192x4096 or
    -- 2304x6144x1500 (measured there)
    t.stream_k = t.k_iters - per_block > 1.5 * exchange
  end
  if not t.stream_k then t.P = c.balance == 1 and mgpu.cdiv(tiles, mgpu.cdiv(tiles, dp)) or dp end
  -- the K steps on a block's critical path, in steps of this tile
  t.steps = t.stream_k and t.q * t.k_iters + per_block + exchange or mgpu.cdiv(tiles, t.P) * t.k_iters
  return t
end

--- Stream-K's K steps: those of the last round's tiles, when they do not fill it, split evenly
--- over all the blocks (in cluster units).  sk_start(p) is block p's first step (traced).
function P.sk_start(t, p) return (p * t.U) / t.P end

--- How many blocks' stream-K ranges cover each tile of the last round: a list of r counts, the
--- first for the tile of linear index q * P (plain numbers, as sk_start deals them).
function P.sk_pieces(t)
  local out = {}
  for j = 0, t.r - 1 do
    local n = 0
    for p = 0, t.P - 1 do
      local s, e = math.floor(P.sk_start(t, p)), math.floor(P.sk_start(t, p + 1))
      if s < e and s < (j + 1) * t.k_iters and e > j * t.k_iters then n = n + 1 end
    end
    out[j + 1] = n
  end
  return out
end

--- The items of block bidx under stream-K (traced), for its loop: the count, and item(i) ->
--- the tile's linear index, its K steps [k0, k1), whether its sum is partial and the tile's
--- first step.  A block's share spans at most two tiles: the higher one's first steps, whose
--- partial sum it leaves in the workspace with a semaphore signal, and the lower one's last
--- steps, whose owner it is: it adds the partials of the blocks before it (which left them
--- first) and stores the tile.  Then come its q whole tiles; with pieces_last (tile_of: the
--- last tiles in its order may wait for data that arrives last) the whole tiles come first.
function P.stream_k_items(t, bidx, pieces_last)
  assert(t.P * t.U < 2 ^ 31, "matmul: sk=1 with too many K steps for 32-bit step indices")
  local k_iters = t.k_iters
  local s0, e0 = P.sk_start(t, bidx), P.sk_start(t, bidx + 1)
  local th, tl = (e0 - 1) / k_iters, s0 / k_iters   -- (th is used only when e0 > s0)
  local nseg = mgpu.select(mgpu.lt(s0, e0), th - tl + 1, 0)
  return nseg + t.q, function(i)
    if pieces_last then i = mgpu.select(mgpu.lt(i, t.q), i + nseg, i - t.q) end
    local in_sk = mgpu.lt(i, nseg)
    local tt = mgpu.select(mgpu.eq(i, 0), th, tl)
    local tstart = tt * k_iters
    local k0 = mgpu.select(in_sk, mgpu.max(s0, tstart) - tstart, 0)
    local k1 = mgpu.select(in_sk, mgpu.min(e0, tstart + k_iters) - tstart, k_iters)
    local lin = mgpu.select(in_sk, t.q * t.P + tt, bidx + (i - nseg) * t.P)
    return lin, k0, k1, tstart
  end
end

--- Split-K's item for block bidx, cidx in its cluster (traced): the tile's linear index and its
--- K steps [k0, k1).  Through GMEM, clusters take the tiles in turn, then the next split: a split's
--- blocks read the same K range; through SMEM, cluster bidx is the tile and cidx the split.
function P.split_item(t, bidx, cidx)
  local s = t.dsmem and cidx or bidx / t.tiles
  local lin = t.dsmem and bidx or bidx - s * t.tiles
  return lin, (s * t.k_iters) / t.split, ((s + 1) * t.k_iters) / t.split
end

--- The tiles split-K's workspace holds: at most half the clusters (a split tile takes two or more).
function P.split_tiles(g, c) return math.max(1, math.floor(math.floor(g.sms / c.cluster) / 2)) end

--- Split-K's cost in K steps of the block's tile beyond its share of K: the partial's trip through
--- SMEM, the TMA reduce-add and its completion, the count, and the last block's TMA load of the sum
--- (fitted to split and unsplit timings of 19 shapes with M, N <= 2048: about 4 us).
P.split_cost = 12

--- Split-K through SMEM: its cost in K steps beyond the share of K (staging the partial, the
--- cluster barrier, reading the bands: about split_cost, fitted to pairs at M, N <= 1024, though
--- without the workspace's traffic into L2), and how many clusters of S blocks are resident at
--- once with a block per SM (a GPC does not split into fours or eights evenly: at most 30 clusters
--- of four fit on 132 SMs).
P.dsmem_cost = 12
function P.cluster_fit(S, sms)
  return S <= 2 and math.floor(sms / S) or math.floor(sms * 0.9 / S)
end

--- The split-K count for an M x N x K problem under cfg (its tile width chosen): the S whose K steps
--- on the critical path, plus the exchange (and through GMEM the reduce-adds' traffic into L2, M x N
--- f32 per split at about 6 TB/s, in steps of the tile, 0.64 us for 128x256x64), are fewest; 1 where
--- the tiles alone fill the SMs or a split saves nothing.  Only 128-wide tiles or narrower: the f32
--- partials do not fit in SMEM beside a 256-wide pipeline.  Second result: those steps.
function P.split_for(M, N, K, cfg)
  local c = P.filled(cfg)
  if (cfg or {}).split ~= nil and cfg.split ~= "auto" then return cfg.split, P.plan(c, P.geometry(c), M, N, K).steps end
  c.split = 1
  local g = P.geometry(c)
  local base = P.plan(c, g, M, N, K)
  if c.tile_n > 128 or c.sched ~= "static" or c.side_blocks or c.tile_of then return 1, base.steps end
  local step_us = 0.64 * g.cta_m * g.cta_n / (128 * 256)
  local best, best_steps = 1, base.steps
  for s = 2, math.max(8, math.floor(math.floor(g.sms / c.cluster) / (base.pm * base.pn))) do
    if c.reduce == "dsmem" and not P.dsmem_fits(c, s) then goto next end   -- (only splits through SMEM asked for)
    c.split = s
    local gs = P.geometry(c)
    local t = P.plan(c, gs, M, N, K)
    local fits = t.split and (not t.dsmem or (t.tiles <= P.cluster_fit(s, g.sms) and s <= t.k_iters))
    local steps = fits and t.steps + (t.dsmem and 0 or s * M * N * 4 / 6e6 / step_us)
    if steps and steps < best_steps then best, best_steps = s, steps end
    ::next::
  end
  return best, best_steps
end

--- The tile width (tile_n) for an M x N x K problem under cfg.  Where cfg leaves it open and the
--- warpgroups split the tile along M, the width of 256, 192, 128 and 64 whose schedule (with the
--- split-K count split_for picks for it) has the shortest critical path, counted in columns times K
--- steps, with the narrower tiles' lower efficiency weighed in (x1.05, x1.15 and x1.7, fitted to
--- H200 timings): where the rounds of 256-wide tiles fill the SMs badly, narrower ones win (192 at
--- 3072³ and 2304x6144x1504, 128 at 1024x1024x4096 and 1024x2048x8192, 64 where even 128-wide tiles
--- leave SMs idle over a short K, as at 512x512x1024).  Only widths that the wgmma and epilogue widths
--- divide, and with a split asked for only 128 or narrower (the f32 partials need the SMEM).  A problem
--- narrower than the block's tile takes narrower tiles (a TMA box may not exceed the array).
local tile_widths = { { 256, 1 }, { 192, 1.05 }, { 128, 1.15 }, { 64, 1.7 } }
function P.tile_n_for(M, N, K, cfg)
  local c = P.filled(cfg)
  local tn = c.tile_n
  if not (cfg or {}).tile_n and c.wg_dim == "M" and N >= 256 then
    local best
    local split = type(c.split) == "number" and c.split > 1
    for _, w in ipairs(tile_widths) do
      c.tile_n = w[1]
      local mma, epi = math.min(c.mma, w[1]), c.epi
      if w[1] % mma == 0 and (epi == 0 or epi >= w[1] or w[1] % epi == 0) and not (split and w[1] > 128) then
        local cost = w[1] * w[2] * select(2, P.split_for(M, N, K, c))
        if not best or cost < best then best, tn = cost, w[1] end
      end
    end
  end
  while tn > 64 and N < tn * (c.wg_dim == "N" and 2 or 1) do tn = math.floor(tn / 2) end
  return tn
end

--- The cluster size for an M x N x K problem under cfg: where cfg leaves it open and the
--- kernel deals its tiles statically, 1 when the block's tiles (at the default width) take at
--- most two rounds of the SMs, else 2.  A cluster's multicast halves one operand's L2 traffic,
--- which pays only over many rounds; launching and pairing clusters costs more than that on short
--- kernels (clusters of 1 were faster at 92 of the 95 such shapes of the 125-shape sweep, by up to
--- 14%, and at most 2% slower at the other three).
function P.cluster_for(M, N, K, cfg)
  local c = P.filled(cfg)
  if (cfg or {}).cluster ~= nil or c.cluster == 1 or c.tile_of then return c.cluster end
  c.tile_n = P.defaults.tile_n
  local g = P.geometry(c)
  local tiles = math.ceil(M / g.cta_m) * math.ceil(N / g.cta_n)
  return tiles <= 2 * g.sms and 1 or 2
end

--- A copy of cfg for an M x N x K problem, its cluster size (cluster_for), tile width
--- (tile_n_for) and split-K count (split_for) chosen, and no wgmma group kept in flight across K
--- steps (delay=0) with tiles of 128 or narrower: it was 1-6% faster at 18 of 19 small shapes.
function P.for_shape(M, N, K, cfg)
  local c = {}
  for k, v in pairs(cfg or {}) do c[k] = v end
  c.cluster = P.cluster_for(M, N, K, cfg)
  c.tile_n = P.tile_n_for(M, N, K, c)
  c.split = P.split_for(M, N, K, c)
  if c.delay == nil and c.tile_n <= 128 then c.delay = 0 end
  return c
end

return P
