-- Layout inference as Pallas' Warpgroup semantics does it: broadcasts of
-- reduced values, reductions of default-loaded values over any axes, and the
-- public layout names in messages, MGPU_DEBUG=layout and print_layout.
local mgpu = require "mgpu"
local W = mgpu.Layout.WGMMA

local function err_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error")
  return tostring(err)
end

-- sums of x (rows x cols, row-major table) over axis 0 (per column) or 1 (per row)
local function sums(xt, rows, cols, axis)
  local out = {}
  for i = 1, axis == 0 and cols or rows do
    local s = 0
    for j = 1, axis == 0 and rows or cols do
      s = s + (axis == 0 and xt[(j - 1) * cols + i] or xt[(i - 1) * cols + j])
    end
    out[i] = s
  end
  return out
end

local function maxrel(got, want)
  local e, n = 0, 0
  for i = 1, #want do e = e + (got[i] - want[i]) ^ 2; n = n + want[i] ^ 2 end
  assert(#got == #want, "lengths differ")
  return math.sqrt(e / n)
end

describe("layout inference", function()
  it("broadcasts a WGMMA:reduce(1) row vector to WGMMA without a layout_cast", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 64, 128 }, "f32"),
      body = function(x, o)
        local rows = x:load{ layout = W }:sum(1)
        local b = rows:broadcast_in_dim({ 64, 128 }, { 0 })
        mgpu.print_layout("%s", b)
        o:store(x:load{ layout = W } - b)
      end }
    local x = mgpu.random.normal({ 64, 128 }, "f32")
    local xt = x:to_table()
    local saved, got = _G.print, nil
    _G.print = function(s) got = s end
    local ok, out = pcall(k, x)
    _G.print = saved
    assert(ok, out)
    assert.are.equal("WGMMA", got)
    local rs, want = sums(xt, 64, 128, 1), {}
    for r = 0, 63 do for c = 1, 128 do want[r * 128 + c] = xt[r * 128 + c] - rs[r + 1] end end
    assert.is_true(maxrel(out:to_table(), want) < 1e-6)
  end)

  for _, shape in ipairs({ { 64, 128 }, { 128, 64 }, { 8, 256 } }) do
    for axis = 0, 1 do
      it(("reduces a default-loaded f32[%d,%d] over axis %d"):format(shape[1], shape[2], axis), function()
        local k = mgpu.kernel{ out_shape = mgpu.shape({ shape[2 - axis] }, "f32"),
          body = function(x, o) o:store(x:load():sum(axis)) end }
        local x = mgpu.random.normal(shape, "f32")
        assert.is_true(maxrel(k(x):to_table(), sums(x:to_table(), shape[1], shape[2], axis)) < 1e-6)
      end)
    end
  end

  it("names layouts as the Lua API does in conflicts and MGPU_DEBUG=layout", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 64, 128 }, "f32"),
      body = function(x, o)
        local rows = x:load{ layout = W }:sum(1)
        o:store(mgpu.layout_cast(rows:broadcast_in_dim({ 64, 128 }, { 0 }), mgpu.Layout.WG_STRIDED(4)))
      end }
    local msg = err_of(k, mgpu.random.normal({ 64, 128 }, "f32"))
    assert.matches("broadcast_in_dim: the operand's layout WGMMA:reduce%(1%) does not broadcast to the result's layout WG_STRIDED%(4%)", msg)
    assert.is_nil(msg:find("levels", 1, true))
    local tiled = mgpu.Layout.TILED{ tiling = { { 8, 64 }, { 2 } }, warp_dims = { mgpu.Replicated(4) }, lane_dims = { -2 },
                                     vector_dim = -1 }
    local k2 = mgpu.kernel{ out_shape = mgpu.shape({ 8 }, "f32"),
      body = function(x, o)
        local v = mgpu.layout_cast(x:load(), tiled)
        mgpu.print_layout("v: %s", v)
        mgpu.print_layout("rows: %s", v:sum(1))
        o:store(v:sum(1))
      end }
    local lines = {}
    local saved = _G.print
    _G.print = function(s) lines[#lines + 1] = s end
    local ok, err = pcall(k2, mgpu.random.normal({ 8, 64 }, "f32"))
    _G.print = saved
    assert(ok, err)
    assert.are.same({ "v: TILED{ tiling = {{8, 64}, {2}}, warp_dims = {mgpu.Replicated(4)}, lane_dims = {-2}, vector_dim = -1 }",
                      "rows: TILED{ tiling = {{8, 64}, {2}}, warp_dims = {mgpu.Replicated(4)}, lane_dims = {-2}, vector_dim = -1 }:reduce(1)" },
                    lines)
  end)

  it("suggests a tiled layout when a strided one cannot be reduced", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 64 }, "f32"),
      body = function(x, o) o:store(mgpu.layout_cast(x:load(), mgpu.Layout.WG_STRIDED(4)):sum(1)) end }
    assert.matches("reduce_sum: the operand's layout WG_STRIDED%(4%) cannot be reduced over these axes",
                   err_of(k, mgpu.random.normal({ 64, 128 }, "f32")))
  end)
end)
