local mgpu = require "mgpu"
local K = dofile("spec/faults/kernels.lua")
local x = mgpu.iota(256, "f32")
local y = K.oops(x)
print(y:get(3))
