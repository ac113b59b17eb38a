-- expect: 4: dimension_semantics[2] must be "parallel" or "sequential"
-- An unknown dimension semantics.
local mgpu = require "mgpu"
local p = mgpu.CompilerParams{ dimension_semantics = { "parallel", "diagonal" } }
