-- expect: 4: CompilerParams: max_concurrent_steps must be at least 1, got 0
-- max_concurrent_steps of zero.
local mgpu = require "mgpu"
local p = mgpu.CompilerParams{ max_concurrent_steps = 0 }
