--[[
Tutorial 1: a first elementwise kernel (docs/tutorial/01-elementwise.md).

y = a * x + b over a vector of any length.  Each block of 128 threads (one
warpgroup) handles B consecutive elements.

  mgpu docs/examples/01_elementwise.lua [n]
]]
local mgpu = require "mgpu"

local n = tonumber((...)) or 10000
local B = 1024                                -- elements per block

local axpb = mgpu.kernel{
  name = "axpb",
  -- one block per B elements; grid and out_shape see the call's arguments
  grid = function(x, a, b) return { mgpu.cdiv(x.size, B) } end,
  out_shape = function(x, a, b) return mgpu.shape(x.shape, x.dtype) end,
  -- the body gets refs: the inputs (x, and the numbers a and b as traced
  -- scalars), then the output y
  body = function(x, a, b, y)
    local block = mgpu.ds(mgpu.program_id(0) * B, B)   -- elements [i*B, i*B + B)
    local v = x:at(block):load()                       -- GMEM -> registers
    y:at(block):store(a * v + b)                       -- registers -> GMEM
  end,
}

local x = mgpu.random.normal(n, "f32")
-- Numbers become traced scalars: i32 when integer-valued (as -1 and -1.0
-- are), else f32.  mgpu.scalar(value, dtype) says which.
local y = axpb(x, 2.5, mgpu.scalar(-1, "f32"))
if mgpu.compile_only() then return end     -- mgpu --emit-ptx: nothing ran

-- check against a float64 reference on the host
local ref = mgpu.host.from(x) * 2.5 - 1.0
local err = mgpu.host.relerr(y, ref)
print(string.format("axpb f32[%d]: relative error %.2e", n, err))
assert(err < 1e-6, "axpb: wrong result")
