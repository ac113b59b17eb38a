-- expect: 6: wait_smem_to_gmem n must be an integer, got string
-- wait_smem_to_gmem with a string count.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  body = function(o)
    mgpu.wait_smem_to_gmem("all")
  end }
k()
