-- expect: 4: from_table: element t[2] is a string ("two"), not a number
-- A string among the numbers.
local mgpu = require "mgpu"
local x = mgpu.from_table({ 1, "two", 3 })
