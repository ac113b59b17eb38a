-- expect: 4: zeros shape[1] must be an integer, got 4.5
-- A fractional dimension.
local mgpu = require "mgpu"
local x = mgpu.zeros({ 4.5 })
