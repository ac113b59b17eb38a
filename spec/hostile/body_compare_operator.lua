-- expect: 6: use mgpu.lt(a, b) or a:lt(b)
-- Comparing traced arrays with < (Lua forces a boolean): use mgpu.lt.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(x, o)
    if x:load() < o:load() then o:store(x:load()) end
  end }
k(mgpu.zeros(4))
