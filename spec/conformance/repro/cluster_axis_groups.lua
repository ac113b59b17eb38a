-- new-cluster-axis-groups: ClusterBarrier{ collective_axes = { { "x", "z" }, "y" } } (an entry
-- naming several axes, as Pallas allows); mgpu prints "'table: 0x...' is not a cluster axis".
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), cluster = { 2, 2, 1 }, cluster_names = { "x", "y", "z" },
  scratch_shapes = { mgpu.ClusterBarrier{ collective_axes = { { "x", "z" }, "y" } } },
  body = function(o, bar)
    mgpu.barrier_arrive(bar)
    mgpu.barrier_wait(bar)
  end }
print(pcall(k.lower, k))
