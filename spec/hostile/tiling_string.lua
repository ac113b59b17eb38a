-- expect: 4: tiling must be a table of integers
-- A string as the tile.
local mgpu = require "mgpu"
local t = mgpu.transforms.tiling("8x64")
