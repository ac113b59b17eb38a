-- expect: 6: fori: hi must be an integer or a traced scalar, got string
-- mgpu.fori with a string upper bound.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, "4", function(i) end)
  end }
k()
