-- expect: 9: tcgen05_mma: N = 200 is not an MMA shape for M = 128: N must be a multiple of 16
-- An accumulator width the tensor core has no instruction for.
local mgpu = require "mgpu"
mgpu.configure{ target = "sm_100a" }
local k = mgpu.kernel{
  out_shape = mgpu.shape({ 128 }, "f32"),
  scratch_shapes = { mgpu.TMEM({ 128, 200 }, "f32"), mgpu.SMEM({ 128, 64 }, "bf16"), mgpu.SMEM({ 64, 200 }, "bf16") },
  body = function(o, acc, a, b)
    mgpu.tcgen05_mma(acc, a, b)
  end,
}
k()
