-- expect: 7: dynamic_scheduling_loop: counter must be a GMEM i32 ref of shape {n}, n >= 2
-- A counter in SMEM (each block would have its own): it once said
-- "atomic: operand 1 must be a GMEM ref".
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 2 }, grid_names = { "b" }, out_shape = mgpu.shape({ 8 }, "i32"),
  scratch_shapes = { mgpu.SMEM({ 2 }, "i32") }, body = function(o, c)
    mgpu.dynamic_scheduling_loop("b", { counter = c, grid = { 8 } }, function(info) o:at(info.index[1]):store(1) end)
  end }
k()
