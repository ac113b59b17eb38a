-- expect: 4: zeros shape[2] must be an integer, got string
-- A string inside the shape.
local mgpu = require "mgpu"
local x = mgpu.zeros({ 4, "8" })
