-- expect: 6: swizzle(128) needs a minor dimension of exactly 128 bytes
-- A 128-byte swizzle on rows of 32 bytes.
local mgpu = require "mgpu"
local T = mgpu.transforms
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  scratch_shapes = { mgpu.SMEM({ 64, 16 }, "f16", { transforms = { T.tiling{ 8, 16 }, T.swizzle(128) } }) },
  body = function(o, s) end }
k()
