-- expect: 4: BlockSpec: memory_space cannot be TMEM
-- Pipelines stage their blocks in SMEM; tensor memory is scratch (mgpu.TMEM).
local mgpu = require "mgpu"
local s = mgpu.BlockSpec{ { 64 }, memory_space = mgpu.MemorySpace.TMEM }
