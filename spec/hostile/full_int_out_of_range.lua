-- expect: 5: full: value 10000000000 is out of range (i32 holds integers from -2147483648 to 2147483647)
-- A constant that i32 cannot hold: an error naming it (it once saturated to
-- 2147483647 silently).
local mgpu = require "mgpu"
local a = mgpu.full({ 2, 2 }, 1e10, "i32")
