-- expect: 4: CompilerParams: max_concurrent_steps must be an integer, got string
-- max_concurrent_steps given as a string.
local mgpu = require "mgpu"
local p = mgpu.CompilerParams{ max_concurrent_steps = "2" }
