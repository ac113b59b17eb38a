-- expect: 6: unknown axis name '0'
-- axis_size given a number.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    local n = mgpu.axis_size(0)
  end }
k()
