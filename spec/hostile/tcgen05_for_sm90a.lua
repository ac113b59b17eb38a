-- expect: 6: TMEM is Blackwell-only (sm_100a tensor memory, tcgen05 and cluster launch control) but this kernel's target is sm_90a
-- A Blackwell accumulator and MMA in a kernel compiled for Hopper (the default without a GPU).
local mgpu = require "mgpu"
local k = mgpu.kernel{
  out_shape = mgpu.shape({ 128, 128 }, "f32"),
  scratch_shapes = { mgpu.TMEM({ 128, 128 }, "f32"), mgpu.SMEM({ 128, 64 }, "bf16"), mgpu.SMEM({ 64, 128 }, "bf16") },
  body = function(o, acc, a, b) mgpu.tcgen05_mma(acc, a, b) end,
}
k()
