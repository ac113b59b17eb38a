-- expect: 5: kernel 'kernel' needs 4194304 bytes of SMEM but a block may have
-- 4 MB of SMEM scratch: over the device limit, reported at the SMEM line.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  scratch_shapes = { mgpu.SMEM({ 1024, 1024 }, "f32") },
  body = function(o, s) end }
k()
