--[[
mgpu.layout -- register layouts (Pallas' plgpu.Layout), as values the
front end passes to the engine in their text form.

  mgpu.Layout.WGMMA                 the wgmma accumulator / A-operand fragment
  mgpu.Layout.WGMMA_TRANSPOSED      the same with a column of 2 per register (transposed SMEM refs)
  mgpu.Layout.WGMMA:reduce(1)       its row layout (Pallas' WGMMA_ROW); reduce(0): columns
  mgpu.Layout.WG_STRIDED(vec)       the flattened array in vec-element vectors, round robin
  mgpu.Layout.TCGEN05               (Blackwell) WGMMA's fragments over 128 rows, for TMEM loads
  mgpu.Layout.TCGEN05_TMEM_NATIVE   (Blackwell) a row per thread; TCGEN05_TMEM_NATIVE(vec) in vectors of vec
  mgpu.Layout.TILED{ tiling = {{64, 8}, {16, 8}}, warp_dims = {-3}, lane_dims = {-2, mgpu.Replicated(4)},
                     vector_dim = -1 }
]]
local compat = require "mgpu.compat"
compat.mark_lib()

local M = {}
local Layout = {}
Layout.__index = Layout
Layout.__tostring = function(l) return "mgpu.Layout(" .. l.text .. ")" end
Layout.__eq = function(a, b) return a.text == b.text end
--- A parameterized layout called with its parameter (TCGEN05_TMEM_NATIVE(vec)); others take none.
Layout.__call = function(l, ...)
  if not rawget(l, "param") then compat.fail("LAYOUT_NOT_CALLABLE", l.text) end
  return l.param(...)
end
M.Layout_mt = Layout

local function new(text) return setmetatable({ text = text }, Layout) end
function M.is_layout(x) return getmetatable(x) == Layout end

--- The layout of the array reduced over `axes` (of the dims the layout tiles).
function Layout:reduce(...)
  if not M.is_layout(self) then compat.fail("LAYOUT_REDUCE_NO_COLON") end
  local axes = { ... }
  if type(axes[1]) == "table" then axes = axes[1] end
  if #axes == 0 then compat.fail("LAYOUT_REDUCE_NO_AXIS") end
  local parts = {}
  for i = 1, #axes do parts[i] = string.format("%d", compat.int(axes[i], "reduce axis")) end
  return new(self.text .. ".reduce(" .. table.concat(parts, ",") .. ")")
end

local Replicated = {}
Replicated.__index = Replicated
--- A warp or lane factor holding copies (Pallas' plgpu.Replicated).
function M.Replicated(n)
  n = compat.int(n, "Replicated count")
  if n < 1 then compat.fail("REPLICATED_COUNT") end
  return setmetatable({ n = n }, Replicated)
end

local function dims_text(list, what)
  local parts = {}
  for i = 1, #(list or {}) do
    local d = list[i]
    if getmetatable(d) == Replicated then parts[i] = "rep" .. d.n
    else
      d = compat.int(d, what .. "[" .. i .. "]")
      if d >= 0 then compat.fail("LAYOUT_DIM_NOT_NEGATIVE", what, i) end
      parts[i] = string.format("%d", d)
    end
  end
  return table.concat(parts, ",")
end

M.Layout = {
  WGMMA = new("wgmma"),
  --- the 8-bit wgmma A fragment from registers (f8e4m3/f8e5m2, i8/u8): vectors of 4
  WGMMA_8BIT = new("wgmma_8bit"),
  --- WGMMA with each lane pair's 2x2 submatrices transposed: a thread's
  --- vector of 2 runs down a column, so loads and stores through a
  --- transposed SMEM ref (mgpu.transpose_ref) move 32-bit words of 16-bit data
  WGMMA_TRANSPOSED = new("wgmma_transposed"),
  --- Pallas' older names for WGMMA:reduce(1) (rows) and WGMMA:reduce(0) (columns).
  WGMMA_ROW = new("wgmma.reduce(1)"),
  WGMMA_COL = new("wgmma.reduce(0)"),
  WG_SPLAT = new("splat"),
  --- Blackwell: WGMMA's fragments over 128 rows, warp w holding rows 32w..32w+31
  --- (TMEM loads and stores of 32-bit values, tcgen05.ld 16x256b)
  TCGEN05 = new("tcgen05"),
  --- WG_STRIDED(vec): vec elements per register vector (1, 2, 4, 8 or 16);
  --- WG_STRIDED(shape, vec) as Pallas spells it (the shape comes from the array).
  WG_STRIDED = function(vec, vec2)
    if type(vec) == "table" then vec = vec2 end
    vec = compat.int(vec or 1, "WG_STRIDED vector size")
    return new(string.format("strided(%d)", vec))
  end,
  --- TILED{ tiling = {...}, warp_dims = {...}, lane_dims = {...}, vector_dim = -1 }
  TILED = function(spec)
    if type(spec) ~= "table" or type(spec.tiling) ~= "table" then compat.fail("TILED_NO_TILING") end
    local tiles = {}
    for i, t in ipairs(spec.tiling) do
      if type(t) == "number" then t = { t } end
      local sz = {}
      for j = 1, #t do sz[j] = string.format("%d", compat.int(t[j], "tile size")) end
      tiles[i] = "(" .. table.concat(sz, ",") .. ")"
    end
    local text = "tiled(" .. table.concat(tiles, ",") .. ");warp(" .. dims_text(spec.warp_dims, "warp_dims") ..
                 ");lane(" .. dims_text(spec.lane_dims, "lane_dims") .. ")"
    if spec.vector_dim then text = text .. string.format(";vec(%d)", compat.int(spec.vector_dim, "vector_dim")) end
    return new(text)
  end,
}

local function native(vec)
  vec = compat.int(vec or 1, "TCGEN05_TMEM_NATIVE vector size")
  return new(string.format("tcgen05_native(%d)", vec))
end
--- Blackwell: row t of 128 in thread t (TMEM loads and stores, tcgen05.ld 32x32b),
--- in vectors of vec when called: TCGEN05_TMEM_NATIVE(vec) (1 when not called)
M.Layout.TCGEN05_TMEM_NATIVE = native(1)
rawset(M.Layout.TCGEN05_TMEM_NATIVE, "param", native)

-- Members of Pallas' plgpu.Layout that mgpu lacks: an error saying so.
local missing = {
  TCGEN05_TRANSPOSED = "not implemented yet; load TMEM with TCGEN05 or TCGEN05_TMEM_NATIVE",
  TCGEN05_M64_COLLECTIVE = "not implemented yet: 64-row TMEM (M = 64 and 2-CTA M = 128 MMAs) is not supported",
  TCGEN05_M64_COLLECTIVE_NATIVE = "not implemented yet: 64-row TMEM (M = 64 and 2-CTA M = 128 MMAs) is not supported",
  WGMMA_UPCAST_2X = "not implemented yet", WGMMA_UPCAST_4X = "not implemented yet",
  SMEM_GMEM_COPY = "not implemented yet; copy with TMA (mgpu.copy_gmem_to_smem / copy_smem_to_gmem)",
  TMA_INDICES = "not implemented yet (TMA gather4)", TMA_INDICES_4 = "not implemented yet (TMA gather4)",
  MMA_LHS = "Ampere mma.sync fragments; on Hopper use WGMMA", MMA_RHS = "Ampere mma.sync fragments; on Hopper use WGMMA",
  MMA_ACC = "Ampere mma.sync fragments; on Hopper use WGMMA",
}
setmetatable(M.Layout, { __index = function(_, k)
  if missing[k] then compat.fail("NOT_PROVIDED", "mgpu.Layout." .. k, missing[k]) end
  compat.fail("LAYOUT_NO_MEMBER", tostring(k), table.concat(compat.sorted_keys(M.Layout), ", "))
end })

--- Text of a layout argument (nil stays nil).
function M.text(l, what)
  if l == nil then return nil end
  if getmetatable(l) ~= Layout then compat.fail("NOT_LAYOUT", what, type(l)) end
  return l.text
end

return M
