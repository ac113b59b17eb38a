-- expect: 4: host.zeros: shape[1] must be at least 1, got -3
-- mgpu.host.zeros with a negative shape.
local mgpu = require "mgpu"
local h = mgpu.host.zeros({ -3 })
