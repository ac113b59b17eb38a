-- expect: 4: from_table: element t[1] is -inf, out of range (i64 holds integers from -2^63 to 2^63 - 1)
-- -inf into i64 names its element (it once saturated to -2^63).
local mgpu = require "mgpu"
local a = mgpu.from_table({ -math.huge, 1e300 }, "i64")
