local mgpu = require "mgpu"
local K = dofile("spec/faults/kernels.lua")
local y = K.spin()
print(y:get(1))
