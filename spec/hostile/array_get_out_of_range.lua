-- expect: 5: index 5 is out of range 1..4
-- Reading element 5 of a 4-element array (indices are 1-based on the host).
local mgpu = require "mgpu"
local x = mgpu.zeros({ 4 })
print(x:get(5))
