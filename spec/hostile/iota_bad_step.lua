-- expect: 4: iota: step must be a finite number, got string
-- mgpu.iota with a string step.
local mgpu = require "mgpu"
local x = mgpu.iota({ 4 }, "f32", 0, "one")
