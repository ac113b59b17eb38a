-- expect: 4: pallas_call expects a table of options
-- pallas_call with a function instead of its options.
local mgpu = require "mgpu"
local f = mgpu.pallas_call(function() end)
