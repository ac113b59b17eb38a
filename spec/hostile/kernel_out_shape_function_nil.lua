-- expect: 6: out_shape must be mgpu.shape(...) or a table of them
-- An out_shape function that returns nothing.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = function(x) end,
  body = function(x, o) end }
k(mgpu.zeros(4))
