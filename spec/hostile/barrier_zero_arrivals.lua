-- expect: 4: Barrier: num_arrivals must be at least 1, got 0
-- A barrier that no arrival can complete.
local mgpu = require "mgpu"
local b = mgpu.Barrier{ num_arrivals = 0 }
