-- expect: 4: ClusterBarrier: collective_axes is required
-- mgpu.ClusterBarrier() with no options.
local mgpu = require "mgpu"
local b = mgpu.ClusterBarrier()
