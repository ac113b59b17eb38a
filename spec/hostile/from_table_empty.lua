-- expect: 4: from_table: the table is empty
-- An empty table has no shape.
local mgpu = require "mgpu"
local x = mgpu.from_table({})
