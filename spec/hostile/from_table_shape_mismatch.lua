-- expect: 4: from_table: 3 values do not fill shape [2,2]
-- Three values for a 2x2 shape.
local mgpu = require "mgpu"
local x = mgpu.from_table({ 1, 2, 3 }, "f32", { 2, 2 })
