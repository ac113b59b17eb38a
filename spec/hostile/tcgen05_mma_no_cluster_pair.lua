-- expect: 9: tcgen05_mma: collective_axis 'x' must be the kernel's first cluster axis, of size 2
-- A 2-CTA MMA in a kernel whose cluster holds no pair of blocks along its first axis.
local mgpu = require "mgpu"
mgpu.configure{ target = "sm_100a" }
local k = mgpu.kernel{
  out_shape = mgpu.shape({ 128 }, "f32"), cluster = { 4 }, cluster_names = { "x" },
  scratch_shapes = { mgpu.TMEM({ 128, 128 }, "f32"), mgpu.SMEM({ 128, 64 }, "bf16"), mgpu.SMEM({ 64, 64 }, "bf16") },
  body = function(o, acc, a, b)
    mgpu.tcgen05_mma(acc, a, b, { collective_axis = "x" })
  end,
}
k()
