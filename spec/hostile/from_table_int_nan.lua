-- expect: 5: from_table: element t[3] is nan, not an integer (u8 holds integers from 0 to 255)
-- NaN into an integer dtype names its element (it once became 0).
local mgpu = require "mgpu"
local nan = 0 / 0
local a = mgpu.from_table({ 1, 2, nan }, "u8")
