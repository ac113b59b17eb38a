-- expect: 6: kernel body raised a non-string error: { branch = true }
-- A branch that raises a table.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o)
    mgpu.cond(mgpu.program_id(0):eq(0), function() error({ branch = true }) end, function() end)
  end }
k()
