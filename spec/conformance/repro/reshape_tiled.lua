-- new-reshape-tiled: Pallas reshapes a register array in the WGMMA layout ((384, 8) to
-- (2, 3, 64, 8)); mgpu: "only arrays in the strided layout can be reshaped".
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 2, 3, 64, 8 }, "f32"), body = function(x, o)
  o:store(x:load{ layout = mgpu.Layout.WGMMA }:reshape({ 2, 3, 64, 8 }))
end }
print(k(mgpu.zeros({ 384, 8 }, "f32")):get(1, 1, 1, 1))
