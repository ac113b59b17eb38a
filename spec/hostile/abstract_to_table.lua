-- expect: 5: no data
-- Reading an abstract array, which has no data.
local mgpu = require "mgpu"
local x = mgpu.abstract({ 4 }, "f32")
local t = x:to_table()
