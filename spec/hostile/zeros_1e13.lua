-- expect: 4: zeros: cannot allocate 40000 GB
-- 1e13 elements: more than any memory holds, said without a crash.
local mgpu = require "mgpu"
local x = mgpu.zeros({ 1e13 }, "f32")
