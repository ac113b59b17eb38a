--[[
Vector addition z = x + y for any length: the last block's view runs past
the end of the arrays, and elements outside them are neither read nor
written.  Checks itself against a host reference and, on a GPU, reports
bandwidth.

  mgpu examples/add.lua [n] [dtype]     (default 2^28 on a GPU, 100003 interpreted)
]]
local mgpu = require "mgpu"
local args = { ... }

local n = tonumber(args[1]) or (mgpu.interpreting() and 100003 or 2 ^ 28)
local dtype = args[2] or "f32"
local B = 4096   -- elements per block: 128 threads x 8 vectors of 16 bytes

local add = mgpu.kernel{
  name = "add",
  grid = function(x) return { mgpu.cdiv(x.size, B) } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  body = function(x, y, z)
    local block = mgpu.ds(mgpu.program_id(0) * B, B)
    z:at(block):store(x:at(block):load() + y:at(block):load())
  end,
}

local x = mgpu.random.uniform(n, dtype, nil, -1, 1)
local y = mgpu.random.uniform(n, dtype, nil, -1, 1)
local z = add(x, y)
if mgpu.compile_only() then return end

local ref = (mgpu.host.from(x) + mgpu.host.from(y)):round(dtype)
local err = mgpu.host.relerr(z, ref)
local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
print(string.format("add %s[%d] (%s): relative error %.2e", dtype, n, mode, err))
assert(err <= 1e-6, "add: result differs from the reference")

if not mgpu.interpreting() then
  local ms = mgpu.bench(function() add:call_into(z, x, y) end, { reps = 30 })
  local bytes = 3 * n * x.nbytes / x.size
  print(string.format("add: %.4f ms, %.1f GB/s", ms, bytes / ms / 1e6))
end
