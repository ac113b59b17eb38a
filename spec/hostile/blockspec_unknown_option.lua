-- expect: 4: BlockSpec: unknown option 'shape'
-- A misspelt BlockSpec option.
local mgpu = require "mgpu"
local s = mgpu.BlockSpec{ shape = { 64 } }
