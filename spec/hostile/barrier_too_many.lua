-- expect: 4: Barrier: num_barriers must be between 1 and 32, got 1000
-- An array of 1000 barriers.
local mgpu = require "mgpu"
local b = mgpu.Barrier{ num_barriers = 1000 }
