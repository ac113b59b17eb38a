-- expect: 4: zeros shape must be a table of dimensions, got string
-- mgpu.zeros with a string for its shape.
local mgpu = require "mgpu"
local x = mgpu.zeros("big")
