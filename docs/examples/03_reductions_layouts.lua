--[[
Tutorial 3: reductions and layouts (docs/tutorial/03-reductions-layouts.md).

Two kernels:
- softmax of each row of a matrix: a reduction (max, sum) over the row,
  whose result broadcasts back over it;
- out[r, c] = x[r, c] + row_bias[r] + col_bias[c] over (64 x 128) tiles,
  where the vectors are loaded in the layouts that broadcast to the tile's.

  mgpu docs/examples/03_reductions_layouts.lua [rows] [cols]
]]
local mgpu = require "mgpu"

local R = tonumber((select(1, ...))) or 100
local C = tonumber((select(2, ...))) or 256

-- One block (128 threads) per row.  x:max() and p:sum() reduce over every
-- axis: inside each thread, then across the lanes of a warp with shuffles,
-- then across the four warps through shared memory.
local softmax = mgpu.kernel{
  name = "softmax",
  grid = function(x) return { x.shape[1] } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  body = function(x, y)
    local row = x:at(mgpu.program_id(0)):load()     -- (C,)
    local m = row:max()                             -- a scalar
    mgpu.print_layout("softmax: the row is in layout %s", row)
    local p = (row - m):exp()                       -- the scalar broadcasts
    y:at(mgpu.program_id(0)):store(p / p:sum())
  end,
}

-- Every array in registers has a layout: which thread holds which element.
-- A (64, N) tile in Layout.WGMMA (the wgmma accumulator's layout) has a
-- row layout WGMMA:reduce(1) and a column layout WGMMA:reduce(0): vectors
-- in those layouts broadcast back to the tile for free.
local W = mgpu.Layout.WGMMA
local TR, TC = 64, 128
local add_bias = mgpu.kernel{
  name = "add_bias",
  grid = function(x) return { mgpu.cdiv(x.shape[1], TR), mgpu.cdiv(x.shape[2], TC) } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  body = function(x, row_bias, col_bias, out)
    local rows = mgpu.ds(mgpu.program_id(0) * TR, TR)
    local cols = mgpu.ds(mgpu.program_id(1) * TC, TC)
    local tile = x:at(rows, cols):load{ layout = W }                  -- (64, 128)
    local rb = row_bias:at(rows):load{ layout = W:reduce(1) }         -- (64,): one value per row
    local cb = col_bias:at(cols):load{ layout = W:reduce(0) }         -- (128,): one per column
    -- broadcast_in_dim(shape, dims): operand dim k becomes dim dims[k] (0-based)
    out:at(rows, cols):store(tile + rb:broadcast_in_dim({ TR, TC }, { 0 })
                                  + cb:broadcast_in_dim({ TR, TC }, { 1 }))
  end,
}

local x = mgpu.random.normal({ R, C }, "f32", nil, 0, 2)
local rb = mgpu.random.normal({ R }, "f32")
local cb = mgpu.random.normal({ C }, "f32")
local y = softmax(x)
local out = add_bias(x, rb, cb)
if mgpu.compile_only() then return end

local H = mgpu.host
local hx = H.from(x)
local e = (hx - hx:amax(1, true)):exp()         -- reductions over axis 1 (0-based), dims kept
local err = H.relerr(y, e / e:sum(1, true))
local err2 = H.relerr(out, hx + H.from(rb:reshape({ R, 1 })) + H.from(cb))
print(string.format("softmax f32[%d, %d]: relative error %.2e; add_bias: %.2e", R, C, err, err2))
assert(err < 1e-5 and err2 < 1e-6, "wrong result")
