-- expect: 5: get: expected 1 or 2 indices, got 3
-- Three indices for a 2-D array.
local mgpu = require "mgpu"
local x = mgpu.zeros({ 2, 2 })
print(x:get(1, 1, 1))
