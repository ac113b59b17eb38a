-- expect: 4: random.uniform: lo must be a finite number, got string
-- A string for the lower bound of uniform.
local mgpu = require "mgpu"
local x = mgpu.random.uniform({ 4 }, "f32", 1, "low", 2)
