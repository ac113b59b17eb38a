-- expect: 4: CompilerParams: unknown field 'approximate'
-- A misspelt field.
local mgpu = require "mgpu"
local p = mgpu.CompilerParams{ approximate = true }
