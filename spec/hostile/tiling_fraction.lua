-- expect: 4: tiling[2] must be an integer, got 0.5
-- A fractional tile size.
local mgpu = require "mgpu"
local t = mgpu.transforms.tiling{ 8, 0.5 }
