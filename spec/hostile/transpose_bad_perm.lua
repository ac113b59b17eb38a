-- expect: 5: SMEM bf16[64,64] with transforms transpose(0,0): transpose: the axes are not a permutation of 0..1
-- A transpose transform that is not a permutation.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { mgpu.transforms.transpose{ 0, 0 } } }) },
  body = function(o, s) end }
k()
