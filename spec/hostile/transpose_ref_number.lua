-- expect: 6: transpose_ref: first argument must be a ref
-- transpose_ref of a number.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.transpose_ref(5, { 1, 0 })
  end }
k()
