-- expect: 4: Element size must be at least 1, got 0
-- mgpu.Element(0).
local mgpu = require "mgpu"
local e = mgpu.Element(0)
