-- expect: 6: ds start must be an integer or a traced scalar, got string
-- mgpu.ds with a string start.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    o:store(x:at(mgpu.ds("0", 4)):load())
  end }
k(mgpu.zeros(8))
