-- expect: 6: emit_pipeline: max_concurrent_steps = 1000000000 is more than 32 steps in flight
-- A depth past the barrier limit, over a traced grid (unknown step count):
-- it once said "Barrier: num_barriers must be between 1 and 32".
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 128 }, "f32"),
  body = function(x, o) local pipe = mgpu.emit_pipeline(function(idx, xs, os) os:store(xs:load()) end, {
      grid = { mgpu.num_programs(0) }, max_concurrent_steps = 1e9,
      in_specs = { mgpu.BlockSpec{ { 64, 128 }, function(i) return 0, 0 end } },
      out_specs = { mgpu.BlockSpec{ { 64, 128 }, function(i) return 0, 0 end } } })
    pipe(x, o)
  end }
k(mgpu.zeros({ 64, 128 }))
