-- expect: 4: Replicated count must be an integer, got string
-- mgpu.Replicated of a string.
local mgpu = require "mgpu"
local r = mgpu.Replicated("all")
