-- expect: 4: autotune: configs must be a non-empty list of configs, got an empty table
-- autotune over no configs.
local mgpu = require "mgpu"
local k = mgpu.autotune{ kernel_factory = function(cfg) end, configs = {}, key = "k" }
