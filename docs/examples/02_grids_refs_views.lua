--[[
Tutorial 2: grids, refs and views (docs/tutorial/02-grids-refs-views.md).

out = alpha * x + y on a matrix whose sides are not multiples of the tile:
a 2-D grid of (TR x TC) tiles, views made with mgpu.ds, edge tiles that run
past the end of the arrays, an integer index that drops a dimension, and a
rank-0 array holding a scalar.

Indices inside kernels are 0-based (program_id, ds starts, ref:at);
indices on the host (array:get, array:tolist) are 1-based, as in Lua.

  mgpu docs/examples/02_grids_refs_views.lua [rows] [cols]
]]
local mgpu = require "mgpu"

local R = tonumber((select(1, ...))) or 100
local C = tonumber((select(2, ...))) or 300
local TR, TC = 16, 128                        -- one block's tile

local axpy2d = mgpu.kernel{
  name = "axpy2d",
  -- grid axis 0 walks row tiles, axis 1 column tiles
  grid = function(alpha, x, y) return { mgpu.cdiv(x.shape[1], TR), mgpu.cdiv(x.shape[2], TC) } end,
  out_shape = function(alpha, x, y) return mgpu.shape(x.shape, x.dtype) end,
  body = function(alpha, x, y, out)
    local i, j = mgpu.program_id(0), mgpu.program_id(1)   -- 0-based block indices
    local rows, cols = mgpu.ds(i * TR, TR), mgpu.ds(j * TC, TC)
    local a = alpha:load()                                -- a rank-0 ref loads as a scalar
    -- the last row and column tiles reach past the arrays: outside them,
    -- loads read zeros and stores write nothing
    out:at(rows, cols):store(a * x:at(rows, cols):load() + y:at(rows, cols):load())
  end,
}

-- An integer index drops a dimension: one block per row, out[r, :] = 2 x[r, :].
local double_rows = mgpu.kernel{
  name = "double_rows",
  grid = function(x) return { x.shape[1] } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  body = function(x, out)
    local r = mgpu.program_id(0)
    local row = x:at(r, mgpu.all)                         -- a (cols,) view; x:at(r) is the same
    out:at(r):store(row:load() * 2)
  end,
}

local alpha = mgpu.full({}, 0.5, "f32")                  -- shape {}: one element
local x = mgpu.random.normal({ R, C }, "f32")
local y = mgpu.random.normal({ R, C }, "f32")
local out = axpy2d(alpha, x, y)
local twice = double_rows(x)
if mgpu.compile_only() then return end

local H = mgpu.host
local err = H.relerr(out, H.from(x) * 0.5 + H.from(y))
local err2 = H.relerr(twice, H.from(x) * 2)
print(string.format("axpy2d f32[%d, %d]: relative error %.2e; double_rows: %.2e", R, C, err, err2))
assert(err < 1e-6 and err2 == 0, "wrong result")

-- On the host, indices are 1-based: element (1, 1) is the one the kernel
-- calls (0, 0), and tolist() nests rows as Lua tables.
local t = out:tolist()
assert(out:get(1, 1) == t[1][1] and out:get(R, C) == t[R][C])
print(string.format("out:get(1, 1) = %.4f, out:get(%d, %d) = %.4f", out:get(1, 1), R, C, out:get(R, C)))
