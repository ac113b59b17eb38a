-- expect: 4: zeros shape[2] must be at least 1, got -1
-- A negative dimension.
local mgpu = require "mgpu"
local x = mgpu.zeros({ 4, -1 })
