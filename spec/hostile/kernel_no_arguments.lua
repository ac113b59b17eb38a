-- expect: 4: mgpu.kernel expects a table of options
-- mgpu.kernel with nothing.
local mgpu = require "mgpu"
local k = mgpu.kernel()
