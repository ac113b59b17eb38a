--[[
A Blackwell (sm_100a) matmul, C = A @ B, bf16 in, f32 accumulation in
tensor memory, bf16 out, structured as Pallas' blackwell_matmul_mgpu:

- persistent with cluster launch control: the launch grid is the output
  tiles, and each cluster, while it computes one, cancels the launch of a
  cluster not yet started and takes its tile next
  (dynamic_scheduling_loop), tiles walked in planar-snake order;
- warp specialized, four warpgroups: a TMA warp (the first warp of
  warpgroup 0) streams A and B tiles through `depth` SMEM slots; an MMA
  warp (of warpgroup 1) issues tcgen05_mma into a TMEM accumulator; two
  epilogue warpgroups each read half of the tile's columns out of TMEM,
  cast them to bf16 and store them through SMEM with TMA;
- two accumulators in TMEM (2 x 256 of its 512 columns): the epilogue of
  one tile overlaps the MMAs of the next, the MMA warp reusing an
  accumulator once both blocks' epilogues have read it;
- 2-CTA MMAs (pair=1, the default): a cluster of two blocks computes a
  256 x 256 tile with one MMA instruction per K step issued by its first
  block; each block loads its half of A and of B (copies partitioned over
  the pair, counted by the first block's barrier), holds 128 rows of the
  accumulator, and the commits arrive on both blocks' barriers.  pair=0:
  every block alone, 128 x 256 tiles.

  mgpu --target sm_100a examples/blackwell_matmul.lua [M] [N] [K] [key=value ...]
    keys: pair (1|0) depth (SMEM slots: 4, 3 with pair=0) snake (planar-snake strip width, 8) epi (epilogue
          column chunk, 32: 64 makes ptxas spill)
  (8192^3 on a GPU; 512x512x256 interpreted)

M must be a multiple of 256 (128 with pair=0), N of 256, K of 64.
Compiled and interpreted; not yet run on Blackwell silicon.
]]
local mgpu = require "mgpu"
local T = mgpu.transforms
local pos, cfg = mgpu.script_args(...)

if mgpu.device().target ~= "sm_100a" then
  io.stderr:write("blackwell_matmul: compile for Blackwell: mgpu --target sm_100a (or MGPU_TARGET=sm_100a)\n")
  os.exit(2)
end
local small = mgpu.interpreting()
local M = tonumber(pos[1]) or (small and 512 or 8192)
local N = tonumber(pos[2]) or M
local K = tonumber(pos[3]) or (small and 256 or M)
local pair = (cfg.pair or 1) == 1
local depth = cfg.depth or (pair and 4 or 3)
local snake = cfg.snake or 8
local epi = cfg.epi or 32

local tm, tn, tk = 128, 256, 64               -- a block's rows, the MMA's columns, K per step
local pm = pair and 2 * tm or tm              -- rows of a cluster's tile
local bn = pair and tn / 2 or tn              -- columns of B a block holds
for _, d in ipairs({ { "M", M, pm }, { "N", N, tn }, { "K", K, tk } }) do
  if d[2] % d[3] ~= 0 then
    io.stderr:write(string.format("blackwell_matmul: %s = %d is not a multiple of %d\n", d[1], d[2], d[3]))
    os.exit(2)
  end
end
local m_iters, n_iters, k_iters = M / pm, N / tn, K / tk
local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }   -- 128-byte rows of bf16, as TMA writes them and the MMA reads them
local oswz = mgpu.find_swizzle(epi * 16)           -- the epilogue's chunks: rows of epi bf16
local out_xf = { T.tiling{ 8, oswz / 2 }, T.swizzle(oswz) }
local EPI_WGS = 2
local TMA_WG, MMA_WG = 0, 1

local function barrier_or_cluster(opts)
  if pair then
    opts.collective_axes = "x"
    return mgpu.ClusterBarrier(opts)
  end
  return mgpu.Barrier(opts)
end

local matmul = mgpu.kernel{
  name = "blackwell_matmul",
  out_shape = mgpu.shape({ M, N }, "bf16"),
  grid = { m_iters * n_iters }, grid_names = { "mn" },
  cluster = pair and { 2 } or nil, cluster_names = pair and { "x" } or nil,
  num_threads = 2 + EPI_WGS, thread_name = "wg",
  scratch_shapes = {
    a_smem = mgpu.SMEM({ depth, tm, tk }, "bf16", { transforms = xf }),
    b_smem = mgpu.SMEM({ depth, tk, bn }, "bf16", { transforms = xf }),
    acc = mgpu.TMEM({ tm, 2 * tn }, "f32", { collective = pair }),
    out_smem = mgpu.SMEM({ EPI_WGS, 2, tm, epi }, "bf16", { transforms = out_xf }),
    loaded = mgpu.Barrier{ num_barriers = depth, num_arrivals = 2 },            -- A and B of a slot
    consumed = mgpu.Barrier{ num_barriers = depth, orders_tensor_core = true },  -- the MMAs that read a slot are done
    mma_done = mgpu.Barrier{ num_barriers = 2, orders_tensor_core = true },      -- an accumulator is complete
    store_done = barrier_or_cluster{ num_barriers = 2, num_arrivals = EPI_WGS, orders_tensor_core = true },
  },
  body = function(a, b, c, s)
    local wg = mgpu.axis_index("wg")
    -- registers: few for the TMA and MMA warpgroups (one warp each issues), many for the epilogue's
    mgpu.when(mgpu.lt(wg, 2), function() mgpu.set_max_registers(40, { action = "decrease" }) end)
    mgpu.when(mgpu.ge(wg, 2), function() mgpu.set_max_registers(208, { action = "increase" }) end)
    local x = pair and mgpu.axis_index("x") or 0
    local collective = pair and "x" or nil
    local sched = { thread_axis = "wg", cluster_axes = pair and { "x" } or nil }
    mgpu.dynamic_scheduling_loop({ "mn" }, sched, function(info)
      local t = info.local_index                                    -- this block's tile count so far
      local mi, ni = mgpu.planar_snake(info.index[1], { m_iters, n_iters }, 1, snake)
      local acc_slot = t % 2
      local acc = s.acc:at(mgpu.all, mgpu.ds(acc_slot * tn, tn))

      mgpu.when(mgpu.eq(wg, TMA_WG), function()
        mgpu.single_warp(function()
          mgpu.fori(0, k_iters, function(ki)
            local g = t * k_iters + ki                               -- K steps this block has loaded
            local slot = g % depth
            mgpu.when(mgpu.ge(g, depth), function() mgpu.barrier_wait(s.consumed:at(slot)) end)
            local a_view = a:at(mgpu.ds(mi * pm, pm), mgpu.ds(ki * tk, tk))
            local b_view = b:at(mgpu.ds(ki * tk, tk), mgpu.ds(ni * tn, tn))
            local part = pair and { collective_axes = "x" } or nil
            if pair then part.leader_tracked = mgpu.CopyPartition.PARTITIONED(0) end
            mgpu.copy_gmem_to_smem(a_view, s.a_smem:at(slot), s.loaded:at(slot), part)
            if pair then part = { collective_axes = "x", leader_tracked = mgpu.CopyPartition.PARTITIONED(1) } end
            mgpu.copy_gmem_to_smem(b_view, s.b_smem:at(slot), s.loaded:at(slot), part)
          end)
        end)
      end)

      mgpu.when(mgpu.eq(wg, MMA_WG):band(mgpu.eq(x, 0)), function()   -- the pair's first block issues for both
        mgpu.single_warp(function()
          mgpu.when(mgpu.ge(t, 2), function() mgpu.barrier_wait(s.store_done:at(acc_slot)) end)
          mgpu.fori(0, k_iters, function(ki)
            local slot = (t * k_iters + ki) % depth
            mgpu.barrier_wait(s.loaded:at(slot))
            mgpu.tcgen05_mma(acc, s.a_smem:at(slot), s.b_smem:at(slot), s.consumed:at(slot),
                             { accumulate = mgpu.gt(ki, 0), collective_axis = collective })
          end)
          mgpu.tcgen05_commit_arrive(s.mma_done:at(acc_slot), { collective_axis = collective })
        end)
      end)

      mgpu.when(mgpu.ge(wg, 2), function()                          -- the epilogue: half of the columns each
        local e = wg - 2
        mgpu.barrier_wait(s.mma_done:at(acc_slot))
        local row0 = mi * pm + x * tm
        for chunk = 0, tn / EPI_WGS / epi - 1 do
          local col = e * (tn / EPI_WGS) + chunk * epi
          local tile = mgpu.async_load_tmem(acc:at(mgpu.all, mgpu.ds(col, epi)))
          local buf = s.out_smem:at(e, chunk % 2)
          buf:store(tile:astype("bf16"))
          mgpu.commit_smem()
          mgpu.copy_smem_to_gmem(buf, c:at(mgpu.ds(row0, tm), mgpu.ds(ni * tn + col, epi)))
          mgpu.wait_smem_to_gmem(1, { wait_read_only = true })      -- the other slot is free again
        end
        mgpu.wait_load_tmem()                                       -- the accumulator may be overwritten
        mgpu.barrier_arrive(s.store_done:at(acc_slot))
      end)
    end)
    mgpu.when(mgpu.ge(wg, 2), function() mgpu.wait_smem_to_gmem(0) end)
  end,
}

local a = mgpu.random.uniform({ M, K }, "bf16", 1, -1, 1)
local b = mgpu.random.uniform({ K, N }, "bf16", 2, -1, 1)
local c = matmul(a, b)
if mgpu.compile_only() then return end

-- float64 reference on the first and the last rows (every row when small)
local H = mgpu.host
local band = small and M or math.min(M, 256)
local err = 0
for _, r0 in ipairs({ 0, M - band }) do   -- (a NaN, which math.max would drop, is kept)
  local e = H.relerr(H.from(c):rows(r0, band), H.matmul(H.from(a):rows(r0, band), H.from(b)))
  if e ~= e or e > err then err = e end
end
local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
print(string.format("blackwell_matmul bf16 %dx%dx%d%s (%s): relative error %.2e", M, N, K, pair and " 2-CTA" or "", mode, err))
assert(err <= 1e-2 and err == err, "blackwell_matmul: result differs from the reference")

if not mgpu.interpreting() then
  local ms = mgpu.bench(function() matmul:call_into(c, a, b) end)
  print(string.format("blackwell_matmul: %.4f ms, %.1f TFLOP/s", ms, 2 * M * N * K / ms / 1e9))
end
