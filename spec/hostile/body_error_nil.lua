-- expect: 6: kernel body raised a non-string error: nil
-- error() with no value inside a kernel body.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    error()
  end }
k()
