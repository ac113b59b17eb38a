-- expect: 8: kernel body raised a non-string error: { tile = 0 }
-- A pallas_call body that raises a table.
local mgpu = require "mgpu"
local f = mgpu.pallas_call{ grid = { 2 },
  in_specs = { mgpu.BlockSpec{ { 32, 64 }, function(i) return i, 0 end } },
  out_specs = mgpu.BlockSpec{ { 32, 64 }, function(i) return i, 0 end },
  out_shape = mgpu.shape({ 64, 64 }),
  body = function(xs, os) error({ tile = 0 }) end }
f(mgpu.zeros({ 64, 64 }))
