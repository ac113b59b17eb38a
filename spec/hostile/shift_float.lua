-- expect: 6: shift_right: f32 is not an integer dtype
-- A right shift of a float array.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(o:load():shift_right_logical(1))
  end }
k()
