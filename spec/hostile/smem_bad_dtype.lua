-- expect: 4: SMEM: unknown dtype float
-- SMEM of an unknown dtype.
local mgpu = require "mgpu"
local s = mgpu.SMEM({ 64 }, "float")
