-- expect: 6: kernel 'kernel': output 1 must be a f32[4] array
-- call_into with an output of the wrong dtype.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o) o:store(x:load()) end }
k:call_into(mgpu.zeros(4, "i32"), mgpu.zeros(4))
