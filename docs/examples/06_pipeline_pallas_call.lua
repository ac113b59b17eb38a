--[[
Tutorial 6: emit_pipeline and pallas_call (docs/tutorial/06-pipelines.md).

The matmul of tutorial 5, pipelined: while wgmma works on step k, the copy
engine already brings the tiles of steps k + 1 and k + 2 into other SMEM
slots.  Written twice:
- inside mgpu.kernel with mgpu.emit_pipeline, which streams BlockSpec
  blocks through `max_concurrent_steps` slots;
- as mgpu.pallas_call: a grid plus BlockSpecs, where the "sequential" K
  axis becomes the same pipeline.

  mgpu docs/examples/06_pipeline_pallas_call.lua [M] [N] [K]   (multiples of 64, 128, 64)
]]
local mgpu = require "mgpu"
local T = mgpu.transforms

local M = tonumber((select(1, ...))) or 128
local N = tonumber((select(2, ...))) or 256
local K = tonumber((select(3, ...))) or 192
local TM, TN, TK = 64, 128, 64
local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }

-- 1. emit_pipeline inside a kernel
local matmul = mgpu.kernel{
  name = "pipelined_matmul",
  grid = { M / TM, N / TN },
  out_shape = mgpu.shape({ M, N }, "bf16"),
  body = function(a, b, c)
    local i, j = mgpu.program_id(0), mgpu.program_id(1)
    mgpu.run_scoped(function(acc)
      local pipe = mgpu.emit_pipeline(function(_, a_smem, b_smem)
        mgpu.wgmma(acc, a_smem, b_smem)
        mgpu.wgmma_wait(0)
      end, {
        grid = { K / TK },                       -- step k of the pipeline...
        max_concurrent_steps = 3,                -- ...with up to 3 steps' tiles in SMEM
        in_specs = {                             -- ...reads these blocks (block indices, 0-based)
          mgpu.BlockSpec{ { TM, TK }, function(k) return i, k end, transforms = xf },
          mgpu.BlockSpec{ { TK, TN }, function(k) return k, j end, transforms = xf },
        },
      })
      pipe(a, b)                                 -- the GMEM refs, inputs then outputs
      c:at(mgpu.ds(i * TM, TM), mgpu.ds(j * TN, TN)):store(acc:load():astype("bf16"))
    end, mgpu.ACC({ TM, TN }, "f32"))
  end,
}

-- 2. the same as a pallas_call: the body sees SMEM blocks, the accumulator
-- is scratch that lives across the sequential steps, and the output block
-- is stored when the pipeline moves past it (after the last K step).
local nk = K / TK
local matmul_call = mgpu.pallas_call{
  name = "pallas_matmul",
  grid = { M / TM, N / TN, nk },
  in_specs = { mgpu.BlockSpec{ { TM, TK }, function(i, j, k) return i, k end, transforms = xf },
               mgpu.BlockSpec{ { TK, TN }, function(i, j, k) return k, j end, transforms = xf } },
  out_specs = mgpu.BlockSpec{ { TM, TN }, function(i, j, k) return i, j end },
  out_shape = mgpu.shape({ M, N }, "bf16"),
  scratch_shapes = { mgpu.ACC({ TM, TN }, "f32") },
  compiler_params = mgpu.CompilerParams{ dimension_semantics = { "parallel", "parallel", "sequential" },
                                         max_concurrent_steps = 3 },
  body = function(a_smem, b_smem, c_smem, acc)
    mgpu.wgmma(acc, a_smem, b_smem)
    mgpu.wgmma_wait(0)
    -- a traced condition: mgpu.when, not a Lua `if`
    mgpu.when(mgpu.eq(mgpu.program_id(2), nk - 1), function()
      c_smem:store(acc:load():astype("bf16"))
    end)
  end,
}

local a = mgpu.random.normal({ M, K }, "bf16")
local b = mgpu.random.normal({ K, N }, "bf16")
local c1 = matmul(a, b)
local c2 = matmul_call(a, b)
if mgpu.compile_only() then return end

local H = mgpu.host
local ref = H.matmul(H.from(a), H.from(b))
local e1, e2 = H.relerr(c1, ref), H.relerr(c2, ref)
print(string.format("bf16 %dx%dx%d: emit_pipeline relative error %.2e, pallas_call %.2e", M, N, K, e1, e2))
assert(e1 < 1e-2 and e2 < 1e-2, "wrong result")
