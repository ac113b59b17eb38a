-- expect: 9: a traced value from another kernel (or from a finished trace) cannot be used here
-- A traced value kept from one kernel's trace and used in another kernel.
local mgpu = require "mgpu"
local kept
local k1 = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }), body = function(x, o) kept = x:load(); o:store(kept) end }
k1(mgpu.zeros(4))
local k2 = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(kept)
  end }
k2()
