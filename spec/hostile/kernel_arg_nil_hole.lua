-- expect: 6: kernel 'kernel': argument 1 of 2 is nil (the kernel takes 2 inputs)
-- nil as the first of two arguments.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, y, o) end }
k(nil, mgpu.zeros(4))
