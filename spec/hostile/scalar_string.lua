-- expect: 4: scalar: value must be a number, got string
-- mgpu.scalar of a string.
local mgpu = require "mgpu"
local s = mgpu.scalar("x")
