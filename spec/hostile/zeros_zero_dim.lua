-- expect: 4: zeros shape[1] must be at least 1, got 0
-- A zero dimension.
local mgpu = require "mgpu"
local x = mgpu.zeros({ 0 })
