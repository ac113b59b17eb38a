-- new-tma-unit-dims: Pallas drops unit dims to fit a copy into TMA's 5 dims; mgpu refuses
-- "this copy needs 8 TMA dimensions, at most 5 exist".
local mgpu = require "mgpu"
local shape = { 2, 64, 1, 1, 1, 1, 128 }
local k = mgpu.kernel{ out_shape = mgpu.shape(shape, "f32"),
  scratch_shapes = { mgpu.SMEM(shape, "f32", { transforms = { mgpu.transforms.tiling{ 2, 1, 1, 1, 1, 1, 32 } } }), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(x, s, bar)
    mgpu.barrier_wait(bar)
    mgpu.copy_smem_to_gmem(s, o)
    mgpu.wait_smem_to_gmem(0)
  end }
print(k(mgpu.zeros(shape, "f32")):get(1, 1, 1, 1, 1, 1, 1))
