-- expect: 4: transforms[1] must be mgpu.transforms.tiling/swizzle/transpose(...), got number
-- A number among the transforms.
local mgpu = require "mgpu"
local s = mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { 128 } })
