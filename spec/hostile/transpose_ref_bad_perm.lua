-- expect: 6: transpose_ref: the permutation has 2 axes but the ref has rank 1
-- transpose_ref of a 1-D ref with a 2-D permutation.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.transpose_ref(o, { 1, 0 })
  end }
k()
