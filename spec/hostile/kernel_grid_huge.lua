-- expect: 6: grid[1] = 10000000000 is more than 2^31-1 blocks
-- 1e10 blocks along one axis.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1e10 }, out_shape = mgpu.shape({ 4 }),
  body = function(o) end }
k()
