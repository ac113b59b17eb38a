-- expect: 4: random.normal: seed must be an integer, got string
-- mgpu.random.normal with a string seed.
local mgpu = require "mgpu"
local x = mgpu.random.normal({ 4 }, "f32", "seed")
