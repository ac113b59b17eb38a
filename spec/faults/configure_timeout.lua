local mgpu = require "mgpu"
local K = dofile("spec/faults/kernels.lua")
mgpu.configure{ timeout_ms = 150 }
local y = K.oops(mgpu.iota(256, "f32"))
print(y:get(3))
