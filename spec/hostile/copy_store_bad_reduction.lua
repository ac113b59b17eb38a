-- expect: 7: copy_smem_to_gmem: unknown reduction_op 'mul'
-- A TMA store with a reduction the copy engine lacks.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }),
  scratch_shapes = { mgpu.SMEM({ 64 }, "f32") },
  body = function(o, s)
    mgpu.copy_smem_to_gmem(s, o, { reduction_op = "mul" })
  end }
k()
