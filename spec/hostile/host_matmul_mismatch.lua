-- expect: 6: needs (M, K) and (K, N) arrays
-- A host matmul of mismatched shapes.
local mgpu = require "mgpu"
local a = mgpu.host.zeros({ 2, 3 })
local b = mgpu.host.zeros({ 4, 5 })
local c = mgpu.host.matmul(a, b)
