-- expect: 4: array: expected a table or an array, got number
-- mgpu.array of a number.
local mgpu = require "mgpu"
local x = mgpu.array(5)
