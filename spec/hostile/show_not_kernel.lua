-- expect: 4: show: expected an mgpu.kernel, got number
-- mgpu.show of a number.
local mgpu = require "mgpu"
mgpu.show(5)
