-- expect: 5: no block here
-- A pallas_call whose index map raises a string.
local mgpu = require "mgpu"
local f = mgpu.pallas_call{ grid = { 2 },
  in_specs = { mgpu.BlockSpec{ { 32, 64 }, function(i) error("no block here") end } },
  out_specs = mgpu.BlockSpec{ { 32, 64 }, function(i) return i, 0 end },
  out_shape = mgpu.shape({ 64, 64 }),
  body = function(xs, os) os:store(xs:load()) end }
f(mgpu.zeros({ 64, 64 }))
