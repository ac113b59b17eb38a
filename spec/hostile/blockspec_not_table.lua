-- expect: 4: BlockSpec expects a table of options
-- mgpu.BlockSpec with a number.
local mgpu = require "mgpu"
local s = mgpu.BlockSpec(64)
