-- expect: 6: nd_loop: unknown option 'collective_axis'
-- A misspelt nd_loop option.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    mgpu.nd_loop({ 4 }, { collective_axis = "sm" }, function(info) end)
  end }
k(mgpu.zeros({ 64, 64 }))
