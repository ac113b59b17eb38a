-- expect: 4: stack overflow
-- Unbounded recursion inside a kernel body.
local mgpu = require "mgpu"
local function forever(n) return forever(n + 1) + 1 end
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o) forever(1) end }
k()
