-- expect: 7: kernel 'kernel' needs 640 columns of TMEM but a block has 512
-- Two accumulators live together need more tensor memory than a block has.
local mgpu = require "mgpu"
mgpu.configure{ target = "sm_100a" }
local k = mgpu.kernel{
  out_shape = mgpu.shape({ 128 }, "f32"),
  scratch_shapes = { mgpu.TMEM({ 128, 256 }, "f32"), mgpu.TMEM({ 128, 384 }, "f32") },
  body = function(o, acc0, acc1) end,
}
k()
