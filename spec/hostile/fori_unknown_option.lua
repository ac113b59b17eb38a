-- expect: 6: fori: unknown option 'unrol'
-- A misspelt loop option.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.fori(0, 4, function(i) end, { unrol = 2 })
  end }
k()
