-- expect: 4: mgpu.kernel: debug must be true or a string
-- debug = 5.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 4 }), debug = 5, body = function() end }
