-- expect: 6: while_loop: the condition must return one pred scalar (a comparison result), got 1 value: pred[4]
-- A while_loop condition that is an array.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.while_loop(function(i) return mgpu.broadcast(true, { 4 }) end, function(i) return i + 1 end, 0)
  end }
k()
