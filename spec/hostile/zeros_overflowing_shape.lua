-- expect: 4: empty: cannot allocate
-- A product of dimensions past 2^64 must not wrap around to a small size.
local mgpu = require "mgpu"
local x = mgpu.empty({ 2 ^ 40, 2 ^ 40, 2 ^ 40 }, "f32")
