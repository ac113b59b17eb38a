-- expect: 6: on_device: views a GMEM array (mgpu.symmetric) on another device; this ref is in SMEM (f32[4])
-- on_device of an SMEM ref: it once said "remote: operand 1 must be a GMEM ref".
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "f32"),
  scratch_shapes = { mgpu.SMEM({ 4 }, "f32") }, body = function(o, s)
    local r = s:on_device(0)
  end }
k()
