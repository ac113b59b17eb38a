-- expect: 4: autotune k: no config works (2 tried)
-- autotune where every config's factory raises.
local mgpu = require "mgpu"
local k = mgpu.autotune{ kernel_factory = function(cfg) error({ cfg = cfg }) end, configs = { 1, 2 }, key = "k",
  args = { mgpu.zeros(4) }, timer = function() return 1 end, cache_dir = false, log = function() end }
