-- expect: 4: tiling[1] must be at least 1, got -8
-- A negative tile size.
local mgpu = require "mgpu"
local t = mgpu.transforms.tiling{ -8, 64 }
