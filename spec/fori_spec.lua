-- mgpu.fori's unroll option (the same results as the plain loop, with the
-- loop structure it promises) and the reports for carried arrays whose
-- layouts disagree between the loop's sides.
local mgpu = require "mgpu"

local err_of = dofile("spec/support/util.lua").err_of

local function count(s, pat)
  local _, n = s:gsub(pat, "")
  return n
end

-- acc = acc * 0.5 + i over [lo, hi) (static) and s = s + i * i over [1, n) (n read on the device)
local function loops_kernel(lo, hi, unroll)
  return mgpu.kernel{ grid = { 1 }, out_shape = { mgpu.shape({ 256 }, "f32"), mgpu.shape({ 1 }, "i32") },
    body = function(x, nref, o, c)
      local opts = unroll ~= nil and { unroll = unroll } or nil
      local function step(i, acc, cnt)
        local nxt = acc * 0.5 + i:astype("f32")
        return nxt, cnt + 1
      end
      local acc, cnt
      if opts then acc, cnt = mgpu.fori(lo, hi, step, x:load(), 0, opts)
      else acc, cnt = mgpu.fori(lo, hi, step, x:load(), 0) end
      o:store(acc)
      local dyn = opts and unroll ~= true and { unroll = unroll } or nil
      local function sq(i, s) local t = s + i * i; return t end
      local s = dyn and mgpu.fori(1, nref:at(0):load(), sq, cnt, dyn) or mgpu.fori(1, nref:at(0):load(), sq, cnt)
      c:at(0):store(s)
    end }
end

describe("fori unroll", function()
  it("gives the plain loop's results for every unroll and trip count", function()
    local x = mgpu.random.uniform({ 256 }, "f32", 7)
    for _, b in ipairs({ { 0, 0 }, { 0, 1 }, { 2, 5 }, { 0, 10 }, { -3, 9 }, { 5, 2 } }) do
      for _, n in ipairs({ 0, 1, 2, 7, 12 }) do
        local ref_o, ref_c = loops_kernel(b[1], b[2], nil)(x, mgpu.array({ n }, "i32"))
        for _, u in ipairs({ 1, 2, 3, 4, 16, true }) do
          local o, c = loops_kernel(b[1], b[2], u)(x, mgpu.array({ n }, "i32"))
          local what = string.format("[%d, %d) n=%d unroll=%s", b[1], b[2], n, tostring(u))
          assert.are.same(ref_o:to_table(), o:to_table(), what)
          assert.are.equal(ref_c:get(1), c:get(1), what)
        end
      end
    end
  end)

  it("unrolls at trace time or emits loops stepping by the unroll factor", function()
    local ir = function(u) return loops_kernel(0, 10, u):lower(mgpu.zeros(256), mgpu.array({ 5 }, "i32")).ir end
    local plain = ir(nil)
    assert.are.equal(2, count(plain, " = for "))
    local full = ir(true)                                   -- the static loop is gone, the device one stays plain
    assert.are.equal(1, count(full, " = for "))
    local four = ir(4)                                      -- static: one loop of 2 steps by 4, steps 8 and 9 traced after;
    assert.are.equal(3, count(four, " = for "))           -- device: groups of 4, then a plain loop for the rest
    assert.matches("const 4 : i32\n%s+%%%d+, %%%d+ = for %%%d+, %%%d+, %%%d+, %%%d+, %%%d+ \"acc,cnt\"", four)
    assert.are.equal(2, count(ir(16), " = for "))          -- 10 steps fit in one unroll of 16: traced; the device loop: 2
    assert.are.equal(2, count(ir(1), " = for "))
  end)

  it("runs the same in the interpreter with the carried values' dtypes kept", function()
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "i64"),
      body = function(o)
        local a, b = mgpu.fori(0, 5, function(i, a, b) return a + i:astype("i64"), b * 2 end,
                               mgpu.const(0, "i64"), mgpu.const(1, "i64"), { unroll = 2 })
        o:at(0):store(a)
        o:at(1):store(b)
        o:at(2):store(mgpu.fori(0, 3, function(i, c) return c - 1 end, mgpu.const(0, "i64"), { unroll = true }))
        o:at(3):store(mgpu.const(0, "i64"))
      end }
    assert.are.same({ 10, 32, -3, 0 }, k():to_table())
  end)

  it("checks its options", function()
    local function trace(body)
      return err_of(mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "i32"), body = body }, mgpu.array({ 4 }, "i32"))
    end
    local id = function(i, s) return s end
    assert.matches("fori_spec.lua:%d+: fori: unroll = true needs lo and hi known at trace time",
                   trace(function(n) mgpu.fori(0, n:at(0):load(), id, 0, { unroll = true }) end))
    assert.matches("fori_spec.lua:%d+: fori: unknown option 'unrol'", trace(function(n) mgpu.fori(0, 4, id, 0, { unrol = 2 }) end))
    assert.matches("fori_spec.lua:%d+: fori: unroll must be at least 1", trace(function(n) mgpu.fori(0, 4, id, 0, { unroll = 0 }) end))
    assert.matches("fori_spec.lua:%d+: fori unroll must be an integer, got 1.5",
                   trace(function(n) mgpu.fori(0, 4, id, 0, { unroll = 1.5 }) end))
    assert.matches("fori_spec.lua:%d+: fori body: returned f32 as value 1, which must match i32",
                   trace(function(n) mgpu.fori(0, 4, function(i, s) return s:astype("f32") end, 0, { unroll = true }) end))
    assert.matches("fori_spec.lua:%d+: fori body returned 2 values but carries 1",
                   trace(function(n) mgpu.fori(0, 4, function(i, s) return s, s end, 0, { unroll = 2 }) end))
  end)
end)

describe("carried layouts", function()
  local function trace(body, params)
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }, "f32"), compiler_params = params, body = body }
    return err_of(k, mgpu.zeros({ 64, 64 }), mgpu.zeros({ 64, 64 }))
  end
  local L = mgpu.Layout

  it("names the carry, both layouts and both lines when the body changes a carried layout", function()
    local err = trace(function(x, y, o)
      local a = x:load{ layout = L.WGMMA }                                   -- entry
      local r = mgpu.fori(0, 4, function(i, acc)
        local nxt = mgpu.layout_cast(acc + 1, L.WG_STRIDED(1))               -- body
        return nxt
      end, a)
      o:store(r)
    end)
    local entry, body = err:match("fori_spec.lua:%d+: fori: carried value 1 %(acc%) has layout WGMMA on entry %(asked for at " ..
      "[^:]*fori_spec.lua:(%d+)%) but WG_STRIDED%(1%) as the body's result %(asked for at [^:]*fori_spec.lua:(%d+)%); " ..
      "a carried array keeps one layout")
    assert(entry, err)
    assert.are.equal(tonumber(entry) + 2, tonumber(body))
  end)

  it("reports a layout asked for after the loop, inside the body and in while_loop", function()
    assert.matches("fori: carried value 2 %(m%) has layout WGMMA:reduce%(1%) on entry %(asked for at [^)]+%) but " ..
                   "WG_STRIDED%(2%) after the loop",
      trace(function(x, y, o)
        local rows = x:load{ layout = L.WGMMA }:sum(1)
        local n, m = mgpu.fori(0, 2, function(i, n, m) return n + 1, m end, 0, rows)
        local out = mgpu.layout_cast(m, L.WG_STRIDED(2))
        o:at(mgpu.all, 0):store(out)
      end))
    assert.matches("fori: carried value 1 %(acc%) has layout WGMMA in the loop body %(asked for at [^)]+%) but " ..
                   "WG_STRIDED%(2%) as the body's result",
      trace(function(x, y, o)
        local r = mgpu.fori(0, 4, function(i, acc)
          local seen = mgpu.layout_cast(acc, L.WGMMA)
          local fresh = y:load{ layout = L.WG_STRIDED(2) }
          return fresh
        end, x:load())
        o:store(r)
      end))
    assert.matches("while_loop: carried value 2 %(acc%) has layout WGMMA on entry %(asked for at [^)]+%) but " ..
                   "WG_STRIDED%(1%) as the body's result",
      trace(function(x, y, o)
        local n, r = mgpu.while_loop(function(n, acc) return mgpu.lt(n, 3) end, function(n, acc)
          local nxt = mgpu.layout_cast(acc * 2, L.WG_STRIDED(1))
          return n + 1, nxt
        end, 0, x:load{ layout = L.WGMMA })
        o:store(r)
      end))
  end)

  it("names layouts publicly in other conflicts too", function()
    assert.matches("layout inference failed: %%%d+ %(defined at [^)]+%) must have layout WGMMA %(asked for at [^)]+%) " ..
                   "and layout WG_STRIDED%(1%)",
      trace(function(x, y, o) o:store(mgpu.layout_cast(x:load{ layout = L.WGMMA } + 1, L.WG_STRIDED(1))) end))
  end)
end)
