-- expect: 4: num_threads (warpgroups per block) must be between 1 and 8, got 9
-- Nine warpgroups per block.
local mgpu = require "mgpu"
local k = mgpu.kernel{ num_threads = 9, out_shape = mgpu.shape({ 4 }), body = function() end }
