-- new-wg-layout_cast: under Warpgroup semantics layout_cast from WGMMA to WGMMA_TRANSPOSED is a
-- conflict, where Pallas converts (under Lane semantics mgpu converts too).
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f32"), body = function(x, o)
  mgpu.transpose_ref(o, { 1, 0 }):store(mgpu.layout_cast(x:load{ layout = mgpu.Layout.WGMMA }, mgpu.Layout.WGMMA_TRANSPOSED))
end }
print(pcall(k.lower, k, mgpu.abstract({ 128, 128 }, "f32")))
