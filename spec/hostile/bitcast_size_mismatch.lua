-- expect: 6: bitcast from f32 to f16: the widths differ
-- Bitcasting f32 to f16 (different sizes).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(o:load():bitcast("f16"):bitcast("f32"))
  end }
k()
