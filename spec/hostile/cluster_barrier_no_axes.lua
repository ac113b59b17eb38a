-- expect: 4: ClusterBarrier: collective_axes is required
-- A cluster barrier without its axes.
local mgpu = require "mgpu"
local b = mgpu.ClusterBarrier{ num_arrivals = 2 }
