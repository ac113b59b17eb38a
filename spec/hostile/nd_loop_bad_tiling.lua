-- expect: 6: nd_loop: tiling[1] = 3 does not divide grid[1] = 4
-- A tiling that does not divide the grid.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }),
  body = function(x, o)
    mgpu.nd_loop({ 4 }, { tiling = { 3 } }, function(info) end)
  end }
k(mgpu.zeros({ 64, 64 }))
