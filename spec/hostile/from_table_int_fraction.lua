-- expect: 4: from_table: element t[2][1] is 2.7, not an integer (i16 holds integers from -32768 to 32767)
-- A fraction into an integer dtype names its element (it once truncated to 2).
local mgpu = require "mgpu"
local a = mgpu.from_table({ { 1, 2 }, { 2.7, 4 } }, "i16")
