-- expect: 6: kernel 'kernel': argument 1 must be an mgpu array or a number, got nil
-- nil as the first of two arguments.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, y, o) end }
k(nil, mgpu.zeros(4))
