-- expect: 4: mgpu.kernel: unknown option 'grid_size'
-- A misspelt option.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid_size = { 1 }, out_shape = mgpu.shape({ 4 }), body = function() end }
