-- expect: 4: mgpu.kernel: name must be an identifier
-- A kernel name with a space (it becomes a PTX symbol).
local mgpu = require "mgpu"
local k = mgpu.kernel{ name = "my kernel", out_shape = mgpu.shape({ 4 }), body = function() end }
