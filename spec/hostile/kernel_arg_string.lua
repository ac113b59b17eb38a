-- expect: 6: kernel 'kernel': argument 1 must be an mgpu array or a number, got string
-- A string as a kernel argument.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o) end }
k("data")
