-- expect: 4: shape: unknown dtype int
-- mgpu.shape with an unknown dtype.
local mgpu = require "mgpu"
local s = mgpu.shape({ 4 }, "int")
