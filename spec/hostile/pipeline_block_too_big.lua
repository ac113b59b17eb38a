-- expect: 8: copy_gmem_to_smem: the tile (128) is larger than dimension 0 of the GMEM array (64)
-- A block larger than the array.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    local p = mgpu.emit_pipeline(function(i, xs) end,
      { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 128, 64 }, function(i) return i, 0 end } } })
    p(x)
  end }
k(mgpu.zeros({ 64, 64 }))
