-- expect: 4: mgpu.configure expects a table of options, got string
-- mgpu.configure with a string.
local mgpu = require "mgpu"
mgpu.configure("fast")
