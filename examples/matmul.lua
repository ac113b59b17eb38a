--[[
A Hopper matmul, C = A @ B (bf16 or f16 in, f32 accumulation, same dtype
out; or FP8, f8e4m3 / f8e5m2 in with per-tensor scales and bf16 out, B
taken as (N, K)), written on mgpu's pipelines the way Pallas'
hopper_matmul_mgpu is:

- persistent: one block (or one cluster) per SM walks output tiles with
  nd_loop (or, with sched=dynamic, claims them from a GMEM counter with
  dynamic_scheduling_loop), in planar-snake order so neighbouring blocks
  share A and B in L2;
- warp specialized: a memory warpgroup streams A and B tiles through
  `depth` SMEM slots with TMA; two compute warpgroups each own half of the
  block's tile and multiply with wgmma into a register accumulator;
- the pipelines of consecutive tiles share one allocation (pipeline_state),
  so the memory warpgroup fetches the next tile while the compute
  warpgroups run the epilogue: registers -> SMEM -> TMA stores, awaited
  only before the next tile's epilogue;
- an optional 2-block cluster multicasts the operand both blocks share;
- stream-K (sk): when the last round of tiles does not fill the blocks,
  its K steps are split over all of them, partial sums passed through a
  GMEM workspace with semaphores;
- split-K (split): where a few tiles leave SMs idle over a long K, S
  blocks share each tile's K steps.  They form a cluster and each owns one
  band of columns: it stores the other bands of its f32 partial into their
  owners' SMEM (async_store_smem), adds the others' partials of its own
  band to it once they have landed, and stores the band; or
  (reduce=gmem) they TMA-add their partials into a GMEM workspace, and the
  last to arrive (a counter) stores the tile and clears the workspace for
  the next launch.

  mgpu examples/matmul.lua [M] [N] [K] [dtype] [key=value ...]

The options, their defaults and the schedule (grid, stream-K's plan, tile
width by shape) are in examples/matmul_plan.lua; the command line, the
reference check, timing and autotuning in examples/matmul_check.lua.
Shapes need not divide the tiles: edge tiles are zero-filled when loaded
and clipped when stored.  N must be a multiple of 64 and K of 8 (16 with
FP8: TMA's rows are whole 16-byte units).  Loaded
with `loadfile("examples/matmul.lua")("--lib")` it returns { build,
defaults, tile_n_for, cluster_for, for_shape, operands, geometry, schedule, sk_pieces } for tools
and specs.
]]
local mgpu = require "mgpu"
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local plan = dofile(here .. "matmul_plan.lua")
local T = mgpu.transforms
local lib = { defaults = plan.defaults, tile_n_for = plan.tile_n_for, cluster_for = plan.cluster_for,
              for_shape = plan.for_shape, operands = plan.operands, sk_pieces = plan.sk_pieces,
              geometry = function(cfg) return plan.geometry(plan.filled(cfg)) end }
--- The schedule of an M x N x K problem under cfg (matmul_plan.lua's plan: tile counts, grid,
--- stream-K's rounds q, tiles left r, steps U over P blocks).
function lib.schedule(cfg, M, N, K)
  local c = plan.filled(cfg)
  return plan.plan(c, plan.geometry(c), M, N, K)
end
local unpack = table.unpack or unpack

--- A matmul kernel for cfg (defaults filled in); cfg.epilogue(tile) maps
--- the f32 accumulator tile of one compute warpgroup before the cast.
function lib.build(cfg)
  local c = plan.filled(cfg)
  local g, wd = plan.geometry(c), plan.widths(c)
  local tm, tn, tk, depth = c.tile_m, c.tile_n, c.tile_k, c.depth
  local cta_m, cta_n, cm, cn, sk = g.cta_m, g.cta_n, g.cm, g.cn, g.sk
  local split = g.split > 1 and not g.dsmem   -- (split-K through the GMEM workspace)
  local mma_n, epi, nslot, side = wd.mma_n, wd.epi, wd.nslot, wd.side
  local o = plan.operands(c)
  local bits, obits = o.bits, o.f8 and 16 or o.bits
  local swz = mgpu.find_swizzle(tk * bits)
  local xf = { T.tiling{ 8, swz * 8 / bits }, T.swizzle(swz) }
  -- the output tile's column tiles outermost: its rows then form one TMA dim, which the copy engine
  -- clips at any M (tiles of 8 rows next to other tiles would need M to be a multiple of 8)
  local oswz = mgpu.find_swizzle(epi * obits)
  local oxf = { T.tiling{ 8, oswz * 8 / obits }, T.transpose{ 0, 1, 3, 2, 4, 5 }, T.swizzle(oswz) }
  -- scratch: the epilogue's slots, the hooks' own, stream-K's workspace (a partial f32 tile per
  -- block and warpgroup) and a semaphore for each
  local scratch = { mgpu.SMEM({ 2, nslot, tm, epi }, o.out, { transforms = oxf }) }
  for _, x in ipairs(c.scratch or {}) do scratch[#scratch + 1] = x end
  if sk then
    local pmax = math.floor(g.sms / c.cluster)
    scratch[#scratch + 1] = mgpu.GMEM({ pmax, c.cluster, 2, tm, tn }, "f32")
    scratch[#scratch + 1] = mgpu.SemaphoreType.REGULAR({ pmax, c.cluster, 2 })
  end
  -- split-K: f32 epilogue slots, the workspace (an f32 tile per split tile, block and warpgroup,
  -- zero between launches; one 2-D array, so that a TMA copy into it has few dims), the count
  -- of partials added to each, and a barrier per warpgroup and slot for reading the sum back
  if split then
    local fswz = mgpu.find_swizzle(epi * 32)
    local ntiles = plan.split_tiles(g, c)
    scratch[#scratch + 1] = mgpu.SMEM({ 2, nslot, tm, epi }, "f32", { transforms = { T.tiling{ 8, fswz * 8 / 32 }, T.swizzle(fswz) } })
    scratch[#scratch + 1] = mgpu.GMEM({ ntiles * c.cluster * 2 * tm, tn }, "f32")
    scratch[#scratch + 1] = mgpu.GMEM({ ntiles, c.cluster, 2 }, "i32")
    scratch[#scratch + 1] = mgpu.Barrier{ num_barriers = 2 * nslot, num_arrivals = 1 }
  end
  -- split-K through SMEM: per compute warpgroup, the other blocks' f32 partials of this block's band
  -- of columns, swizzled in tiles that divide the band (up to 128 bytes), and the barrier they land on
  if g.dsmem then
    local w, tw = tn / g.split, 32
    while w % tw ~= 0 do tw = tw / 2 end
    scratch[#scratch + 1] = mgpu.SMEM({ 2, g.split - 1, tm, w }, "f32", { transforms = { T.tiling{ 8, tw }, T.swizzle(tw * 4) } })
    scratch[#scratch + 1] = mgpu.Barrier{ num_barriers = 2, num_arrivals = g.split - 1 }
  end

  return mgpu.kernel{
    name = "matmul",
    out_shape = function(a, b, ...)
      local M, N = plan.dims(c, a, b, ...)
      return mgpu.shape({ M, N }, o.out)
    end,
    grid = function(a, b, ...)
      local t = plan.plan(c, g, plan.dims(c, a, b, ...))
      if side > 0 then return { side + math.max(1, math.min(g.sms - side, t.m_iters * t.n_iters)) } end
      return { t.P }
    end,
    grid_names = { "sm" }, cluster = { g.dsmem and g.split or c.cluster }, cluster_names = { "c" },
    compiler_params = mgpu.CompilerParams{ unsafe_no_auto_barriers = c.nobar == 1,
                                           profile_space = c.profile and c.profile_space or nil, profile_dir = c.profile },
    num_threads = 3, thread_name = "wg",
    scratch_shapes = scratch,
    -- FP8 takes the scales after B (f32, shape {}); sched=dynamic then the work counter (i32[2],
    -- zero; left zero)
    body = function(a, b, ...)
      local rest = { ... }
      local a_scale = o.f8 and table.remove(rest, 1) or nil
      local b_scale = o.f8 and table.remove(rest, 1) or nil
      local counter = c.sched == "dynamic" and table.remove(rest, 1) or nil
      local landed = g.dsmem and table.remove(rest) or nil
      local parts = g.dsmem and table.remove(rest) or nil
      local sbar = split and table.remove(rest) or nil
      local count = split and table.remove(rest) or nil
      local sum = split and table.remove(rest) or nil
      local fslots = split and table.remove(rest) or nil
      local sems = sk and table.remove(rest) or nil
      local ws = sk and table.remove(rest) or nil
      local out, out_smem = rest[1], rest[2]
      local ext = { select(3, unpack(rest)) }      -- the hooks' scratch, and the operands
      ext.a, ext.b = a, b
      local sch = plan.plan(c, g, plan.dims(c, a, b, a_scale, b_scale))
      local k_iters = sch.k_iters
      -- a group kept in flight needs a slot beside it: none when the pipeline has a single step
      local delay = math.min(c.delay, math.max(0, math.min(depth, k_iters) - 1))
      local cidx = mgpu.axis_index("c")
      local wg = mgpu.axis_index("wg")
      local bidx = mgpu.axis_index("sm")

      -- columns of B's SMEM tile, and the tile as wgmma's (K, N) operand: an FP8 tile is (N, K)
      local function b_cols(b_smem, cols)
        if o.f8 then return b_smem:at(cols, mgpu.all) end
        return b_smem:at(mgpu.all, cols)
      end
      local function b_operand(b_smem) return o.f8 and mgpu.transpose_ref(b_smem, { 1, 0 }) or b_smem end

      -- the pipeline of one tile (mi, ni), over K steps [k0, k0 + nk) (all of them by default); skx
      -- (stream-K) says whether the tile's sum is partial and from which step its owner holds it
      local function pipe_for(mi, ni, state, offset, k0, nk, skx)
        local function kof(k) return k0 and k0 + k or k end
        local function mma(idx, a_smem, b_smem, acc)   -- one K step: this warpgroup's half of the tile
          local a_part = c.wg_dim == "M" and a_smem:at(mgpu.ds(wg * tm, tm), mgpu.all) or a_smem
          local b_part = c.wg_dim == "N" and b_cols(b_smem, mgpu.ds(wg * tn, tn)) or b_smem
          for j = 0, tn / mma_n - 1 do   -- one wgmma (one group) per mma_n columns
            local cols = mgpu.ds(j * mma_n, mma_n)
            mgpu.wgmma(mma_n < tn and acc:at(mgpu.all, cols) or acc, a_part,
                       b_operand(mma_n < tn and b_cols(b_part, cols) or b_part))
          end
          if c.on_k_step then c.on_k_step(mi, ni, kof(idx[1]), a_smem, wg, ext) end
          mgpu.wgmma_wait(delay * (tn / mma_n))
          return acc
        end
        local function chunk(x, j) return epi < tn and x:at(mgpu.all, mgpu.ds(j * epi, epi)) or x end
        local function origin()   -- the first row and column of this warpgroup's part of the tile
          return mi * cta_m + (c.wg_dim == "M" and wg * tm or 0), ni * cta_n + (c.wg_dim == "N" and wg * tn or 0)
        end
        -- an f32 part of the sum as it is stored: scaled (scale: FP8's a_scale * b_scale), through the
        -- fused epilogue, in the output's dtype
        local function finish(tile, scale)
          if scale then tile = tile * scale end
          if c.epilogue then tile = c.epilogue(tile) end
          return tile:astype(o.out)
        end
        -- the epilogue: registers -> SMEM slot -> TMA store, chunk by chunk
        local function store_tile(acc, scale)
          local r0, c0 = origin()
          for j = 0, tn / epi - 1 do   -- column chunks, through the warpgroup's slots in turn
            local tile = finish(chunk(acc, j):load(), scale)
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
        local function add_partials(acc)   -- stream-K: the partial sums of the blocks before this one
          mgpu.while_loop(function(p) return mgpu.lt(skx.tstart, plan.sk_start(sch, p + 1)) end, function(p)
            mgpu.when(mgpu.lt(plan.sk_start(sch, p), plan.sk_start(sch, p + 1)), function()
              mgpu.named_scope("wait", mgpu.semaphore_wait, sems:at(p, cidx, wg), 1)
              for j = 0, tn / epi - 1 do
                local part = chunk(ws:at(p, cidx, wg), j):load{ layout = mgpu.Layout.WGMMA }
                chunk(acc, j):store(chunk(acc, j):load() + part)
              end
            end)
            return p - 1
          end, bidx - 1)
        end
        -- split-K: add the partial sum into the tile's workspace; the last of the splits to do so
        -- takes the sum, clears the workspace and the count, and stores the tile.  The sum is read
        -- back with TMA loads: the other blocks' TMA reduce-adds are not reliably visible to generic
        -- loads after the count, however fenced (docs/matmul.md)
        local function add_split(acc, scale)
          local ws = sum:at(mgpu.ds(((skx.lin * c.cluster + cidx) * 2 + wg) * tm, tm), mgpu.all)
          mgpu.named_scope("reduce", function()
            for j = 0, tn / epi - 1 do
              local part = chunk(acc, j):load()
              mgpu.wait_smem_to_gmem(j == 0 and 0 or nslot - 1, { wait_read_only = true })
              local slot = fslots:at(wg, j % nslot)
              slot:store(part)
              mgpu.commit_smem()
              mgpu.copy_smem_to_gmem(slot, chunk(ws, j), { reduction_op = "add" })
            end
          end)
          mgpu.named_scope("reduce_done", mgpu.wait_smem_to_gmem, 0)   -- the adds are done before the count says so
          local n = count:at(skx.lin, cidx, wg)
          local last = mgpu.named_scope("count", function() return mgpu.eq(mgpu.atomic_add(n, 1), sch.split - 1) end)
          mgpu.when(last, function()
            mgpu.atomic_exchange(n, 0, { sem = "relaxed" })
            local nchunk = tn / epi
            local function slot(j) return fslots:at(wg, j % nslot), sbar:at(wg * nslot + j % nslot) end
            local function fetch(j)   -- chunk j of the sum into its slot
              local dst, bar = slot(j)
              mgpu.copy_gmem_to_smem(chunk(ws, j), dst, bar)
            end
            mgpu.named_scope("read", function()
              for j = 0, math.min(nslot, nchunk) - 1 do fetch(j) end   -- a chunk in flight per slot
              for j = 0, nchunk - 1 do
                local src, bar = slot(j)
                mgpu.barrier_wait(bar)
                chunk(acc, j):store(src:load{ layout = mgpu.Layout.WGMMA })
                chunk(ws, j):store(mgpu.broadcast(0.0, { tm, epi }, "f32"))
                if j + nslot < nchunk then
                  mgpu.commit_smem()   -- every thread has read the slot
                  fetch(j + nslot)
                end
              end
            end)
            mgpu.named_scope("epilogue", store_tile, acc, scale)
          end)
        end
        -- split-K through SMEM: block s of the cluster owns band s of the columns.  Every block stores
        -- the bands it does not own, straight from its registers, into their owners' SMEM
        -- (async_store_smem), then waits for the others' partials of its own band to land, adds them
        -- to its own in block order (so every launch rounds alike) and stores the band.
        local function add_split_dsmem(acc, scale)
          local S = sch.split
          local w = tn / S
          local function band(p) return acc:at(mgpu.all, mgpu.ds(p * w, w)) end
          local function slot(from, to) return parts:at(wg, from < to and from or from - 1) end   -- (S - 1 slots)
          for s = 0, S - 1 do   -- (the bands are register slices: one branch per owner)
            mgpu.when(mgpu.eq(cidx, s), function()
              mgpu.named_scope("push", function()
                for p = 0, S - 1 do
                  if p ~= s then mgpu.async_store_smem(band(p):load(), slot(s, p), landed:at(wg), { cluster_idx = p, cluster_dim = "c" }) end
                end
              end)
              mgpu.named_scope("wait", mgpu.barrier_wait, landed:at(wg))
              local tile = mgpu.named_scope("reduce", function()
                local sum
                for p = 0, S - 1 do
                  local part = p == s and band(s):load() or slot(p, s):load{ layout = mgpu.Layout.WGMMA }
                  sum = sum and sum + part or part
                end
                return sum
              end)
              mgpu.named_scope("epilogue", function()
                local r0, c0 = origin()
                out:at(mgpu.ds(r0, tm), mgpu.ds(c0 + s * w, w)):store(finish(tile, scale))
              end)
            end)
          end
        end
        local function epilogue(run)   -- the compute warpgroups' context: the accumulator, then its tile out
          -- (FP8's scales are loaded ahead of the main loop, which hides their latency)
          local scale = o.f8 and a_scale:load() * b_scale:load() or nil
          mgpu.run_scoped(function(acc)
            mgpu.named_scope("mainloop", run, acc)
            if c.after_mainloop then c.after_mainloop(mi, ni, wg, ext) end
            if not skx then return mgpu.named_scope("epilogue", store_tile, acc, scale) end
            if skx.lin then return mgpu.named_scope("split", g.dsmem and add_split_dsmem or add_split, acc, scale) end
            mgpu.cond(skx.partial, function() mgpu.named_scope("partial", function()   -- leave the partial sum for the owner
              for j = 0, tn / epi - 1 do chunk(ws:at(bidx, cidx, wg), j):store(chunk(acc, j):load()) end
              mgpu.semaphore_signal(sems:at(bidx, cidx, wg), 1)
            end) end, function()
              mgpu.when(mgpu.lt(0, skx.k0), function() mgpu.named_scope("fixup", add_partials, acc) end)
              mgpu.named_scope("epilogue", store_tile, acc, scale)
            end)
          end, mgpu.ACC({ tm, tn }, "f32"))
        end
        return mgpu.emit_pipeline_warp_specialized(mma, {
          grid = { nk or k_iters }, memory_registers = 40, num_compute_wgs = 2, wg_axis = "wg",
          max_concurrent_steps = depth, compute_context = epilogue, pipeline_state = state, step_offset = offset,
          memory_warps = c.mwarps,
          before_release = c.before_release and function(pending) c.before_release(mi, ni, pending, wg, ext) end,
          in_specs = {
            mgpu.BlockSpec{ { cta_m, tk }, function(k) return mi, kof(k) end, transforms = xf, delay_release = delay,
                            collective_axes = (cn == 2 and c.mcast ~= 0) and "c" or nil },
            o.f8 and mgpu.BlockSpec{ { cta_n, tk }, function(k) return ni, kof(k) end, transforms = xf,
                                     delay_release = delay, collective_axes = (cm == 2 and c.mcast ~= 0) and "c" or nil }
                 or mgpu.BlockSpec{ { tk, cta_n }, function(k) return kof(k), ni end, transforms = xf,
                                    delay_release = delay, collective_axes = (cm == 2 and c.mcast ~= 0) and "c" or nil },
          },
        })
      end

      -- one allocation for every tile's pipeline (no state without k steps to share it)
      local shared = k_iters >= depth or sch.stream_k or sch.split
      local proto = pipe_for(0, 0, shared and mgpu.PipelineState.START or nil, (sch.stream_k or sch.split) and 0 or nil)
      mgpu.run_scoped({ p = proto:get_allocations(a, b) }, function(s)
        local function tile_mn(lin)   -- the block's tile of linear index lin: tile_of's cluster tile, or the planar snake's
          local lm, ln
          if c.tile_of then lm, ln = c.tile_of(lin, ext) else lm, ln = mgpu.planar_snake(lin, { sch.pm, sch.pn }, 1, c.snake) end
          return lm * cm + (cm == 2 and cidx or 0), ln * cn + (cn == 2 and cidx or 0)
        end
        local function tile(info)   -- one whole tile, the loop's step info.index[1]
          local mi, ni = tile_mn(info.index[1])
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
        if sch.stream_k then   -- the block's stream-K pieces and whole tiles (matmul_plan.lua deals them)
          local items, item = plan.stream_k_items(sch, bidx, g.pieces_last)
          mgpu.fori(0, items, function(i, done)
            local lin, k0, k1, tstart = item(i)
            local mi, ni = tile_mn(lin)
            if c.before_tile then c.before_tile(mi, ni, wg, ext) end   -- (once per piece of a tile)
            local state = mgpu.select(mgpu.eq(i, 0), mgpu.PipelineState.START, mgpu.PipelineState.STEADY)
                        + mgpu.select(mgpu.eq(i, items - 1), mgpu.PipelineState.STOP, 0)
            local skx = { partial = mgpu.lt(k1, k_iters), k0 = k0, tstart = tstart }
            pipe_for(mi, ni, state, done, k0, k1 - k0, skx)(a, b, { allocations = s.p })
            return done + (k1 - k0)
          end, 0)
        elseif sch.split then    -- one tile's share of K steps (matmul_plan.lua deals them)
          local lin, k0, k1 = plan.split_item(sch, bidx, cidx)
          local mi, ni = tile_mn(lin)
          pipe_for(mi, ni, mgpu.PipelineState.START + mgpu.PipelineState.STOP, 0, k0, k1 - k0, { lin = lin })(
            a, b, { allocations = s.p })
        elseif c.sched == "dynamic" then
          mgpu.dynamic_scheduling_loop("sm", { counter = counter, grid = { sch.pm * sch.pn }, thread_axis = "wg" }, tile)
        elseif side > 0 then     -- the tiles go round the blocks after the side blocks
          local w, nw = mgpu.program_id(0) - side, mgpu.num_programs(0) - side
          mgpu.when(mgpu.ge(w, 0), function()
            local steps = mgpu.cdiv(sch.pm * sch.pn - w, nw)
            mgpu.fori(0, steps, function(i) tile({ index = { w + i * nw }, local_index = i, num_local_steps = steps }) end)
          end)
        else
          mgpu.nd_loop({ sch.pm * sch.pn }, { collective_axes = "sm" }, tile)
        end
      end)
      if side > 0 then mgpu.when(mgpu.lt(mgpu.program_id(0), side), function() c.side(ext) end) end
      mgpu.when(mgpu.lt(wg, 2), function() mgpu.wait_smem_to_gmem(0) end)
    end,
  }
end

local args = { ... }
if args[1] == "--lib" then return lib end
dofile(here .. "matmul_check.lua").script(lib, ...)
