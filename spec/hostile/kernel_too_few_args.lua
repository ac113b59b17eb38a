-- expect: 6: kernel 'kernel': the body takes 3 arguments (x, y, z) but gets 2 refs (1 input, 1 output)
-- A body with more parameters than the call gives refs (z would be nil).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, y, z) z:store(x:load() + y:load()) end }
k(mgpu.zeros(4))
