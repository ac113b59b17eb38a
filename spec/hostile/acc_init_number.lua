-- expect: 6: ACC.init: the initial value must be a 2-D register array (M, N), got number
-- ACC.init of a number.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.run_scoped(function(acc) end, mgpu.ACC.init(0))
  end }
k()
