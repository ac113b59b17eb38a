-- expect: 6: fori: carry 1 (r) starts as f32[4], ref f32[4]
-- A carried ref whose body returns another buffer.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = { mgpu.shape({ 4 }), mgpu.shape({ 4 }) },
  body = function(o, p)
    mgpu.fori(0, 4, function(i, r) return p end, o)
  end }
k()
