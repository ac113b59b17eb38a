--[[
Tutorial 5: a matmul on the tensor cores with wgmma (docs/tutorial/05-wgmma-matmul.md).

C = A @ B in bf16 with f32 accumulation.  One block per (TM x TN) tile of C
walks K in steps of TK: TMA brings an A tile and a B tile into SMEM, wgmma
multiplies them into an accumulator held in registers, and the block waits
for that wgmma before the next copy overwrites the tiles.  (Tutorial 6
overlaps the copies with the math.)

  mgpu docs/examples/05_wgmma_matmul.lua [M] [N] [K]   (multiples of 64, 128, 64)
]]
local mgpu = require "mgpu"
local T = mgpu.transforms

local M = tonumber((select(1, ...))) or 128
local N = tonumber((select(2, ...))) or 256
local K = tonumber((select(3, ...))) or 192
local TM, TN, TK = 64, 128, 64

-- wgmma reads SMEM operands tiled in (8 x 64) tiles of bf16 (8 rows of 128
-- bytes) with the 128-byte swizzle; TMA writes them in exactly that layout.
local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }

local matmul = mgpu.kernel{
  name = "wgmma_matmul",
  grid = function(a, b) return { a.shape[1] / TM, b.shape[2] / TN } end,
  out_shape = function(a, b) return mgpu.shape({ a.shape[1], b.shape[2] }, "bf16") end,
  scratch_shapes = {
    mgpu.SMEM({ TM, TK }, "bf16", { transforms = xf }),
    mgpu.SMEM({ TK, TN }, "bf16", { transforms = xf }),
    mgpu.Barrier{ num_arrivals = 2 },          -- the A copy and the B copy
  },
  body = function(a, b, c, a_smem, b_smem, loaded)
    local i, j = mgpu.program_id(0), mgpu.program_id(1)
    local rows, cols = mgpu.ds(i * TM, TM), mgpu.ds(j * TN, TN)
    -- run_scoped allocates for the duration of the function: here a zeroed
    -- (TM x TN) f32 accumulator, which lives in registers
    mgpu.run_scoped(function(acc)
      mgpu.fori(0, K / TK, function(k)
        local ks = mgpu.ds(k * TK, TK)
        mgpu.copy_gmem_to_smem(a:at(rows, ks), a_smem, loaded)
        mgpu.copy_gmem_to_smem(b:at(ks, cols), b_smem, loaded)
        mgpu.barrier_wait(loaded)              -- both tiles have landed
        mgpu.wgmma(acc, a_smem, b_smem)        -- acc += a_smem @ b_smem, asynchronously
        mgpu.wgmma_wait(0)                     -- done: the tiles may be overwritten
      end)
      c:at(rows, cols):store(acc:load():astype("bf16"))
    end, mgpu.ACC({ TM, TN }, "f32"))
  end,
}

local a = mgpu.random.normal({ M, K }, "bf16")
local b = mgpu.random.normal({ K, N }, "bf16")
local c = matmul(a, b)
if mgpu.compile_only() then return end

local H = mgpu.host
local err = H.relerr(c, H.matmul(H.from(a), H.from(b)))   -- in float64
print(string.format("wgmma_matmul bf16 %dx%dx%d: relative error %.2e", M, N, K, err))
assert(err < 1e-2, "wgmma_matmul: wrong result")   -- bf16 output: about 2e-3
