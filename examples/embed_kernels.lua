--[[
Kernels for examples/embed.c: a C program runs this file with
mgpu_script_run_file and fetches `scale_add` with mgpu_script_kernel.

scale_add(a, x, y) = a * x + y for f32 vectors of any length, a a scalar.
]]
local mgpu = require "mgpu"

local B = 1024
scale_add = mgpu.kernel{
  name = "scale_add",
  grid = function(a, x) return { mgpu.cdiv(x.size, B) } end,
  out_shape = function(a, x) return mgpu.shape(x.shape, x.dtype) end,
  body = function(a, x, y, out)
    local block = mgpu.ds(mgpu.program_id(0) * B, B)
    out:at(block):store(a * x:at(block):load() + y:at(block):load())
  end,
}
