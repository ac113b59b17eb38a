--[[
A bf16 matmul, C = A @ B with f32 accumulation, one block per (tm, tn) output
tile and a manual multi-stage pipeline over K: TMA copies A and B tiles into
`stages` SMEM slots, each slot's barrier says when its tiles have landed,
and wgmma multiplies them asynchronously while later tiles are in flight.
A slot is refilled once the wgmma that read it has finished (wgmma_wait(1)
leaves only the newest one running).  No warp specialization: one
warpgroup issues both the copies and the wgmmas.

  mgpu examples/matmul_basic.lua [M] [N] [K]   (4096^3 on a GPU, 256^3 interpreted)

M, N and K must be multiples of the tile (128, 128, 64).
]]
local mgpu = require "mgpu"
local args = { ... }
local T = mgpu.transforms

local small = mgpu.interpreting()
local M = tonumber(args[1]) or (small and 256 or 4096)
local N = tonumber(args[2]) or M
local K = tonumber(args[3]) or M
local tm, tn, tk, stages = 128, 128, 64, 4

for _, d in ipairs({ { "M", M, tm }, { "N", N, tn }, { "K", K, tk } }) do
  if d[2] % d[3] ~= 0 then
    io.stderr:write(string.format("matmul_basic: %s = %d is not a multiple of the tile size %d\n", d[1], d[2], d[3]))
    os.exit(2)
  end
end

local swz = mgpu.find_swizzle(tk * 16)                      -- 128 bytes: one bf16 row of the A tile
local xf = { T.tiling{ 8, math.floor(swz / 2) }, T.swizzle(swz) }

local matmul = mgpu.kernel{
  name = "matmul_basic",
  grid = function(a, b) return { math.floor(a.shape[1] / tm), math.floor(b.shape[2] / tn) } end,
  out_shape = function(a, b) return mgpu.shape({ a.shape[1], b.shape[2] }, "bf16") end,
  scratch_shapes = {
    mgpu.SMEM({ stages, tm, tk }, "bf16", { transforms = xf }),
    mgpu.SMEM({ stages, tk, tn }, "bf16", { transforms = xf }),
    mgpu.Barrier{ num_barriers = stages, num_arrivals = 2 },   -- the A and the B copy of a slot
  },
  body = function(a, b, c, a_smem, b_smem, loaded)
    local i, j = mgpu.program_id(0), mgpu.program_id(1)
    local nk = math.floor(a.shape[2] / tk)
    local function fetch(kk, slot)
      mgpu.copy_gmem_to_smem(a:at(mgpu.ds(i * tm, tm), mgpu.ds(kk * tk, tk)), a_smem:at(slot), loaded:at(slot))
      mgpu.copy_gmem_to_smem(b:at(mgpu.ds(kk * tk, tk), mgpu.ds(j * tn, tn)), b_smem:at(slot), loaded:at(slot))
    end
    for s = 0, math.min(stages, nk) - 1 do fetch(s, s) end
    mgpu.run_scoped(function(acc)
      mgpu.fori(0, nk, function(kk)
        local slot = kk % stages
        mgpu.barrier_wait(loaded:at(slot))
        mgpu.wgmma(acc, a_smem:at(slot), b_smem:at(slot))
        mgpu.wgmma_wait(1)                                    -- step kk - 1 is done with its slot
        mgpu.when(mgpu.ge(kk, 1), function()
          local refill = kk - 1 + stages
          mgpu.when(mgpu.lt(refill, nk), function() fetch(refill, (kk - 1) % stages) end)
        end)
      end)
      c:at(mgpu.ds(i * tm, tm), mgpu.ds(j * tn, tn)):store(acc:load():astype("bf16"))
    end, mgpu.ACC({ tm, tn }, "f32"))
  end,
}

local a = mgpu.random.normal({ M, K }, "bf16")
local b = mgpu.random.normal({ K, N }, "bf16")
local c = matmul(a, b)
if mgpu.compile_only() then return end

-- reference in f64 on a band of rows (all of them when small)
local H = mgpu.host
local rows = math.min(M, 256)
local ref = H.matmul(H.from(a):rows(0, rows), H.from(b))
local err = H.relerr(H.from(c):rows(0, rows), ref)
local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
print(string.format("matmul_basic bf16 %dx%dx%d (%s): relative error %.2e over %d rows", M, N, K, mode, err, rows))
assert(err <= 1e-2, "matmul_basic: result differs from the reference")

if not mgpu.interpreting() then
  local ms = mgpu.bench(function() matmul:call_into(c, a, b) end, { reps = 20 })
  print(string.format("matmul_basic: %.4f ms, %.1f TFLOP/s", ms, 2 * M * N * K / ms / 1e9))
end
