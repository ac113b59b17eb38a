-- new-ref-reshape-tiled: Pallas reshapes an SMEM ref tiled (8, 1, 64) from (128, 2, 64) to
-- (128, 128) (the unit tile dim merges); mgpu: "only the first tiled dim may be merged or split".
local mgpu = require "mgpu"
local T = mgpu.transforms
local k = mgpu.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f16"),
  scratch_shapes = { mgpu.SMEM({ 128, 2, 64 }, "f16", { transforms = { T.tiling{ 8, 1, 64 }, T.swizzle(128) } }) },
  body = function(o, s) o:store(s:reshape({ 128, 128 }):load()) end }
print(k:lower().ir ~= nil)
