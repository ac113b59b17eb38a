-- expect: 6: unknown axis name 'rows'
-- axis_index of a name the kernel does not have.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    local i = mgpu.axis_index("rows")
  end }
k()
