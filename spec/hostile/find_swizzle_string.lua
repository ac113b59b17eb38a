-- expect: 4: find_swizzle bits must be an integer, got string
-- find_swizzle of a string.
local mgpu = require "mgpu"
local s = mgpu.find_swizzle("1024")
