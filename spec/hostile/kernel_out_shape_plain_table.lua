-- expect: 6: out_shape[1] must be made with mgpu.shape(shape, dtype)
-- A plain table of dimensions as out_shape.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = { 4, 4 },
  body = function(o) end }
k()
