-- new-implicit-broadcast: jnp broadcasting of size-1 dims: (1, 128) + (4, 128), and
-- broadcast_in_dim of a (1, 128) operand to (2, 4, 128); mgpu refuses both.
local mgpu = require "mgpu"
local L = mgpu.Layout
local k1 = mgpu.kernel{ out_shape = mgpu.shape({ 4, 128 }, "f32"), body = function(x, y, o)
  o:store(x:load{ layout = L.WG_STRIDED(1) }:reshape({ 1, 128 }) + y:load{ layout = L.WG_STRIDED(1) })
end }
print(pcall(k1.lower, k1, mgpu.abstract({ 128 }, "f32"), mgpu.abstract({ 4, 128 }, "f32")))
local k2 = mgpu.kernel{ out_shape = mgpu.shape({ 2, 4, 128 }, "f32"), body = function(x, o)
  o:store(x:load{ layout = L.WG_STRIDED(1) }:broadcast_in_dim({ 2, 4, 128 }, { 1, 2 }))
end }
print(pcall(k2.lower, k2, mgpu.abstract({ 1, 128 }, "f32")))
