-- expect: 4: random.uniform: dtype must be numeric, got pred
-- Random numbers of dtype pred.
local mgpu = require "mgpu"
local x = mgpu.random.uniform({ 4 }, "pred")
