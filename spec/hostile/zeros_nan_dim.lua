-- expect: 4: zeros shape[2] must be an integer, got
-- A NaN dimension.
local mgpu = require "mgpu"
local x = mgpu.zeros({ 2, 0 / 0 })
