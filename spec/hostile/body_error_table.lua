-- expect: 6: kernel body raised a non-string error: { code = 7 }
-- error({ code = 7 }) inside a kernel body.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    error({ code = 7 })
  end }
k()
