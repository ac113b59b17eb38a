-- expect: 4: reduction_scratch_bytes must be an integer
-- reduction_scratch_bytes as a fraction.
local mgpu = require "mgpu"
local p = mgpu.CompilerParams{ reduction_scratch_bytes = 10.5 }
