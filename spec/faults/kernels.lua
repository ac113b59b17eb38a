-- Kernels for spec/gpu_faults_spec.lua: `oops` (made to fault or hang by the
-- stand-in driver), `fine`, and `spin`, whose loop never ends.
local mgpu = require "mgpu"
local same = function(x) return mgpu.shape(x.shape, x.dtype) end
return {
  oops = mgpu.kernel{ name = "oops", out_shape = same, body = function(x, o) o:store(x:load() + 1) end },
  fine = mgpu.kernel{ name = "fine", out_shape = same, body = function(x, o) o:store(x:load() * 2) end },
  spin = mgpu.kernel{ name = "spin", out_shape = mgpu.shape({ 128 }, "i32"), body = function(o)
    local n = mgpu.while_loop(function(i) return mgpu.ge(i, 0) end, function(i) return i + 1 end, mgpu.const(0, "i32"))
    o:store(mgpu.broadcast(n, { 128 }))
  end },
}
