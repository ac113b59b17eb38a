-- expect: 4: full: value must be a number
-- mgpu.full with a string value.
local mgpu = require "mgpu"
local x = mgpu.full({ 4 }, "one")
