-- new-cluster-16: Hopper runs clusters of up to 16 blocks (non-portable size, as JAX's tests use);
-- mgpu refuses more than 8.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), cluster = { 4, 4 }, cluster_names = { "x", "y" },
  body = function(o) o:store(mgpu.broadcast(1, { 128 }, "f32")) end }
print(pcall(k.lower, k))
