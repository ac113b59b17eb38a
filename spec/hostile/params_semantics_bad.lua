-- expect: 4: lowering_semantics must be "Warpgroup" or "Lane"
-- An unknown lowering semantics.
local mgpu = require "mgpu"
local p = mgpu.CompilerParams{ lowering_semantics = "Thread" }
