-- expect: 4: only available while a kernel body is being traced
-- mgpu.program_id at the top level of a script.
local mgpu = require "mgpu"
local i = mgpu.program_id(0)
