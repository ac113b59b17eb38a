-- expect: 6: wait_smem_to_gmem: n must be between 0 and 63
-- wait_smem_to_gmem with a negative count.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  body = function(o)
    mgpu.wait_smem_to_gmem(-1)
  end }
k()
