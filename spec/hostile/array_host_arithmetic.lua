-- expect: 5: arithmetic on mgpu arrays
-- Arithmetic on host arrays outside a kernel.
local mgpu = require "mgpu"
local x = mgpu.zeros({ 4 })
local y = x + 1
