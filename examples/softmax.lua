--[[
Row softmax of a (rows, cols) bf16 matrix: y = exp(x - max) / sum(exp(x - max)),
computed in f32.  One warpgroup per row: each thread holds cols/128
elements, and the row's max and sum combine inside threads, across lanes
with shuffles and across the four warps through SMEM.

  mgpu examples/softmax.lua [rows] [cols] [chunk=1] [depth=1] [out=GMEM|SMEM]
  (default 32768 x 4096 on a GPU, 64 x 4096 interpreted)

The same softmax also runs through emit_pipeline (rows brought into SMEM by TMA); both are
checked, and timed on a GPU.
]]
local mgpu = require "mgpu"
local args, opt = mgpu.script_args(...)

local rows = tonumber(args[1]) or (mgpu.interpreting() and 64 or 32768)
local cols = tonumber(args[2]) or 4096
local approx = mgpu.CompilerParams{ approx_math = true }   -- fast exp: bf16 results cannot tell

local function softmax_row(x)
  local row = x:astype("f32")
  local p = (row - row:max()):exp()
  return (p / p:sum()):astype("bf16")
end

local softmax = mgpu.kernel{
  name = "softmax",
  grid = function(x) return { x.shape[1] } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  compiler_params = approx,
  body = function(x, y)
    local i = mgpu.program_id(0)
    y:at(i):store(softmax_row(x:at(i):load()))
  end,
}

-- The same through emit_pipeline, as Pallas writes it: one block per `chunk` consecutive rows,
-- each row brought into SMEM by TMA (`depth` copies in flight within a block; the other blocks
-- resident on the SM overlap theirs), its result stored from registers (out=GMEM) or staged in
-- SMEM and stored by TMA (out=SMEM).  A last partial block reads zero rows past the end and its
-- stores are clipped.  One row per block is the default: the fastest measured on the H100.
local chunk, depth = opt.chunk or 1, opt.depth or 1
local out_space = opt.out or "GMEM"
assert(out_space == "GMEM" or out_space == "SMEM", "softmax: out= must be GMEM or SMEM")
local row_xf = { mgpu.transforms.tiling{ 256 } }   -- a TMA box spans at most 256 elements
local softmax_pipe = mgpu.kernel{
  name = "softmax_pipe",
  grid = { mgpu.cdiv(rows, chunk) },
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  compiler_params = approx,
  body = function(x, y)
    local b = mgpu.program_id(0)
    local function row(s) return b * chunk + s, 0 end
    local in_spec = mgpu.BlockSpec{ { nil, cols }, row, transforms = row_xf }
    local out_spec = out_space == "SMEM" and in_spec or mgpu.BlockSpec{ { nil, cols }, row, memory_space = mgpu.GMEM }
    mgpu.emit_pipeline(function(_, xs, ys) ys:store(softmax_row(xs:load())) end, {
      grid = { chunk }, max_concurrent_steps = depth, in_specs = { in_spec }, out_specs = { out_spec },
    })(x, y)
  end,
}

local x = mgpu.random.normal({ rows, cols }, "bf16", nil, 0, 2)
local y = softmax(x)
local y2 = softmax_pipe(x)
if mgpu.compile_only() then return end

-- reference on a sample of rows (all of them when small)
local H = mgpu.host
local n = math.min(rows, 256)
local xs = H.from(x):rows(0, n)
local e = (xs - xs:amax(1, true)):exp()
local ref = e / e:sum(1, true)
local err = math.max(H.relerr(H.from(y):rows(0, n), ref), H.relerr(H.from(y2):rows(0, n), ref))
local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
print(string.format("softmax bf16[%d, %d] (%s): relative error %.2e over %d rows", rows, cols, mode, err, n))
assert(err <= 1e-2, "softmax: result differs from the reference")

if not mgpu.interpreting() then
  for _, v in ipairs({ { "softmax", function() softmax:call_into(y, x) end },
                       { "softmax (pipeline)", function() softmax_pipe:call_into(y2, x) end } }) do
    local ms = mgpu.bench(v[2], { reps = 30 })
    print(string.format("%s: %.4f ms, %.1f GB/s", v[1], ms, 2 * x.nbytes / ms / 1e6))
  end
end
