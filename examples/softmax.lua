--[[
Row softmax of a (rows, cols) bf16 matrix: y = exp(x - max) / sum(exp(x - max)),
computed in f32.  One warpgroup per row: each thread holds cols/128
elements, and the row's max and sum combine inside threads, across lanes
with shuffles and across the four warps through SMEM.

  mgpu examples/softmax.lua [rows] [cols]     (default 32768 x 4096 on a GPU, 64 x 4096 interpreted)
]]
local mgpu = require "mgpu"
local args = { ... }

local rows = tonumber(args[1]) or (mgpu.interpreting() and 64 or 32768)
local cols = tonumber(args[2]) or 4096

local softmax = mgpu.kernel{
  name = "softmax",
  grid = function(x) return { x.shape[1] } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  compiler_params = mgpu.CompilerParams{ approx_math = true },   -- fast exp: bf16 results cannot tell
  body = function(x, y)
    local i = mgpu.program_id(0)
    local row = x:at(i):load():astype("f32")
    local p = (row - row:max()):exp()
    y:at(i):store((p / p:sum()):astype("bf16"))
  end,
}

local x = mgpu.random.normal({ rows, cols }, "bf16", nil, 0, 2)
local y = softmax(x)
if mgpu.compile_only() then return end

-- reference on a sample of rows (all of them when small)
local H = mgpu.host
local n = math.min(rows, 256)
local xs = H.from(x):rows(0, n)
local e = (xs - xs:amax(1, true)):exp()
local ref = e / e:sum(1, true)
local err = H.relerr(H.from(y):rows(0, n), ref)
local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
print(string.format("softmax bf16[%d, %d] (%s): relative error %.2e over %d rows", rows, cols, mode, err, n))
assert(err <= 1e-2, "softmax: result differs from the reference")

if not mgpu.interpreting() then
  local ms = mgpu.bench(function() softmax:call_into(y, x) end, { reps = 30 })
  print(string.format("softmax: %.4f ms, %.1f GB/s", ms, 2 * x.nbytes / ms / 1e6))
end
