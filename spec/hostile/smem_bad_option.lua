-- expect: 4: SMEM: unknown option 'swizzle'
-- An SMEM option that does not exist.
local mgpu = require "mgpu"
local s = mgpu.SMEM({ 64, 64 }, "bf16", { swizzle = 128 })
