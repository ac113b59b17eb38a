-- expect: 6: kernel 'kernel': argument 1 must be an mgpu array or a number, got string
-- k:lower with a string.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o) o:store(x:load()) end }
local r = k:lower("x")
