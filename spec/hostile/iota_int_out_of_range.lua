-- expect: 4: iota: last element 299 is out of range (u8 holds integers from 0 to 255)
-- An iota whose last element u8 cannot hold (it once saturated at 255).
local mgpu = require "mgpu"
local a = mgpu.iota(300, "u8")
