-- new-print_layout: Pallas' print_layout("x: {}", x) prints "x: WGMMA_ROW", and takes SMEM refs
-- (printing their transforms); mgpu's takes a %s format and register arrays only.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "bf16"), scratch_shapes = { mgpu.SMEM({ 128, 64 }, "bf16") },
  body = function(x, o, s)
    mgpu.print_layout("x: {}", mgpu.layout_cast(x:load(), mgpu.Layout.WGMMA:reduce(1)))
    print(pcall(mgpu.print_layout, "smem: {}", s))
  end }
k:lower(mgpu.abstract({ 128 }, "bf16"))
