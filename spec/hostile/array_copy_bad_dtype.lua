-- expect: 5: unknown dtype q
-- Copying to an unknown dtype.
local mgpu = require "mgpu"
local x = mgpu.zeros({ 4 })
local y = x:copy("q")
