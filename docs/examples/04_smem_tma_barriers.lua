--[[
Tutorial 4: shared memory, TMA and barriers (docs/tutorial/04-smem-tma-barriers.md).

out = x^T, tile by tile: the copy engine (TMA) brings a (T x T) tile of x
into shared memory (SMEM) and signals a barrier; the warpgroup reads it
through a transposed view, writes the result into a second SMEM buffer, and
the copy engine stores that buffer into out at the mirrored tile.

  mgpu docs/examples/04_smem_tma_barriers.lua [rows] [cols]
]]
local mgpu = require "mgpu"

local R = tonumber((select(1, ...))) or 96
local C = tonumber((select(2, ...))) or 160
local T = 32                                   -- tile side

local transpose = mgpu.kernel{
  name = "transpose",
  grid = function(x) return { mgpu.cdiv(x.shape[1], T), mgpu.cdiv(x.shape[2], T) } end,
  out_shape = function(x) return mgpu.shape({ x.shape[2], x.shape[1] }, x.dtype) end,
  -- scratch_shapes: allocated per block, passed to the body after the outputs
  scratch_shapes = {
    mgpu.SMEM({ T, T }, "f32"),                -- the input tile
    mgpu.SMEM({ T, T }, "f32"),                -- the output tile
    mgpu.Barrier{ num_arrivals = 1 },          -- one copy arrives on it
  },
  body = function(x, out, tile_in, tile_out, loaded)
    local i, j = mgpu.program_id(0), mgpu.program_id(1)
    -- GMEM -> SMEM, asynchronously: the copy arrives on `loaded` when done
    mgpu.copy_gmem_to_smem(x:at(mgpu.ds(i * T, T), mgpu.ds(j * T, T)), tile_in, loaded)
    mgpu.barrier_wait(loaded)                  -- the tile has landed
    -- a view with the dims swapped: element (r, c) of it is tile_in[c, r]
    local t = mgpu.transpose_ref(tile_in, { 1, 0 }):load()
    tile_out:store(t)
    mgpu.commit_smem()                         -- make the register stores visible to TMA
    mgpu.copy_smem_to_gmem(tile_out, out:at(mgpu.ds(j * T, T), mgpu.ds(i * T, T)))
    mgpu.wait_smem_to_gmem(0)                  -- the store has finished before the block ends
  end,
}

local x = mgpu.random.normal({ R, C }, "f32")
local out = transpose(x)
if mgpu.compile_only() then return end

-- the reference: x's elements transposed on the host (1-based Lua tables)
local rows, flat = x:tolist(), {}
for c = 1, C do for r = 1, R do flat[#flat + 1] = rows[r][c] end end
local ref = mgpu.host.from_table(flat, { C, R })
local err = mgpu.host.relerr(out, ref)
print(string.format("transpose f32[%d, %d]: relative error %.2e", R, C, err))
assert(err == 0, "transpose: wrong result")
