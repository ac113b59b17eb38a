-- expect: 4: BlockSpec: memory_space must be mgpu.SMEM or mgpu.GMEM, got VMEM
-- A TPU memory space.
local mgpu = require "mgpu"
local s = mgpu.BlockSpec{ { 64 }, memory_space = "VMEM" }
