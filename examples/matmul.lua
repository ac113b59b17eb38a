--[[
A Hopper matmul, C = A @ B (bf16 or f16 in, f32 accumulation, same dtype
out), written on mgpu's pipelines the way Pallas' hopper_matmul_mgpu is:

- persistent: one block (or one cluster) per SM walks output tiles with
  nd_loop (or, with sched=dynamic, claims them from a GMEM counter with
  dynamic_scheduling_loop), in planar-snake order so neighbouring blocks
  share A and B in L2;
- warp specialized: a memory warpgroup streams A and B tiles through
  `depth` SMEM slots with TMA; two compute warpgroups each own half of the
  block's tile and multiply with wgmma into a register accumulator;
- the pipelines of consecutive tiles share one allocation (pipeline_state),
  so the memory warpgroup fetches the next tile while the compute
  warpgroups run the epilogue: registers -> SMEM -> one TMA store per
  warpgroup, awaited only before the next tile's epilogue;
- an optional 2-block cluster multicasts the operand both blocks share;
- an optional fused epilogue: a Lua function of the f32 tile.

  mgpu examples/matmul.lua [M] [N] [K] [dtype] [key=value ...]
    keys: tile_m tile_n tile_k depth snake wg_dim (M|N) cluster (1|2) delay (0|1) nobar (0|1) reps
          (defaults: 64 256 64 4 8 M 2 1 0; cluster 1 with sched=dynamic; where tile_n is not
          given the script takes a narrower tile for shapes whose rounds of tiles it fills better:
          192 at 3072^3, 128 at 1024x1024x4096, lib.tile_n_for)
          cdim=M|N|wg (with cluster=2: the blocks of a cluster are neighbours along M, sharing B, or
          along N, sharing A; wg, the default, takes wg_dim)
          mma (the N of each wgmma instruction, dividing tile_n: mma=128 issues two per K step for
          tile_n=256, which takes the driver's JIT less time and runs slightly slower)
          epi (0: the epilogue stores each warpgroup's tile whole through one slot; else, as by default
          (64), in column chunks of epi through two small SMEM slots, so that depth=4 fits)
          sched=static|dynamic (tiles dealt round robin, or claimed at run time from a GMEM counter)
          mcast=1|0 (with cluster=2: multicast the shared operand, or let each block load it; the
          cluster's blocks still take neighbouring tiles, which then meet in L2)
          sms=N (the persistent grid: at most N blocks, default the device's SMs; a small N gives every
          block several tiles at interpreter sizes)
          balance=1|0 (without stream-K, take only as many clusters as the rounds of tiles need, so
          that each runs the same number: 64 of 66 at 4096^3; or all of them)
          mwarps=4|1 (the memory warpgroup's warps that run the load loop: all four, or the first one,
          as cuBLAS's producer)
          tune=1 (or --tune): mgpu.autotune picks tile_n, snake, wg_dim and sched; the winner is kept per shape
          act=relu|gelu (a fused epilogue, GELU in its tanh form: C = act(A @ B) before the cast)
          sk=auto|1|0 (stream-K: when the last round of tiles does not fill the blocks, its K steps are
          split evenly over all of them, the partial f32 sums passed through a GMEM workspace with
          semaphores; auto, the default, does so where the steps saved outweigh that exchange, e.g.
          at 8192^3; needs sched=static)
          profile=DIR (the in-kernel profiler's trace of the main loops, epilogues and stream-K's
          exchanges, written to DIR)
  (4096^3 bf16 on a GPU; 256x384x320 interpreted)

Shapes need not divide the tiles: edge tiles are zero-filled when loaded
and clipped when stored by the copy engine.  Kernels built on this one
(examples/collective_matmul.lua) pass hooks in cfg: `scratch` (more
scratch shapes, handed to the hooks), `side_blocks` and `side(ext)` (the
first blocks run side(ext) instead of output tiles), `tile_of(index, ext)`
(which output tile a step takes) and `before_tile(mi, ni, wg, ext)` (run by
every warpgroup before a tile's pipeline); ext holds the extra scratch refs
in order, and ext.a, ext.b.  N must be a multiple of 64
(the output's column tiles) and K of 8 (TMA reads 16-byte aligned rows;
the script stores other K padded with zeros).  Loaded with
`loadfile("examples/matmul.lua")("--lib")` it returns { build = ... } for
tools and specs.
]]
local mgpu = require "mgpu"
local T = mgpu.transforms
local lib = {}
local compat_unpack = table.unpack or unpack

--- The default configuration (Pallas' TuningConfig fields): clusters of two
--- sharing B by multicast, four slots with the epilogue in 64-column chunks,
--- and one wgmma group kept in flight (delay=1): faster than one slot less,
--- no cluster and the whole-tile epilogue over the benchmark shapes, because
--- the multicast cuts the L2 traffic by an eighth and the card, at its power
--- limit, clocks higher.
--- sched=dynamic and side blocks claim or take tiles per block, so there the
--- cluster defaults to 1.
lib.defaults = { tile_m = 64, tile_n = 256, tile_k = 64, depth = 4, snake = 8, wg_dim = "M", cluster = 2, cdim = "wg",
                 delay = 1, balance = 1, nobar = 0, sched = "static", mcast = 1, epi = 64, mma = 256, mwarps = 4, sk = "auto",
                 sms = false, dtype = "bf16" }   -- (sms = false: the device's SMs)

--- cfg with the defaults filled in (clusters of one by default with sched=dynamic or side blocks).
local function filled(cfg)
  local c = {}
  for k, v in pairs(lib.defaults) do c[k] = v end
  for k, v in pairs(cfg or {}) do c[k] = v end
  if (cfg or {}).cluster == nil and (c.sched == "dynamic" or c.side_blocks) then c.cluster = 1 end
  return c
end

--- The geometry of a filled configuration: the block's tile (cta_m x cta_n, tk deep), the
--- cluster's extent along M and N (cm, cn), the bound on the persistent grid (sms blocks) and
--- whether stream-K may run (sk); errors name the option that does not fit.
local function geometry(c)
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
  assert(c.sk ~= 1 or sk_allowed, "sk=1 needs sched=static and no side blocks or tile_of")
  g.sk = c.sk == 1 or (c.sk == "auto" and sk_allowed)   -- (auto: the shape decides, in plan)
  return g
end

--- The schedule of an M x N x K problem under configuration c and its geometry g: its tile counts,
--- the persistent grid P (in clusters, at most one block per SM), and whether stream-K splits the
--- last round (q whole rounds, r tiles left, U of their K steps dealt as block ranges).  Without
--- stream-K, balance=1 (the default) takes no more clusters than the rounds need, so that every
--- cluster runs the same number of tiles: at 4096³ 64 clusters of 2 run 4 tiles each, where 66
--- would leave 8 with 3.  The rounds are as many, and the idle SMs draw no power, so the busy ones
--- may run at a higher clock.
local function plan(c, g, M, N, K)
  local t = { m_iters = mgpu.cdiv(M, g.cta_m), n_iters = mgpu.cdiv(N, g.cta_n), k_iters = mgpu.cdiv(K, g.tk) }
  t.pm, t.pn = mgpu.cdiv(t.m_iters, g.cm), mgpu.cdiv(t.n_iters, g.cn)
  local tiles = t.pm * t.pn
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

--- The tile width (tile_n) for an M x N x K problem under cfg.  Where cfg leaves it open and the
--- warpgroups split the tile along M, the width of 256, 192 and 128 whose schedule has the shortest
--- critical path, counted in columns times K steps, with the narrower tiles' lower efficiency
--- weighed in (x1.05 and x1.15): where the rounds of 256-wide tiles fill the SMs badly, narrower
--- ones win (192 at 3072³ and 2304x6144x1504, 128 at 1024x1024x4096 and 1024x2048x8192).  Only widths that the wgmma and
--- epilogue widths divide.  A problem narrower than the block's tile takes narrower tiles (a TMA
--- box may not exceed the array).
local tile_widths = { { 256, 1 }, { 192, 1.05 }, { 128, 1.15 } }
function lib.tile_n_for(M, N, K, cfg)
  local c = filled(cfg)
  local tn = c.tile_n
  if not (cfg or {}).tile_n and c.wg_dim == "M" and N >= 256 then
    local best
    for _, w in ipairs(tile_widths) do
      c.tile_n = w[1]
      local mma, epi = math.min(c.mma, w[1]), c.epi
      if w[1] % mma == 0 and (epi == 0 or epi >= w[1] or w[1] % epi == 0) then
        local cost = w[1] * w[2] * plan(c, geometry(c), M, N, K).steps
        if not best or cost < best then best, tn = cost, w[1] end
      end
    end
  end
  while tn > 64 and N < tn * (c.wg_dim == "N" and 2 or 1) do tn = math.floor(tn / 2) end
  return tn
end

--- A copy of cfg for an M x N x K problem, its tile width chosen (lib.tile_n_for).
function lib.for_shape(M, N, K, cfg)
  local c = {}
  for k, v in pairs(cfg or {}) do c[k] = v end
  c.tile_n = lib.tile_n_for(M, N, K, cfg)
  return c
end

--- A matmul kernel for cfg (defaults filled in); cfg.epilogue(tile) maps
--- the f32 accumulator tile of one compute warpgroup before the cast.
function lib.build(cfg)
  local c = filled(cfg)
  local g = geometry(c)
  local tm, tn, tk, depth = c.tile_m, c.tile_n, c.tile_k, c.depth
  local cta_m, cta_n, cm, cn, sms, sk = g.cta_m, g.cta_n, g.cm, g.cn, g.sms, g.sk
  local mma_n = math.min(c.mma, tn)
  assert(tn % mma_n == 0 and mma_n % 8 == 0, "mma must divide tile_n and be a multiple of 8")
  assert(c.sched == "static" or c.cluster == 1, "sched=dynamic claims tiles per block: use cluster=1")
  local side = c.side_blocks or 0
  assert(side == 0 or (c.sched == "static" and c.cluster == 1), "side blocks need sched=static and cluster=1")
  local dynamic = c.sched == "dynamic"
  local bits = c.dtype == "f32" and 32 or 16
  local swz = mgpu.find_swizzle(tk * bits)
  local xf = { T.tiling{ 8, swz * 8 / bits }, T.swizzle(swz) }
  -- the epilogue stores the tile whole, or (epi > 0) in column chunks of epi through two slots per
  -- warpgroup, which leaves SMEM for a deeper pipeline
  local epi = (c.epi == 0 or c.epi >= tn) and tn or c.epi
  assert(tn % epi == 0 and epi % 8 == 0, "epi must divide tile_n and be a multiple of 8")
  local nslot = epi < tn and 2 or 1
  local oswz = mgpu.find_swizzle(epi * bits)
  -- the output tile's column tiles outermost: its rows then form one TMA dim, which the copy engine
  -- clips at any M (tiles of 8 rows next to other tiles would need M to be a multiple of 8)
  local oxf = { T.tiling{ 8, oswz * 8 / bits }, T.transpose{ 0, 1, 3, 2, 4, 5 }, T.swizzle(oswz) }
  -- stream-K's workspace: a partial f32 tile per block and warpgroup, and a semaphore for each
  local pmax = math.floor(sms / c.cluster)
  local sk_scratch = sk and { mgpu.GMEM({ pmax, c.cluster, 2, tm, tn }, "f32"),
                              mgpu.SemaphoreType.REGULAR({ pmax, c.cluster, 2 }) } or {}

  local scratch = { mgpu.SMEM({ 2, nslot, tm, epi }, c.dtype, { transforms = oxf }) }
  for _, list in ipairs({ c.scratch or {}, sk_scratch }) do
    for _, x in ipairs(list) do scratch[#scratch + 1] = x end
  end

  return mgpu.kernel{
    name = "matmul",
    out_shape = function(a, b) return mgpu.shape({ a.shape[1], b.shape[2] }, a.dtype) end,
    grid = function(a, b)
      local t = plan(c, g, a.shape[1], b.shape[2], a.shape[2])
      if side > 0 then return { side + math.max(1, math.min(sms - side, t.m_iters * t.n_iters)) } end
      return { t.P }
    end,
    grid_names = { "sm" }, cluster = { c.cluster }, cluster_names = { "c" },
    -- nobar=1: no automatic warpgroup barriers (the SMEM traffic here is ordered by
    -- wait_smem_to_gmem, commit_smem and wgmma_wait, which synchronise the warpgroup themselves)
    -- profile=DIR: the in-kernel profiler's trace of the named scopes below, written to DIR
    compiler_params = mgpu.CompilerParams{ unsafe_no_auto_barriers = c.nobar == 1,
                                           profile_space = c.profile and 64 or nil, profile_dir = c.profile },
    num_threads = 3, thread_name = "wg",
    scratch_shapes = scratch,
    -- sched=dynamic takes a third input: the work counter (i32[2], zero; left zero)
    body = function(a, b, ...)
      local rest = { ... }
      local counter = dynamic and table.remove(rest, 1) or nil
      local sems = sk and table.remove(rest) or nil
      local ws = sk and table.remove(rest) or nil
      local out, out_smem = rest[1], rest[2]
      local ext = { select(3, compat_unpack(rest)) }      -- the hooks' scratch, and the operands
      ext.a, ext.b = a, b
      local M, K, N = a.shape[1], a.shape[2], b.shape[2]
      if b.shape[1] ~= K then error(string.format("matmul: A is %dx%d but B is %dx%d", M, K, b.shape[1], N), 0) end
      if N % 64 ~= 0 then
        error(string.format("matmul: N = %d must be a multiple of 64 (the output's column tiles)", N), 0)
      end
      local sch = plan(c, g, M, N, K)
      local k_iters, pm, pn, P, q, U, stream_k = sch.k_iters, sch.pm, sch.pn, sch.P, sch.q, sch.U, sch.stream_k
      -- a group kept in flight needs a slot beside it: none when the pipeline has a single step
      local delay = math.min(c.delay, math.max(0, math.min(depth, k_iters) - 1))
      local cidx = mgpu.axis_index("c")
      local wg = mgpu.axis_index("wg")

      -- stream-K (sk=1, or sk=auto where it pays): the K steps of the last round's tiles, when they do not fill it, are split
      -- evenly over all the blocks (in cluster units).  A block's share spans at most two tiles: the
      -- higher one's first steps, whose partial sum it leaves in the workspace with a semaphore
      -- signal, and the lower one's last steps, whose owner it is: it adds the partials of the blocks
      -- before it (which left them first) and stores the tile.  (plan decides; P is the grid.)
      assert(not stream_k or P * U < 2 ^ 31, "matmul: sk=1 with too many K steps for 32-bit step indices")
      local function sk_start(p) return (p * U) / P end   -- block p's first step (traced integers)
      local bidx = mgpu.axis_index("sm")

      -- the pipeline of one tile (mi, ni), over K steps [k0, k0 + nk) (all of them by default); skx
      -- (stream-K) says whether the tile's sum is partial and from which step its owner holds it
      local function pipe_for(mi, ni, state, offset, k0, nk, skx)
        local function mma(_, a_smem, b_smem, acc)
          local a_part = c.wg_dim == "M" and a_smem:at(mgpu.ds(wg * tm, tm), mgpu.all) or a_smem
          local b_part = c.wg_dim == "N" and b_smem:at(mgpu.all, mgpu.ds(wg * tn, tn)) or b_smem
          for j = 0, tn / mma_n - 1 do   -- one wgmma (one group) per mma_n columns
            local cols = mgpu.ds(j * mma_n, mma_n)
            mgpu.wgmma(mma_n < tn and acc:at(mgpu.all, cols) or acc, a_part,
                       mma_n < tn and b_part:at(mgpu.all, cols) or b_part)
          end
          mgpu.wgmma_wait(delay * (tn / mma_n))
          return acc
        end
        local function chunk(x, j) return epi < tn and x:at(mgpu.all, mgpu.ds(j * epi, epi)) or x end
        local function store_tile(acc)   -- the epilogue: registers -> SMEM slot -> TMA store, chunk by chunk
          local r0 = mi * cta_m + (c.wg_dim == "M" and wg * tm or 0)
          local c0 = ni * cta_n + (c.wg_dim == "N" and wg * tn or 0)
          for j = 0, tn / epi - 1 do   -- column chunks, through the warpgroup's slots in turn
            local tile = chunk(acc, j):load()
            if c.epilogue then tile = c.epilogue(tile) end
            tile = tile:astype(c.dtype)
            -- the store that used the slot has read it: within the tile the one nslot chunks back;
            -- at its first chunk every store (the previous tile's chunks need not have alternated
            -- the slots evenly, as with 3 chunks, and they were issued a main loop ago)
            mgpu.wait_smem_to_gmem(j == 0 and 0 or nslot - 1, { wait_read_only = true })
            local slot = out_smem:at(wg, j % nslot)
            slot:store(tile)
            mgpu.commit_smem()
            mgpu.copy_smem_to_gmem(slot, out:at(mgpu.ds(r0, tm), mgpu.ds(c0 + j * epi, epi)))
          end
        end
        local function add_partials(acc)   -- the partial sums of the blocks before this one, into acc
          mgpu.while_loop(function(p) return mgpu.lt(skx.tstart, sk_start(p + 1)) end, function(p)
            mgpu.when(mgpu.lt(sk_start(p), sk_start(p + 1)), function()
              mgpu.named_scope("wait", mgpu.semaphore_wait, sems:at(p, cidx, wg), 1)
              for j = 0, tn / epi - 1 do
                local part = chunk(ws:at(p, cidx, wg), j):load{ layout = mgpu.Layout.WGMMA }
                chunk(acc, j):store(chunk(acc, j):load() + part)
              end
            end)
            return p - 1
          end, bidx - 1)
        end
        local function epilogue(run)
          mgpu.run_scoped(function(acc)
            mgpu.named_scope("mainloop", run, acc)
            if not skx then return mgpu.named_scope("epilogue", store_tile, acc) end
            mgpu.cond(skx.partial, function() mgpu.named_scope("partial", function()   -- leave the partial sum for the owner
              for j = 0, tn / epi - 1 do chunk(ws:at(bidx, cidx, wg), j):store(chunk(acc, j):load()) end
              mgpu.semaphore_signal(sems:at(bidx, cidx, wg), 1)
            end) end, function()
              mgpu.when(mgpu.lt(0, skx.k0), function() mgpu.named_scope("fixup", add_partials, acc) end)
              mgpu.named_scope("epilogue", store_tile, acc)
            end)
          end, mgpu.ACC({ tm, tn }, "f32"))
        end
        local function kof(k) return k0 and k0 + k or k end
        return mgpu.emit_pipeline_warp_specialized(mma, {
          grid = { nk or k_iters }, memory_registers = 40, num_compute_wgs = 2, wg_axis = "wg",
          max_concurrent_steps = depth, compute_context = epilogue, pipeline_state = state, step_offset = offset,
          memory_warps = c.mwarps,
          in_specs = {
            mgpu.BlockSpec{ { cta_m, tk }, function(k) return mi, kof(k) end, transforms = xf, delay_release = delay,
                            collective_axes = (cn == 2 and c.mcast ~= 0) and "c" or nil },
            mgpu.BlockSpec{ { tk, cta_n }, function(k) return kof(k), ni end, transforms = xf, delay_release = delay,
                            collective_axes = (cm == 2 and c.mcast ~= 0) and "c" or nil },
          },
        })
      end

      -- one allocation for every tile's pipeline (no state without k steps to share it)
      local shared = k_iters >= depth or stream_k
      local proto = pipe_for(0, 0, shared and mgpu.PipelineState.START or nil, stream_k and 0 or nil)
      mgpu.run_scoped({ p = proto:get_allocations(a, b) }, function(s)
        local function tile_mn(lin)   -- the block's tile of linear (planar-snake) index lin
          local lm, ln = mgpu.planar_snake(lin, { pm, pn }, 1, c.snake)
          return lm * cm + (cm == 2 and cidx or 0), ln * cn + (cn == 2 and cidx or 0)
        end
        local function tile(info)
          local mi, ni
          if c.tile_of then
            mi, ni = c.tile_of(info.index[1], ext)
          else
            mi, ni = tile_mn(info.index[1])
          end
          if c.before_tile then c.before_tile(mi, ni, wg, ext) end
          local state, offset
          if shared then
            offset = info.local_index * k_iters
            local first = mgpu.eq(info.local_index, 0)
            local last = info.is_last or mgpu.eq(info.local_index, info.num_local_steps - 1)
            state = mgpu.select(first, mgpu.PipelineState.START, mgpu.PipelineState.STEADY)
                  + mgpu.select(last, mgpu.PipelineState.STOP, 0)
          end
          pipe_for(mi, ni, state, offset)(a, b, { allocations = s.p })
        end
        if stream_k then
          -- items: the block's stream-K pieces (the higher tile's first), then its q whole tiles
          local s0, e0 = sk_start(bidx), sk_start(bidx + 1)
          local th, tl = (e0 - 1) / k_iters, s0 / k_iters   -- (th is used only when e0 > s0)
          local nseg = mgpu.select(mgpu.lt(s0, e0), th - tl + 1, 0)
          local items = nseg + q
          mgpu.fori(0, items, function(i, done)
            local in_sk = mgpu.lt(i, nseg)
            local t = mgpu.select(mgpu.eq(i, 0), th, tl)
            local tstart = t * k_iters
            local k0 = mgpu.select(in_sk, mgpu.max(s0, tstart) - tstart, 0)
            local k1 = mgpu.select(in_sk, mgpu.min(e0, tstart + k_iters) - tstart, k_iters)
            local mi, ni = tile_mn(mgpu.select(in_sk, q * P + t, bidx + (i - nseg) * P))
            local state = mgpu.select(mgpu.eq(i, 0), mgpu.PipelineState.START, mgpu.PipelineState.STEADY)
                        + mgpu.select(mgpu.eq(i, items - 1), mgpu.PipelineState.STOP, 0)
            local skx = { partial = mgpu.lt(k1, k_iters), k0 = k0, tstart = tstart }
            pipe_for(mi, ni, state, done, k0, k1 - k0, skx)(a, b, { allocations = s.p })
            return done + (k1 - k0)
          end, 0)
        elseif dynamic then
          mgpu.dynamic_scheduling_loop("sm", { counter = counter, grid = { pm * pn }, thread_axis = "wg" }, tile)
        elseif side > 0 then     -- the tiles go round the blocks after the side blocks
          local w, nw = mgpu.program_id(0) - side, mgpu.num_programs(0) - side
          mgpu.when(mgpu.ge(w, 0), function()
            local steps = mgpu.cdiv(pm * pn - w, nw)
            mgpu.fori(0, steps, function(i) tile({ index = { w + i * nw }, local_index = i, num_local_steps = steps }) end)
          end)
        else
          mgpu.nd_loop({ pm * pn }, { collective_axes = "sm" }, tile)
        end
      end)
      if side > 0 then mgpu.when(mgpu.lt(mgpu.program_id(0), side), function() c.side(ext) end) end
      mgpu.when(mgpu.lt(wg, 2), function() mgpu.wait_smem_to_gmem(0) end)
    end,
  }
end

local args = { ... }
if args[1] == "--lib" then return lib end

-- -- The script: run, check against a float64 reference, time -------------------------

local pos, cfg = mgpu.script_args(...)
for i = #pos, 1, -1 do
  if pos[i] == "--tune" then cfg.tune = 1; table.remove(pos, i) end
end
local tune = cfg.tune == 1 or cfg.tune == "yes"
cfg.tune = nil
local small = mgpu.interpreting()
local M = tonumber(pos[1]) or (small and 256 or 4096)
local N = tonumber(pos[2]) or (small and 384 or M)
local K = tonumber(pos[3]) or (small and 320 or M)
cfg.dtype = pos[4] or cfg.dtype or "bf16"
local reps = cfg.reps or 20
cfg.reps = nil
-- fused epilogues: functions of the f32 tile on the device, and the same on the f64 reference
local acts = {
  relu = { function(t) return mgpu.max(t, 0.0) end, function(h) return h:max(0) end },
  gelu = {
    function(t) local u = (t + t * t * t * 0.044715) * 0.7978845608; return t * 0.5 * (mgpu.tanh(u) + 1.0) end,
    function(h) local u = (h + h * h * h * 0.044715) * 0.7978845608; return h * 0.5 * (u:tanh() + 1) end },
}
local act_name = cfg.act
local act = cfg.act and acts[cfg.act]
if cfg.act and not act then io.stderr:write("matmul: act must be relu or gelu\n"); os.exit(2) end
cfg.act = nil
if act then cfg.epilogue = act[1] end
local matmul

-- TMA reads rows that start on 16-byte boundaries: when K is not a multiple of 8, A and B are
-- stored with K padded to one (the leading dimension a BLAS call would take), with B's padding
-- rows zero so that A's padding columns add nothing.  The kernel sees the padded K; its last
-- K tile, past the arrays' end, is zero-filled by the copy engine.
local Kp = math.ceil(K / 8) * 8
cfg = lib.for_shape(M, N, Kp, cfg)   -- (the tile width, where not given, by the shape)
if not tune then matmul = lib.build(cfg) end
local a = mgpu.random.normal({ M, Kp }, cfg.dtype)
local b = mgpu.random.normal({ K, N }, cfg.dtype)
if Kp > K then
  b = mgpu.kernel{ name = "pad_rows", grid = { Kp }, out_shape = mgpu.shape({ Kp, N }, cfg.dtype),
    body = function(src, dst)
      local r = mgpu.program_id(0)
      local row = src:at(mgpu.min(r, K - 1), mgpu.all):load()
      dst:at(r, mgpu.all):store(mgpu.select(mgpu.lt(r, K), row, 0))
    end }(b)
end

-- tune=1: mgpu.autotune times tile_n x snake x wg_dim x sched (the other options as given) and keeps
-- the winner per shape and options next to the kernel cache
if tune then
  local fixed, configs = {}, {}
  local tuned = { epilogue = true, tile_n = true, snake = true, wg_dim = true, sched = true }
  for k, v in pairs(cfg) do if not tuned[k] then fixed[#fixed + 1] = k .. "=" .. tostring(v) end end
  if act_name then fixed[#fixed + 1] = "act=" .. act_name end
  table.sort(fixed)
  for _, tn_ in ipairs({ 128, 192, 256 }) do
    for _, wg in ipairs({ "M", "N" }) do
      for _, sched in ipairs({ "static", "dynamic" }) do
        for _, snake in ipairs({ 4, 8, 16 }) do
          local fits = N >= tn_ * (wg == "N" and 2 or 1)
          if fits and (sched == "static" or (cfg.cluster or 1) == 1) then
            configs[#configs + 1] = { tile_n = tn_, wg_dim = wg, sched = sched, snake = snake }
          end
        end
      end
    end
  end
  if #configs == 0 then configs[1] = { tile_n = cfg.tile_n, wg_dim = "M", sched = "static", snake = 8 } end
  local tcounter, tout = mgpu.zeros({ 2 }, "i32"), mgpu.empty({ M, N }, cfg.dtype)
  local function with(t)
    local c2 = {}
    for k, v in pairs(cfg) do c2[k] = v end
    for k, v in pairs(t) do c2[k] = v end
    return c2
  end
  local _, best = mgpu.autotune{
    key = string.format("matmul %dx%dx%d %s", M, N, Kp, table.concat(fixed, " ")),
    configs = configs, args = { a, b },
    kernel_factory = function(t)
      local mm = lib.build(with(t))
      if t.sched == "dynamic" then return function(x, y) return mm:call_into(tout, x, y, tcounter) end end
      return function(x, y) return mm:call_into(tout, x, y) end
    end,
  }
  print(string.format("matmul: tuned for %dx%dx%d %s: tile_n=%d snake=%d wg_dim=%s sched=%s", M, N, K, cfg.dtype,
                      best.tile_n, best.snake, best.wg_dim, best.sched))
  cfg = with(best)
  matmul = lib.build(cfg)
end
local counter = cfg.sched == "dynamic" and mgpu.zeros({ 2 }, "i32") or nil
local function inputs() if counter then return a, b, counter end return a, b end
local c = matmul(inputs())
if mgpu.compile_only() then return end

-- float64 reference on the first and the last rows (every row when small)
local H = mgpu.host
local band = small and M or math.min(M, 64)
local err = 0
for _, r0 in ipairs({ 0, M - band }) do
  local ref = H.matmul(H.from(a):rows(r0, band), H.from(b))
  if act then ref = act[2](ref) end
  err = math.max(err, H.relerr(H.from(c):rows(r0, band), ref))
end
local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
print(string.format("matmul %s %dx%dx%d%s%s (%s): relative error %.2e", cfg.dtype, M, N, K,
                    Kp > K and (" (K stored as " .. Kp .. ")") or "", act_name and (" + " .. act_name) or "", mode, err))
assert(err <= 1e-2, "matmul: result differs from the reference")

if not mgpu.interpreting() then
  local ms = mgpu.bench(function() matmul:call_into(c, inputs()) end, { reps = reps })
  print(string.format("matmul: %.4f ms, %.1f TFLOP/s", ms, 2 * M * N * K / ms / 1e9))
end
