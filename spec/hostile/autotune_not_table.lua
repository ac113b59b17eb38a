-- expect: 4: autotune: expected a table of options, got function
-- autotune given a factory instead of its options.
local mgpu = require "mgpu"
local k = mgpu.autotune(function(cfg) end)
