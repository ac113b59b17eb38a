-- expect: 6: while_loop: cond_fn returned a Lua boolean
-- A while_loop condition decided at trace time.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.while_loop(function(i) return true end, function(i) return i + 1 end, 0)
  end }
k()
