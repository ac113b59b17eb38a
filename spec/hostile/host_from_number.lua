-- expect: 4: host.from: expected an mgpu array, got number
-- mgpu.host.from of a number.
local mgpu = require "mgpu"
local h = mgpu.host.from(5)
