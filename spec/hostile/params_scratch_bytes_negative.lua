-- expect: 4: CompilerParams: reduction_scratch_bytes must not be negative, got -1024
-- A negative reduction_scratch_bytes.
local mgpu = require "mgpu"
local p = mgpu.CompilerParams{ reduction_scratch_bytes = -1024 }
