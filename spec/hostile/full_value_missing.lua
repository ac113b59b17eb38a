-- expect: 4: full: value must be a number
-- mgpu.full without its value.
local mgpu = require "mgpu"
local x = mgpu.full({ 4 })
