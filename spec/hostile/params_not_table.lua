-- expect: 4: CompilerParams expects a table of fields, got number
-- mgpu.CompilerParams with a number.
local mgpu = require "mgpu"
local p = mgpu.CompilerParams(5)
