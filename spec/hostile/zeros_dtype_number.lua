-- expect: 4: zeros: unknown dtype 32
-- A number where the dtype goes.
local mgpu = require "mgpu"
local x = mgpu.zeros(4, 32)
