-- expect: 4: BlockSpec: index_map must be a function
-- A table as the index map.
local mgpu = require "mgpu"
local s = mgpu.BlockSpec{ { 64 }, { 0 } }
