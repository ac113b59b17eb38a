-- expect: 4: CompilerParams: flags: unknown JIT option '--fast'
-- An unknown JIT flag.
local mgpu = require "mgpu"
local p = mgpu.CompilerParams{ flags = { "--fast" } }
