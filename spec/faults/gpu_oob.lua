-- A kernel that really faults on a GPU: with bounds checks off it stores
-- 128 floats at a run-time offset (from its first argument) far past its
-- 512-byte SMEM buffer.  tools/gpu_faults.sh runs it on the device; the
-- interpreter refuses the store (it is outside the allocation).
local mgpu = require "mgpu"
local oob = mgpu.kernel{
  name = "oob", out_shape = mgpu.shape({ 128 }, "f32"),
  scratch_shapes = { mgpu.SMEM({ 128 }, "f32") },
  compiler_params = mgpu.CompilerParams{ disable_bounds_checks = true },
  body = function(at, x, o, s)
    s:at(mgpu.ds(at:load(), 128)):store(x:load())
    mgpu.commit_smem()
    o:store(s:load())
  end,
}
local y = oob(mgpu.full({}, 1 << 26, "i32"), mgpu.iota(128, "f32"))
print(y:get(3))
