-- expect: 4: mgpu.kernel: out_shape is required
-- A kernel without out_shape.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, body = function() end }
