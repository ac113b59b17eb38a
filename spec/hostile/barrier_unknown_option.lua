-- expect: 4: Barrier: unknown option 'arrivals'
-- A misspelt barrier option.
local mgpu = require "mgpu"
local b = mgpu.Barrier{ arrivals = 2 }
