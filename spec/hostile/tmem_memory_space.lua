-- expect: 4: mgpu.MemorySpace.TMEM is Blackwell-only
-- Tensor memory, which Hopper lacks.
local mgpu = require "mgpu"
local s = mgpu.BlockSpec{ { 64 }, memory_space = mgpu.MemorySpace.TMEM }
