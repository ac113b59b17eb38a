-- new-rank0-arrays: Pallas has 0-d arrays and refs (x.reshape(1, 1, 1), a BlockSpec over a 0-d
-- array, 0-d TMA copies, a load of a 0-d ref with layout WG_SPLAT); mgpu's scalars are not arrays.
local mgpu = require "mgpu"
for _, body in ipairs({
  function(o) o:store(mgpu.const(42, "f32"):reshape({ 1, 1, 1 })) end,
  function(o) o:store(mgpu.broadcast(42, {}, "f32"):broadcast_to({ 1, 1, 1 })) end,
}) do
  local k = mgpu.kernel{ out_shape = mgpu.shape({ 1, 1, 1 }, "f32"), body = body }
  print(pcall(k.lower, k))
end
local k = mgpu.kernel{ out_shape = mgpu.shape({}, "i32"), scratch_shapes = { mgpu.SMEM({}, "i32"), mgpu.Barrier{} },
  body = function(x, o, s, bar)
    mgpu.copy_gmem_to_smem(x, s, bar)
    mgpu.barrier_wait(bar)
    o:store(s:load())
  end }
print(pcall(k.lower, k, mgpu.abstract({}, "i32")))
