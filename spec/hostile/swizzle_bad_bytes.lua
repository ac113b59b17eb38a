-- expect: 4: swizzle must be 16, 32, 64 or 128 bytes, got 100
-- A swizzle of 100 bytes.
local mgpu = require "mgpu"
local t = mgpu.transforms.swizzle(100)
