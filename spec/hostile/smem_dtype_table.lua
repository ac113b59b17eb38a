-- expect: 4: SMEM: unknown dtype
-- A table as the dtype of SMEM.
local mgpu = require "mgpu"
local s = mgpu.SMEM({ 64 }, { "f32" })
