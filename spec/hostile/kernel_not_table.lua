-- expect: 4: mgpu.kernel expects a table of options
-- mgpu.kernel given a function instead of its options.
local mgpu = require "mgpu"
local k = mgpu.kernel(function(o) end)
