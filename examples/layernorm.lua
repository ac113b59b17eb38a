--[[
Layer normalization over the last axis of a (rows, cols) bf16 matrix:
y = (x - mean) / sqrt(var + eps) * gamma + beta, statistics in f32.  One
warpgroup per row; gamma and beta are shared by every row (they stay in
L2).

  mgpu examples/layernorm.lua [rows] [cols] [per_sm=4] [depth=3]
  (default 32768 x 4096 on a GPU, 64 x 4096 interpreted)

The same layer norm also runs through emit_pipeline (persistent blocks streaming rows through SMEM
with TMA); both are checked, and timed on a GPU.
]]
local mgpu = require "mgpu"
local args, opt = mgpu.script_args(...)

local rows = tonumber(args[1]) or (mgpu.interpreting() and 64 or 32768)
local cols = tonumber(args[2]) or 4096
local eps = 1e-5
local approx = mgpu.CompilerParams{ approx_math = true }

local function norm_row(x, g, b)
  local row = x:astype("f32")
  local centered = row - row:mean()
  local inv = ((centered * centered):mean() + eps):rsqrt()
  return (centered * inv * g + b):astype("bf16")
end

local layernorm = mgpu.kernel{
  name = "layernorm",
  grid = function(x) return { x.shape[1] } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  compiler_params = approx,
  body = function(x, gamma, beta, y)
    local i = mgpu.program_id(0)
    y:at(i):store(norm_row(x:at(i):load(), gamma:load():astype("f32"), beta:load():astype("f32")))
  end,
}

-- The same through emit_pipeline: per_sm persistent blocks per SM load gamma and beta once and
-- stream their rows (p, p + P, ...) through `depth` SMEM slots with TMA.
local per_sm, depth = opt.per_sm or 4, opt.depth or 3
local workers = math.min(mgpu.device().sm_count * per_sm, rows)
local row_xf = { mgpu.transforms.tiling{ 256 } }   -- a TMA box spans at most 256 elements
local layernorm_pipe = mgpu.kernel{
  name = "layernorm_pipe",
  grid = { workers },
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  compiler_params = approx,
  body = function(x, gamma, beta, y)
    local p = mgpu.program_id(0)
    local g, b = gamma:load():astype("f32"), beta:load():astype("f32")
    local spec = mgpu.BlockSpec{ { nil, cols }, function(s) return p + s * workers, 0 end, transforms = row_xf }
    mgpu.emit_pipeline(function(_, xs, ys) ys:store(norm_row(xs:load(), g, b)) end, {
      grid = { mgpu.cdiv(rows - p, workers) }, max_concurrent_steps = depth, in_specs = { spec }, out_specs = { spec },
    })(x, y)
  end,
}

local x = mgpu.random.normal({ rows, cols }, "bf16", nil, 1, 3)
local gamma = mgpu.random.uniform(cols, "bf16", nil, 0.5, 1.5)
local beta = mgpu.random.normal(cols, "bf16")
local y = layernorm(x, gamma, beta)
local y2 = layernorm_pipe(x, gamma, beta)
if mgpu.compile_only() then return end

local H = mgpu.host
local n = math.min(rows, 256)
local xs = H.from(x):rows(0, n)
local c = xs - xs:mean(1, true)
local ref = c / ((c * c):mean(1, true) + eps):sqrt() * H.from(gamma) + H.from(beta)
local err = math.max(H.relerr(H.from(y):rows(0, n), ref), H.relerr(H.from(y2):rows(0, n), ref))
local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
print(string.format("layernorm bf16[%d, %d] (%s): relative error %.2e over %d rows", rows, cols, mode, err, n))
assert(err <= 1e-2, "layernorm: result differs from the reference")

if not mgpu.interpreting() then
  for _, v in ipairs({ { "layernorm", function() layernorm:call_into(y, x, gamma, beta) end },
                       { "layernorm (pipeline)", function() layernorm_pipe:call_into(y2, x, gamma, beta) end } }) do
    local ms = mgpu.bench(v[2], { reps = 30 })
    print(string.format("%s: %.4f ms, %.1f GB/s", v[1], ms, 2 * x.nbytes / ms / 1e6))
  end
end
