-- new-reduction-scratch: a (128, 128) WGMMA column sum needs 1 KiB of reduction scratch in
-- Pallas (and reduction_scratch_bytes = 0 refuses it); mgpu needs 16 KiB and takes 0 as its default.
local mgpu = require "mgpu"
for _, bytes in ipairs({ 1024, 0 }) do
  local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"),
    compiler_params = mgpu.CompilerParams{ reduction_scratch_bytes = bytes },
    body = function(x, o) o:store(x:load{ layout = mgpu.Layout.WGMMA }:sum(0)) end }
  print(bytes, pcall(k.lower, k, mgpu.abstract({ 128, 128 }, "f32")))
end
