-- expect: 4: BlockSpec block_shape[2] must be an integer, got 0.5
-- A fractional block size.
local mgpu = require "mgpu"
local s = mgpu.BlockSpec{ { 64, 0.5 }, function(i) return i, 0 end }
