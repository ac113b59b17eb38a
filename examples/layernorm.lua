--[[
Layer normalization over the last axis of a (rows, cols) bf16 matrix:
y = (x - mean) / sqrt(var + eps) * gamma + beta, statistics in f32.  One
warpgroup per row; gamma and beta are shared by every row (they stay in
L2).

  mgpu examples/layernorm.lua [rows] [cols]   (default 32768 x 4096 on a GPU, 64 x 4096 interpreted)
]]
local mgpu = require "mgpu"
local args = { ... }

local rows = tonumber(args[1]) or (mgpu.interpreting() and 64 or 32768)
local cols = tonumber(args[2]) or 4096
local eps = 1e-5

local layernorm = mgpu.kernel{
  name = "layernorm",
  grid = function(x) return { x.shape[1] } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  compiler_params = mgpu.CompilerParams{ approx_math = true },
  body = function(x, gamma, beta, y)
    local i = mgpu.program_id(0)
    local row = x:at(i):load():astype("f32")
    local centered = row - row:mean()
    local inv = ((centered * centered):mean() + eps):rsqrt()
    local out = centered * inv * gamma:load():astype("f32") + beta:load():astype("f32")
    y:at(i):store(out:astype("bf16"))
  end,
}

local x = mgpu.random.normal({ rows, cols }, "bf16", nil, 1, 3)
local gamma = mgpu.random.uniform(cols, "bf16", nil, 0.5, 1.5)
local beta = mgpu.random.normal(cols, "bf16")
local y = layernorm(x, gamma, beta)
if mgpu.compile_only() then return end

local H = mgpu.host
local n = math.min(rows, 256)
local xs = H.from(x):rows(0, n)
local c = xs - xs:mean(1, true)
local ref = c / ((c * c):mean(1, true) + eps):sqrt() * H.from(gamma) + H.from(beta)
local err = H.relerr(H.from(y):rows(0, n), ref)
local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
print(string.format("layernorm bf16[%d, %d] (%s): relative error %.2e over %d rows", rows, cols, mode, err, n))
assert(err <= 1e-2, "layernorm: result differs from the reference")

if not mgpu.interpreting() then
  local ms = mgpu.bench(function() layernorm:call_into(y, x, gamma, beta) end, { reps = 30 })
  print(string.format("layernorm: %.4f ms, %.1f GB/s", ms, 2 * x.nbytes / ms / 1e6))
end
