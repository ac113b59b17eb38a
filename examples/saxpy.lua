--[[
SAXPY: z = a * x + y, with the scalar a passed as a rank-0 array so that
changing it needs no retrace.

  mgpu examples/saxpy.lua [n] [a]       (default 2^28 on a GPU, 100003 interpreted)
]]
local mgpu = require "mgpu"
local args = { ... }

local n = tonumber(args[1]) or (mgpu.interpreting() and 100003 or 2 ^ 28)
local alpha = tonumber(args[2]) or 2.5
local B = 4096

local saxpy = mgpu.kernel{
  name = "saxpy",
  grid = function(a, x) return { mgpu.cdiv(x.size, B) } end,
  out_shape = function(a, x) return mgpu.shape(x.shape, "f32") end,
  body = function(a, x, y, z)
    local block = mgpu.ds(mgpu.program_id(0) * B, B)
    z:at(block):store(a:load() * x:at(block):load() + y:at(block):load())
  end,
}

local a = mgpu.full({}, alpha, "f32")
local x = mgpu.random.uniform(n, "f32", nil, -1, 1)
local y = mgpu.random.uniform(n, "f32", nil, -1, 1)
local z = saxpy(a, x, y)
if mgpu.compile_only() then return end

local ref = mgpu.host.from(x) * alpha + mgpu.host.from(y)
local err = mgpu.host.relerr(z, ref)
local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
print(string.format("saxpy f32[%d], a = %g (%s): relative error %.2e", n, alpha, mode, err))
assert(err <= 1e-6, "saxpy: result differs from the reference")

if not mgpu.interpreting() then
  local ms = mgpu.bench(function() saxpy:call_into(z, a, x, y) end, { reps = 30 })
  print(string.format("saxpy: %.4f ms, %.1f GB/s", ms, 3 * n * 4 / ms / 1e6))
end
