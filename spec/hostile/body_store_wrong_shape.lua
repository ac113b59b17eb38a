-- expect: 6: store: shapes &gmem f32[8] and f32[4] do not match
-- Storing a 4-element array into an 8-element ref.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 8 }),
  body = function(x, o)
    o:store(x:load())
  end }
k(mgpu.zeros(4))
