-- expect: 4: BlockSpec: block_shape[1] must be at least 1, got -64
-- A negative block size.
local mgpu = require "mgpu"
local s = mgpu.BlockSpec{ { -64, 64 }, function(i) return i, 0 end }
