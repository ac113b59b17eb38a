-- Elementwise math in the interpreter against double-precision Lua
-- references (spec/support/math_cases.lua, also run on the GPU by
-- tools/run_cases.lua), plus the API around it.
local mgpu = require "mgpu"
local cases = dofile("spec/support/math_cases.lua")

describe("elementwise math", function()
  dofile("spec/support/util.lua").case_specs(it, cases, "error")
end)

describe("elementwise math API", function()
  local function lower(fn, dt, opts)
    local k = mgpu.kernel{
      name = "low", grid = { 1 }, out_shape = mgpu.shape({ 128 }, dt),
      compiler_params = mgpu.CompilerParams(opts or {}),
      body = function(x, o) o:store(fn(x:load())) end,
    }
    return k:lower(mgpu.zeros({ 128 }, dt)).ptx
  end

  it("lowers clz and popcount to clz/popc of the dtype's width", function()
    local ptx = lower(function(v) return v:clz() + mgpu.popcount(v) end, "i32")
    assert.matches("clz%.b32", ptx)
    assert.matches("popc%.b32", ptx)
    ptx = lower(function(v) return mgpu.clz(v) + v:popcount() end, "u64")
    assert.matches("clz%.b64", ptx)
    assert.matches("popc%.b64", ptx)
    ptx = lower(function(v) return v:clz() end, "i8")          -- the 8 bits only
    assert.matches("and%.b32 %%r%d+, %%r%d+, 255;\n\tclz%.b32 %%r%d+, %%r%d+;\n\tsub%.s32 %%r%d+, %%r%d+, 24;", ptx)
  end)

  it("reduces sin/cos exactly by default and uses the hardware under approx_math", function()
    local ptx = lower(function(v) return v:sin() end, "f32")
    assert.matches("shf%.l%.wrap%.b32", ptx)
    assert.matches("mul%.wide%.u32", ptx)
    assert.is_nil(ptx:find("sin.approx", 1, true))
    assert.matches("sin%.approx%.f32", lower(function(v) return v:sin() end, "f32", { approx_math = true }))
    assert.matches("cos%.approx%.f32", lower(function(v) return mgpu.cos(v) end, "bf16", { approx_math = true }))
  end)

  it("lowers f64 functions to f64 code, the same under approx_math", function()
    local fns = { "exp", "exp2", "log", "log2", "tanh", "sin", "cos", "erf", "logistic", "expm1", "log1p" }
    for _, fn in ipairs(fns) do
      local ptx = lower(function(v) return v[fn](v) end, "f64")
      assert.matches("fma%.rn%.f64", ptx)
      assert.is_nil(ptx:find(".approx", 1, true), fn)
      assert.is_nil(ptx:find("f32", 1, true), fn)
      assert.are.equal(ptx, lower(function(v) return v[fn](v) end, "f64", { approx_math = true }))
    end
    assert.matches("mul%.hi%.u64", lower(function(v) return v:cos() end, "f64"))     -- exact reduction
    assert.matches("div%.rn%.f64", lower(function(v) return v ^ v end, "f64"))
  end)

  it("computes f64 math on arrays and scalars in the interpreter", function()
    local k = mgpu.kernel{
      name = "s64", grid = { 1 }, out_shape = { mgpu.shape({ 128 }, "f64"), mgpu.shape({ 6 }, "f64") },
      body = function(x, o, s)
        local v = x:load()
        o:store(mgpu.expm1(v):log1p() + v:sin() ^ 2 + v:cos() ^ 2)     -- v + 1 to f64 precision
        local c = x:at(5):load()
        s:at(0):store(mgpu.exp(c)); s:at(1):store(c:log2()); s:at(2):store(c:erf())
        s:at(3):store(mgpu.logistic(c)); s:at(4):store(c:tanh()); s:at(5):store(mgpu.pow(c, 3))
      end,
    }
    local t = {}
    for i = 1, 128 do t[i] = (math.random() - 0.5) * 4 end
    t[6] = 0.1 + math.random()
    local x = mgpu.from_table(t, "f64")
    local o, s = mgpu.full({ 128 }, 0 / 0, "f64"), mgpu.full({ 6 }, 0 / 0, "f64")   -- poisoned
    k:call_into({ o, s }, x)
    local got, err = o:to_table(), 0
    for i = 1, 128 do err = math.max(err, math.abs(got[i] - (t[i] + 1)) / (math.abs(t[i]) + 1)) end
    assert.is_true(err < 1e-14, err)
    local c, r = t[6], s:to_table()
    local want = { math.exp(c), math.log(c) / math.log(2), mgpu.erf(c), 1 / (1 + math.exp(-c)),
                   (math.exp(2 * c) - 1) / (math.exp(2 * c) + 1), c * c * c }
    for i = 1, 6 do assert.is_true(math.abs(r[i] - want[i]) <= 1e-14 * math.abs(want[i]), i) end
  end)

  it("propagates NaN through max and min", function()
    assert.matches("max%.NaN%.f32", lower(function(v) return mgpu.max(v, 1.0) end, "f32"))
    assert.matches("testp%.notanumber%.f64", lower(function(v) return mgpu.min(v, 1.0) end, "f64"))
  end)

  it("computes on Lua numbers in double precision", function()
    assert.near(0.8427007929497149, mgpu.erf(1), 1e-15)
    assert.near(-0.9999779095030014, mgpu.erf(-3), 1e-15)
    assert.near(1.00000000005e-10, mgpu.expm1(1e-10), 1e-24)
    assert.near(-0.6931471805599453, mgpu.log1p(-0.5), 1e-15)
    assert.near(0.7310585786300049, mgpu.logistic(1), 1e-15)
    assert.are.equal(2, mgpu.round(2.5))
    assert.are.equal(4, mgpu.round(3.5))
    assert.are.equal(-3, mgpu.round_away(-2.5))
    assert.are.equal(-2, mgpu.trunc(-2.7))
    assert.are.equal(-1, mgpu.sign(-4))
    assert.are.equal(8, mgpu.pow(2, 3))
    assert.is_true(mgpu.max(1, 0 / 0) ~= mgpu.max(1, 0 / 0))
  end)

  it("traces x ^ y as pow and rejects dtypes a function does not take", function()
    local k = mgpu.kernel{
      name = "p", grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
      body = function(x, o) local v = x:load(); o:store(v ^ 2 + mgpu.pow(v, v:abs())) end,
    }
    assert.matches("pow", k:lower(mgpu.zeros({ 128 }, "f32")).ir)
    local function fails(fn, dt, pat)
      local ok, err = pcall(lower, fn, dt)
      assert.is_false(ok)
      assert.matches(pat, tostring(err))
    end
    fails(function(v) return v:sin() end, "i32", "sin")
    fails(function(v) return v:clz() end, "f32", "clz")
    fails(function(v) return v:tanh() end, "i64", "tanh")
    fails(function(v) return v:round() end, "i16", "round")
  end)

  it("flushes subnormals in exp, exp2, log and log2 under approx_math only (the interpreter as the GPU)", function()
    local function run(ap)
      local k = mgpu.kernel{
        name = "ftz", grid = { 1 }, out_shape = { mgpu.shape({ 4 }, "f32"), mgpu.shape({ 4 }, "f32"),
                                                  mgpu.shape({ 4 }, "f32") },
        compiler_params = mgpu.CompilerParams{ approx_math = ap },
        body = function(x, l, e, t)
          local v = x:load()
          l:store(v:log2()); e:store(v:exp2()); t:store(v:tanh())
        end,
      }
      local l, e, t = k(mgpu.from_table({ 1e-40, -1e-40, -130, -0.0 }, "f32"))
      return l:to_table(), e:to_table(), t:to_table()
    end
    local l, e, t = run(true)
    assert.are.same({ -1 / 0, -1 / 0 }, { l[1], l[2] })      -- lg2.approx.ftz: a flushed input is +-0
    assert.are.same({ 1, 1, 0 }, { e[1], e[2], e[3] })      -- ex2.approx.ftz: 2^-130 flushed
    assert.is_true(1 / t[4] < 0)                             -- tanh(-0) = -0 either way
    l, e, t = run(false)
    assert.near(-132.877, l[1], 1e-3)
    assert.is_true(l[2] ~= l[2])
    assert.are.equal(2 ^ -130, e[3])
    assert.is_true(1 / t[4] < 0)
    assert.matches("lg2%.approx%.ftz%.f32", lower(function(v) return v:log() end, "f32", { approx_math = true }))
  end)

  it("shifts right logically or arithmetically whatever the signedness", function()
    local k = mgpu.kernel{
      name = "sh", grid = { 1 }, out_shape = { mgpu.shape({ 4 }, "i8"), mgpu.shape({ 4 }, "i8"),
                                                mgpu.shape({ 4 }, "u8"), mgpu.shape({ 4 }, "u8") },
      body = function(x, y, a, b, c, d)
        local v, u = x:load(), y:load()
        a:store(mgpu.shift_right_logical(v, 1)); b:store(v:shift_right_arithmetic(1))
        c:store(mgpu.shift_right_logical(u, 1)); d:store(u:shift_right_arithmetic(1))
      end,
    }
    local a, b, c, d = k(mgpu.from_table({ -128, -1, 6, 127 }, "i8"), mgpu.from_table({ 128, 255, 6, 127 }, "u8"))
    assert.are.same({ 64, 127, 3, 63 }, a:to_table())
    assert.are.same({ -64, -1, 3, 63 }, b:to_table())
    assert.are.same({ 64, 127, 3, 63 }, c:to_table())
    assert.are.same({ 192, 255, 3, 63 }, d:to_table())
  end)
end)
