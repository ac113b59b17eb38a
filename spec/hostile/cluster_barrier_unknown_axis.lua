-- expect: 5: ClusterBarrier: 'z' is not a cluster axis (cluster_names: x)
-- A cluster barrier along an axis the kernel does not have.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 2 }, cluster = { 2 }, cluster_names = { "x" }, out_shape = mgpu.shape({ 4 }),
  scratch_shapes = { mgpu.ClusterBarrier{ collective_axes = "z" } },
  body = function(o, b) end }
k()
