-- expect: 8: kernel 'kernel': its body traced more than 100000 ops
-- A Lua loop that unrolls a million device ops: it once traced for 17 s
-- into 1.9 GB; the trace-size limit stops it at the op past the limit.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    local x = mgpu.program_id(0)
    for i = 1, 1000000 do x = x * 3 end
  end }
k()
