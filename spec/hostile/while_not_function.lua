-- expect: 6: while_loop: the first argument (cond_fn) must be a function
-- mgpu.while_loop with a boolean condition.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.while_loop(true, function(i) return i + 1 end, 0)
  end }
k()
