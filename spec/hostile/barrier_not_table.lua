-- expect: 4: Barrier expects a table of options
-- mgpu.Barrier(2) instead of mgpu.Barrier{ num_arrivals = 2 }.
local mgpu = require "mgpu"
local b = mgpu.Barrier(2)
