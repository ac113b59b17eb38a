-- expect: 4: from_table: ragged nested table: t[2] is a table of 1 but t[1] has 2 elements
-- Rows of different lengths.
local mgpu = require "mgpu"
local x = mgpu.from_table({ { 1, 2 }, { 3 } })
