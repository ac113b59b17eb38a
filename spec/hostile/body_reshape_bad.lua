-- expect: 6: reshape: f32[4] has 4 elements, the new shape 3
-- Reshaping a 4-element array to 3 elements.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    local y = x:load():reshape({ 3 })
  end }
k(mgpu.zeros(4))
