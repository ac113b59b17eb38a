-- expect: 7: wgmma: mgpu.ACC(...) describes an accumulator to allocate, it is not one yet: allocate it with mgpu.run_scoped
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 64, 64 }, "f32"),
  scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16"), mgpu.SMEM({ 64, 64 }, "bf16") },
  body = function(o, a, b)
    local acc = mgpu.ACC({ 64, 64 }, "f32")
    mgpu.wgmma(acc, a, b)
    o:store(acc:load())
  end }
k()
