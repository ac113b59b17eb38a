-- expect: 5: reshape: [3] does not have 4 elements
-- Reshaping 4 elements to 3.
local mgpu = require "mgpu"
local x = mgpu.zeros({ 4 })
local y = x:reshape({ 3 })
