-- expect: 6: kernel 'kernel': argument 1 must be an mgpu array or a number, got a traced value
-- A kernel whose body calls the kernel being traced.
local mgpu = require "mgpu"
local k
k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o) k(x) end }
k(mgpu.zeros(4))
