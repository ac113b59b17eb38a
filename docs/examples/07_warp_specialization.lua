--[[
Tutorial 7: warp specialization (docs/tutorial/07-warp-specialization.md).

The pipelined matmul with its work split between warpgroups: a block has
three warpgroups; the memory warpgroup only issues TMA copies, and the two
compute warpgroups only run wgmma, each on its own 64 rows of the block's
(128 x TN) tile.  Barriers pass each SMEM slot from the memory warpgroup
to the compute warpgroups ("ready") and back ("consumed").

  mgpu docs/examples/07_warp_specialization.lua [M] [N] [K]   (multiples of 128, 128, 64)
]]
local mgpu = require "mgpu"
local T = mgpu.transforms

local M = tonumber((select(1, ...))) or 256
local N = tonumber((select(2, ...))) or 128
local K = tonumber((select(3, ...))) or 192
local TM, TN, TK = 128, 128, 64           -- the block's tile: two warpgroups of 64 rows
local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }

local matmul = mgpu.kernel{
  name = "ws_matmul",
  grid = { M / TM, N / TN },
  out_shape = mgpu.shape({ M, N }, "bf16"),
  num_threads = 3, thread_name = "wg",     -- warpgroups 0 and 1 compute, 2 loads
  body = function(a, b, c)
    local i, j = mgpu.program_id(0), mgpu.program_id(1)
    local wg = mgpu.axis_index("wg")       -- this warpgroup's index (traced)
    local pipe = mgpu.emit_pipeline_warp_specialized(function(_, a_smem, b_smem, acc)
      -- runs in the compute warpgroups: this one's 64 rows of the A tile
      mgpu.wgmma(acc, a_smem:at(mgpu.ds(wg * 64, 64), mgpu.all), b_smem)
      mgpu.wgmma_wait(0)
      return acc                           -- the carry, handed to the next step
    end, {
      grid = { K / TK }, max_concurrent_steps = 3,
      num_compute_wgs = 2, wg_axis = "wg",
      memory_registers = 40,               -- the memory warpgroup gives up registers (setmaxnreg)...
      in_specs = {                         -- ...so the compute ones can have more
        mgpu.BlockSpec{ { TM, TK }, function(k) return i, k end, transforms = xf },
        mgpu.BlockSpec{ { TK, TN }, function(k) return k, j end, transforms = xf },
      },
      -- compute_context runs in the compute warpgroups only: allocate the
      -- accumulator, run the pipeline with it, then store the result
      compute_context = function(run)
        mgpu.run_scoped(function(acc)
          run(acc)
          c:at(mgpu.ds(i * TM + wg * 64, 64), mgpu.ds(j * TN, TN)):store(acc:load():astype("bf16"))
        end, mgpu.ACC({ 64, TN }, "f32"))
      end,
    })
    pipe(a, b)
  end,
}

local a = mgpu.random.normal({ M, K }, "bf16")
local b = mgpu.random.normal({ K, N }, "bf16")
local c = matmul(a, b)
if mgpu.compile_only() then return end

local H = mgpu.host
local err = H.relerr(c, H.matmul(H.from(a), H.from(b)))
print(string.format("ws_matmul bf16 %dx%dx%d: relative error %.2e", M, N, K, err))
assert(err < 1e-2, "ws_matmul: wrong result")
