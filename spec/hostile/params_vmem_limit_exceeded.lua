-- expect: 8: needs 4096 bytes of SMEM but compiler_params.vmem_limit_bytes (the SMEM budget) is 16
-- A kernel whose SMEM is over its own budget.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
  scratch_shapes = { mgpu.SMEM({ 1024 }, "f32") },
  compiler_params = mgpu.CompilerParams{ vmem_limit_bytes = 16 },
  body = function(o, s) o:store(mgpu.broadcast(0, { 128 })) end }
k()
