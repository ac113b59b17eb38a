-- expect: 6: when: the condition must be a traced comparison or a Lua boolean, got string
-- mgpu.when with a string as its condition.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.when("yes", function() end)
  end }
k()
