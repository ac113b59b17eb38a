-- new-strided-broadcast: broadcast_in_dim of a WG_STRIDED (128,) vector to (64, 128) along a new
-- major dim fails with "internal: broadcast operand layout does not match the result" (Lane
-- semantics; under Warpgroup semantics a layout conflict).
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 64, 128 }, "f32"),
  compiler_params = mgpu.CompilerParams{ lowering_semantics = "Lane" },
  body = function(x, o) o:store(x:load{ layout = mgpu.Layout.WG_STRIDED(1) }:broadcast_in_dim({ 64, 128 }, { 1 })) end }
print(pcall(k.lower, k, mgpu.abstract({ 128 }, "f32")))
