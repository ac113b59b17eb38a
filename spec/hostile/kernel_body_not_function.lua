-- expect: 4: mgpu.kernel: body must be a function
-- A number as the body.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }), body = 42 }
