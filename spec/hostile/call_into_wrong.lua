-- expect: 6: kernel 'kernel': call_into needs 1 output array(s)
-- call_into with a number for the outputs.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o) o:store(x:load()) end }
k:call_into(5, mgpu.zeros(4))
