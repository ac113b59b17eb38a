-- expect: 6: num_programs: axis -1 is out of range for a grid of rank 1
-- num_programs(-1).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    local n = mgpu.num_programs(-1)
  end }
k()
