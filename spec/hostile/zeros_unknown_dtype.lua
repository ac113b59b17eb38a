-- expect: 4: zeros: unknown dtype f9
-- An unknown dtype name.
local mgpu = require "mgpu"
local x = mgpu.zeros(4, "f9")
