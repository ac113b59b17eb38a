-- expect: 4: num_threads must be an integer, got 1.5
-- A fractional warpgroup count.
local mgpu = require "mgpu"
local k = mgpu.kernel{ num_threads = 1.5, out_shape = mgpu.shape({ 4 }), body = function() end }
