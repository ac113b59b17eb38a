-- expect: 6: lower: call it as k:lower(...)
-- k.lower instead of k:lower: the kernel is not passed as self.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o) o:store(x:load()) end }
local r = k.lower(mgpu.zeros(4))
