-- expect: 4: zeros shape[1] must be an integer, got
-- An infinite dimension.
local mgpu = require "mgpu"
local x = mgpu.zeros({ math.huge })
