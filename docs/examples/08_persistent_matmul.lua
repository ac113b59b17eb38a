--[[
Tutorial 8: the persistent matmul (docs/tutorial/08-persistent-matmul.md).

The warp-specialized matmul of tutorial 7, made persistent: the grid has
one block per SM (here P blocks), and each block walks output tiles
p, p + P, p + 2P, ... with mgpu.nd_loop, in planar-snake order so that
blocks running at the same time share rows of A and columns of B in L2.
All the tiles' pipelines share one SMEM allocation, so the memory
warpgroup loads the next tile while the compute warpgroups still store
the last one: registers -> SMEM -> TMA store.

  mgpu docs/examples/08_persistent_matmul.lua [M] [N] [K] [P]
  (multiples of 128, 128, 64; P blocks, default 2 interpreted, else the SM count)
]]
local mgpu = require "mgpu"
local T = mgpu.transforms

local M = tonumber((select(1, ...))) or 256
local N = tonumber((select(2, ...))) or 256
local K = tonumber((select(3, ...))) or 256
local TM, TN, TK, depth = 128, 128, 64, 3
local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }
local m_tiles, n_tiles, k_steps = M / TM, N / TN, K / TK
assert(k_steps >= depth, "K must be at least depth * TK: the tiles' pipelines share their slots")
local P = tonumber((select(4, ...))) or (mgpu.interpreting() and 2 or mgpu.device().sm_count)
P = math.min(P, m_tiles * n_tiles)

local matmul = mgpu.kernel{
  name = "persistent_matmul",
  grid = { P }, grid_names = { "sm" },
  num_threads = 3, thread_name = "wg",
  out_shape = mgpu.shape({ M, N }, "bf16"),
  scratch_shapes = { mgpu.SMEM({ 2, 64, TN }, "bf16") },   -- each compute warpgroup's output tile
  body = function(a, b, c, out_smem)
    local wg = mgpu.axis_index("wg")

    -- the pipeline of output tile (mi, ni); `state` and `offset` chain it to
    -- the block's earlier tiles (they share slots and barriers)
    local function tile_pipeline(mi, ni, state, offset)
      return mgpu.emit_pipeline_warp_specialized(function(_, a_smem, b_smem, acc)
        mgpu.wgmma(acc, a_smem:at(mgpu.ds(wg * 64, 64), mgpu.all), b_smem)
        mgpu.wgmma_wait(0)
        return acc
      end, {
        grid = { k_steps }, max_concurrent_steps = depth,
        num_compute_wgs = 2, wg_axis = "wg", memory_registers = 40,
        pipeline_state = state, step_offset = offset,
        in_specs = {
          mgpu.BlockSpec{ { TM, TK }, function(k) return mi, k end, transforms = xf },
          mgpu.BlockSpec{ { TK, TN }, function(k) return k, ni end, transforms = xf },
        },
        compute_context = function(run)
          mgpu.run_scoped(function(acc)
            run(acc)
            local slot = out_smem:at(wg)
            mgpu.wait_smem_to_gmem(0, { wait_read_only = true })   -- the last tile's store has read the slot
            slot:store(acc:load():astype("bf16"))
            mgpu.commit_smem()
            mgpu.copy_smem_to_gmem(slot, c:at(mgpu.ds(mi * TM + wg * 64, 64), mgpu.ds(ni * TN, TN)))
          end, mgpu.ACC({ 64, TN }, "f32"))
        end,
      })
    end

    -- one allocation (SMEM slots and barriers) for every tile of the block
    local proto = tile_pipeline(0, 0, mgpu.PipelineState.START, 0)
    mgpu.run_scoped({ pipe = proto:get_allocations(a, b) }, function(s)
      mgpu.nd_loop({ m_tiles * n_tiles }, { collective_axes = "sm" }, function(info)
        -- tile number -> (row tile, column tile), in strips of 2 row tiles
        local mi, ni = mgpu.planar_snake(info.index[1], { m_tiles, n_tiles }, 0, 2)
        local first = mgpu.eq(info.local_index, 0)
        local last = mgpu.eq(info.local_index, info.num_local_steps - 1)
        local state = mgpu.select(first, mgpu.PipelineState.START, mgpu.PipelineState.STEADY)
                    + mgpu.select(last, mgpu.PipelineState.STOP, 0)
        tile_pipeline(mi, ni, state, info.local_index * k_steps)(a, b, { allocations = s.pipe })
      end)
    end)
    mgpu.when(mgpu.lt(wg, 2), function() mgpu.wait_smem_to_gmem(0) end)   -- the last stores have landed
  end,
}

local a = mgpu.random.normal({ M, K }, "bf16")
local b = mgpu.random.normal({ K, N }, "bf16")
local c = matmul(a, b)
if mgpu.compile_only() then return end

local H = mgpu.host
local err = H.relerr(c, H.matmul(H.from(a), H.from(b)))
print(string.format("persistent_matmul bf16 %dx%dx%d on %d blocks: relative error %.2e", M, N, K, P, err))
assert(err < 1e-2, "persistent_matmul: wrong result")
