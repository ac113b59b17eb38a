-- expect: 6: store: the value must be a traced array or scalar, or a number, got nil
-- Storing nil (a misspelt variable).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    o:store(valeu)
  end }
k()
