--[[
Elementwise math cases: sin, cos, erf, logistic, expm1, log1p, pow, round,
round_away, trunc, sign, max/min (NaN), and integer clz, popcount, bitwise
ops and shifts, on random inputs plus special values (+-0, +-inf, NaN,
denormals, huge sin/cos arguments), for f32, f16, bf16 and f64 (also exp,
exp2, log, log2 and tanh for f64; the integer dtypes where the function
takes them).  Each case returns its error in ulps of the dtype against a
double-precision Lua reference (the exact value, not rounded) with the
documented bound as tolerance; for f64 the reference is itself a double
within an ulp or two, so the tolerance adds that (tol64).  Special values
must match exactly (inf, NaN, the sign of zero).  spec/math_spec.lua runs
them in the interpreter, tools/run_cases.lua on the GPU.
]]
local cases = {}
local function add(name, run) cases[#cases + 1] = { name = name, run = run } end

local N = 2048
local huge, nan = math.huge, 0 / 0
local unpack = table.unpack or unpack

-- -- Double-precision references ----------------------------------------------------------

local ref = {}
ref.erf = require("mgpu.ops").erf   -- the library's double-precision form for Lua numbers

function ref.expm1(x)
  local u = math.exp(x)
  if x == 0 or u == huge or x ~= x or x > 40 then return (x == 0 or x ~= x) and x or u end
  if u == 1 then return x end
  if u - 1 == -1 then return -1 end
  return (u - 1) * x / math.log(u)
end
function ref.log1p(x)
  local u = 1 + x
  if x == 0 or x ~= x then return x end
  if u == 1 or u == huge then return u == 1 and x or u end
  if u <= 0 then return u == 0 and -huge or nan end
  if u - 1 == x then return math.log(u) end
  return math.log(u) * x / (u - 1)
end
ref.logistic = require("mgpu.ops").logistic
ref.exp = math.exp
function ref.exp2(x) return 2 ^ x end
ref.log = math.log
function ref.log2(x) return math.log(x) / math.log(2) end
function ref.tanh(x)
  if x ~= x or x == 0 then return x end
  local m = ref.expm1(2 * math.abs(x))
  return (x < 0 and -1 or 1) * (m == huge and 1 or m / (m + 2))
end
-- The host's cos is 8 ulp off at the hardest double for argument reduction, 6381956970095103 * 2^797
-- (-4.68716592425462e-19 for -4.687165924254628e-19: 2000-bit arithmetic, mpmath), as measured in a
-- GPU run; that input's value is given here.  spec/c/test_ptxmath.c checks it against cosl as well.
local hardest = 6381956970095103 * 2 ^ 797
ref.sin = math.sin
function ref.cos(x) if math.abs(x) == hardest then return -4.687165924254628e-19 end return math.cos(x) end
local function negzero(x) return x == 0 and 1 / x < 0 end
local function with_sign(r, x) if r == 0 and (x < 0 or negzero(x)) then return -0.0 end return r end
local function trunc(x) if x ~= x or x == huge or x == -huge then return x end return with_sign(x >= 0 and math.floor(x) or -math.floor(-x), x) end
function ref.trunc(x) return trunc(x) end
function ref.round(x)         -- half to even
  if x ~= x or math.abs(x) >= 2 ^ 52 then return x end
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return with_sign(f, x)
end
function ref.round_away(x)
  local t = trunc(x)
  if math.abs(x - t) >= 0.5 then t = t + (x < 0 and -1 or 1) end
  return t
end
function ref.sign(x) if x ~= x or x == 0 then return x end return x > 0 and 1 or -1 end
function ref.pow(x, y)        -- C99 (Lua's ^ is C's pow; LuaJIT's too, special cases checked here)
  if y == 0 or x == 1 then return 1 end
  if x ~= x or y ~= y then return nan end
  if math.abs(x) == 1 and math.abs(y) == huge then return 1 end
  local yint = y == math.floor(y) or math.abs(y) == huge
  local odd = yint and math.abs(y) < 2 ^ 53 and y % 2 == 1
  if x < 0 and x > -huge and not yint then return nan end
  if x == 0 then
    local neg = negzero(x) and odd
    if y < 0 then return neg and -huge or huge end
    return neg and -0.0 or 0.0
  end
  local r = math.abs(x) ^ y
  if x < 0 and odd then r = -r end
  return r
end
function ref.max(a, b) if a ~= a or b ~= b then return nan end return math.max(a, b) end
function ref.min(a, b) if a ~= a or b ~= b then return nan end return math.min(a, b) end
cases.ref = ref

-- -- Error in ulps ------------------------------------------------------------------------------

local fmt = { f32 = { 24, -126 }, f16 = { 11, -14 }, bf16 = { 8, -126 }, f64 = { 53, -1022 } }

local function ulp(r, dt)
  local p, emin = fmt[dt][1], fmt[dt][2]
  local a = math.abs(r)
  local e = emin
  if a > 0 then
    e = math.floor(math.log(a) / math.log(2))
    while 2 ^ e > a do e = e - 1 end
    while 2 ^ (e + 1) <= a do e = e + 1 end
    if e < emin then e = emin end
  end
  return 2 ^ (e - p + 1)
end

local function rounded(mgpu, t, dt)
  if dt == "f64" then return t end
  return mgpu.host.from_table(t):round(dt):to_table()
end

-- max over elements of |got - ref| / ulp(ref); specials (inf, NaN, overflow,
-- zero signs unless opts.zero_sign == false) must match exactly (error 1e9).
-- opts.abs: measure |got - ref| / max(|ref|, abs) instead (approx_math bounds).
local function ulp_error(mgpu, out, refs, dt, opts, inputs)
  opts = opts or {}
  local got, rr = out:to_table(), rounded(mgpu, refs, dt)
  local worst, at = 0, 1
  for i = 1, #refs do
    local g, r, q = got[i], refs[i], rr[i]
    local e
    if r ~= r or q ~= q or g ~= g then
      e = (r ~= r) == (g ~= g) and 0 or 1e9
    elseif math.abs(q) == huge or math.abs(g) == huge then
      e = (q == g) and 0 or 1e9
    elseif opts.abs then
      e = math.abs(g - r) / math.max(math.abs(r), opts.abs)
    else
      e = math.abs(g - r) / ulp(r, dt)
      if q == 0 and g == 0 and opts.zero_sign ~= false and negzero(q) ~= negzero(g) then e = 1e9 end
    end
    if e > worst then worst, at = e, i end
  end
  if worst > (opts.tol or 1) and os.getenv("MGPU_MATH_VERBOSE") then
    io.stderr:write(string.format("  worst at %d: input %s got %.17g want %.17g\n", at,
                                  inputs and string.format("%.17g", inputs[at]) or "?", got[at], refs[at]))
  end
  return worst
end
cases.ulp_error = ulp_error

-- -- Inputs ---------------------------------------------------------------------------------

local specials = { 0.0, -0.0, huge, -huge, nan, 1, -1, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3, -3,
                   1e-40, -1e-40, 1.4e-45, 6e-8, -6e-8, 3.3895314e38, -3.3895314e38, 65504, -65504 }
local sincos_extra = { 1e30, -1e30, 3.4e38, 12345.678, 1e6, 1e10, 16777217, 1.5707964, 3.1415927, 6.2831855,
                       314.15927, 102940.81, 2 ^ 100, 2 ^ 120 + 2 ^ 100, 0.78539816, 0.7853982, 7.5e37 }

local function rng(seed)
  local s = seed
  return function()           -- a small LCG: reproducible on every Lua
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  end
end

-- n inputs: the specials, then draws from gen(u) for uniform u.
local function inputs(n, extra, gen, seed)
  local t, r = {}, rng(seed)
  for _, v in ipairs(specials) do t[#t + 1] = v end
  for _, v in ipairs(extra or {}) do t[#t + 1] = v end
  while #t < n do t[#t + 1] = gen(r) end
  return t
end

local function uniform(lo, hi) return function(r) return lo + (hi - lo) * r() end end
local function logmag(elo, ehi) return function(r) local m = 10 ^ (elo + (ehi - elo) * r()); return r() < 0.5 and -m or m end end
local function mix(...)
  local gens = { ... }
  return function(r) return gens[1 + math.floor(r() * #gens) % #gens](r) end
end

-- -- Kernels ----------------------------------------------------------------------------------

local function map_kernel(mgpu, name, nin, dt, f, approx, out_dt)
  return mgpu.kernel{
    name = name, grid = { N / 512 }, out_shape = mgpu.shape({ N }, out_dt or dt),
    compiler_params = mgpu.CompilerParams{ approx_math = approx or false },
    body = function(...)
      local refs = { ... }
      local blk = mgpu.ds(mgpu.program_id(0) * 512, 512)
      local vals = {}
      for i = 1, nin do vals[i] = refs[i]:at(blk):load() end
      refs[nin + 1]:at(blk):store(f(unpack(vals)))
    end,
  }
end

-- -- Unary float functions ----------------------------------------------------------------------

local wide = { f32 = true, bf16 = true, f64 = true }     -- dtypes with at least f32's exponent range
local function join(a, b) local t = {}; for _, v in ipairs(a) do t[#t + 1] = v end; for _, v in ipairs(b) do t[#t + 1] = v end; return t end
-- f64 only: its range (subnormals, overflow edges, arguments of sin/cos next to multiples of pi/2)
local f64_extra = { 1e-310, -1e-310, 5e-324, 1e300, -1e300, 1.7976931348623157e308, 2.2250738585072014e-308 }
local function e64(dt, t) return dt == "f64" and join(t, f64_extra) or t end
local function big(dt, e32, e16) return dt == "f64" and 300 or (wide[dt] and e32 or e16) end
local unary = {
  sin = function(dt) return mix(uniform(-10, 10), logmag(-6, big(dt, 38, 4.8))), e64(dt, join(sincos_extra, dt == "f64" and { 6381956970095103 * 2 ^ 797, 1.5707963267948966, 3.141592653589793, 1e22 } or {})) end,
  erf = function(dt) return mix(uniform(-5, 5), logmag(-8, 1), uniform(-7, 7)), e64(dt, { 3.9, 3.92, 4, -4.1, 1.4999, 1.5, 2.5, 5.9, 6 }) end,
  logistic = function(dt) return mix(uniform(-30, 30), uniform(wide[dt] and -120 or -18, wide[dt] and 120 or 18)), e64(dt, { 88, -88, -103, 17, dt == "f64" and -720 or -90, dt == "f64" and 745 or 90 }) end,
  expm1 = function(dt) return mix(uniform(-20, dt == "f64" and 709 or wide[dt] and 89 or 11), logmag(-12, 0)), e64(dt, { 88.7, 89, -104, 1e-9, -1e-9, 709.78, 709.79, -40, 45 }) end,
  log1p = function(dt) return mix(uniform(-1, 10), logmag(-12, 0), logmag(0, big(dt, 38, 4.8))), e64(dt, { -1, -0.999, -2, 1e-9, -1e-9, 1e-17, -1e-17, 1e300 }) end,
  exp = function(dt) return mix(uniform(-745, 709.7), logmag(-12, 1)), e64(dt, { 709.78, 709.79, 710, -708.4, -745.1, -745.2, -746 }) end,
  exp2 = function(dt) return mix(uniform(-1075, 1024), logmag(-12, 1)), e64(dt, { 1023.99, 1024, -1022.5, -1074, -1074.6, -1076 }) end,
  log = function(dt) return mix(function(r) return 10 ^ (r() * 616 - 308) end, uniform(0.5, 2), uniform(-1, 1)), e64(dt, { 1 + 2 ^ -52, 1 - 2 ^ -53, 0.7071067811865476, 1.4142135623730951 }) end,
  tanh = function(dt) return mix(uniform(-8, 8), logmag(-10, 2.5)), e64(dt, { 1e-9, -1e-9, 0.55, 19, 22, -40 }) end,
  round = function(dt) return mix(uniform(-10, 10), function(r) return math.floor(r() * 64 - 32) / 2 end,
                                  logmag(-3, wide[dt] and 38 or 4.8)), { 0.49999997, -0.49999997, 4.5, 5.5, -4.5, 8388609 } end,
  sign = function() return mix(uniform(-10, 10), logmag(-40, 38)), {} end,
}
unary.round_away, unary.trunc = unary.round, unary.round
unary.cos, unary.log2 = unary.sin, unary.log
-- the f64 tolerance: the bound of src/ptx/ptx_math64.c plus the reference's own error
local tol64 = { sin = 2, cos = 2, exp = 2, exp2 = 2, log = 2, log2 = 3, expm1 = 3, log1p = 3, logistic = 3, tanh = 5,
                erf = 12, pow = 2 }       -- erf: the reference (host erf in Lua) was seen 9 ulp off on fresh inputs

-- accurate bounds (ulps, interpreter and PTX), and approx_math bounds (relative with an absolute floor)
local approx = {
  sin = { tol = 2e-6, abs = 1, gen = uniform(-3.14159, 3.14159) },
  cos = { tol = 2e-6, abs = 1, gen = uniform(-3.14159, 3.14159) },
  erf = { tol = 2e-6, abs = 1e-3, gen = uniform(-5, 5) },
  logistic = { tol = 2e-5, abs = 1e-30, gen = uniform(-30, 30) },
  expm1 = { tol = 2e-5, abs = 1e-30, gen = mix(uniform(-20, 20), logmag(-8, 0)) },
  log1p = { tol = 2e-6, abs = 1e-30, gen = mix(uniform(-0.99, 10), logmag(-8, 0)) },
}

local names = { "sin", "cos", "erf", "logistic", "expm1", "log1p", "round", "round_away", "trunc", "sign",
                "exp", "exp2", "log", "log2", "tanh" }
for _, fn in ipairs(names) do
  local dts = { "f32", "f16", "bf16", "f64" }
  if fn:match("^exp2?$") or fn:match("^log2?$") or fn == "tanh" then dts = { "f64" } end   -- f32: the specials case
  for _, dt in ipairs(dts) do
    add(string.format("math/%s/%s", fn, dt), function(mgpu)
      local gen, extra = unary[fn](dt)
      local k = map_kernel(mgpu, string.format("m_%s_%s", fn, dt), 1, dt, function(x) return x[fn](x) end)
      local x = mgpu.from_table(inputs(N, extra, gen, #fn * 7 + #dt + os.time()), dt)
      local xt, want = x:to_table(), {}
      for i = 1, N do want[i] = ref[fn](xt[i]) end
      local exact = fn == "round" or fn == "round_away" or fn == "trunc" or fn == "sign"
      local tol = exact and 0 or dt == "f64" and tol64[fn] or 1
      return ulp_error(mgpu, k(x), want, dt, { tol = tol }, xt), tol
    end)
  end
  if approx[fn] then
    add(string.format("math/%s/f32/approx_math", fn), function(mgpu)
      local a = approx[fn]
      local k = map_kernel(mgpu, string.format("a_%s_f32", fn), 1, "f32", function(x) return x[fn](x) end, true)
      local t, r = {}, rng(99)
      for i = 1, N do t[i] = a.gen(r) end
      local x = mgpu.from_table(t, "f32")
      local xt, want = x:to_table(), {}
      for i = 1, N do want[i] = ref[fn](xt[i]) end
      return ulp_error(mgpu, k(x), want, "f32", { abs = a.abs, tol = a.tol }, xt), a.tol
    end)
  end
end

-- specials under approx_math keep their values (inf, NaN, limits)
add("math/specials/f32/approx_math", function(mgpu)
  local fns = { "erf", "logistic", "expm1", "log1p" }
  local outs = {}
  for i = 1, #fns do outs[i] = mgpu.shape({ 8 }, "f32") end
  local k = mgpu.kernel{
    name = "a_specials", grid = { 1 }, out_shape = outs,
    compiler_params = mgpu.CompilerParams{ approx_math = true },
    body = function(x, ...)
      local o, v = { ... }, x:load()
      for i, fn in ipairs(fns) do o[i]:store(v[fn](v)) end
    end,
  }
  local vals = { 0, huge, -huge, nan, -1, 200, -200, 1 }
  local res = { k(mgpu.from_table(vals, "f32")) }
  local err = 0
  for i, fn in ipairs(fns) do
    local want = {}
    for j = 1, #vals do want[j] = ref[fn](vals[j]) end
    err = math.max(err, ulp_error(mgpu, res[i], want, "f32", { abs = 1e-30, zero_sign = false }, vals))
  end
  return err, 1e-4
end)

-- the older functions at their special values: overflow, log 0, rsqrt 0, tanh -0, denormal
-- inputs and results.  Accurate: within 8 ulp, specials and zero signs exact.  approx_math:
-- exp, exp2, log and log2 flush f32 subnormal inputs and results to zero (ex2/lg2.approx.ftz,
-- the interpreter too), so their reference is taken at the flushed input and flushed (log of
-- a subnormal is -inf, exactly); everything else within 1e-4 relative.
local function flush32(v) if v ~= 0 and math.abs(v) < 2 ^ -126 then return v < 0 and -0.0 or 0.0 end return v end
for _, ap in ipairs({ false, true }) do
  add("math/exp-log-sqrt-tanh-specials/f32" .. (ap and "/approx_math" or ""), function(mgpu)
    local fns = { exp = math.exp, exp2 = function(x) return 2 ^ x end, log = math.log,
                  log2 = function(x) if x == 0 then return -huge end return math.log(x) / math.log(2) end,
                  sqrt = math.sqrt, rsqrt = function(x) return 1 / math.sqrt(x) end,
                  tanh = function(x)
                    if x ~= x or x == 0 then return x end
                    local m = ref.expm1(2 * math.abs(x))
                    return (x < 0 and -1 or 1) * (m == huge and 1 or m / (m + 2))
                  end }
    local order = { "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh" }
    local outs = {}
    for i = 1, #order do outs[i] = mgpu.shape({ 64 }, "f32") end
    local k = mgpu.kernel{
      name = "m_specials" .. (ap and "_a" or ""), grid = { 1 }, out_shape = outs,
      compiler_params = mgpu.CompilerParams{ approx_math = ap },
      body = function(x, ...)
        local o, v = { ... }, x:load()
        for i, fn in ipairs(order) do o[i]:store(v[fn](v)) end
      end,
    }
    local vals = { 0.0, -0.0, huge, -huge, nan, 1, -1, 88.7, 88.8, 89, 100, -87, -100, -103.9, -104, -200, 127.9,
                   128, -149, -150, 1e-45, 1e-40, 1e-38, 3.4e38, 0.5, 2, 10, 1e-30, 0.625, 0.6, 9, 20 }
    while #vals < 64 do vals[#vals + 1] = (#vals - 40) * 0.37 end
    local x = mgpu.from_table(vals, "f32")
    local xt, res = x:to_table(), { k(x) }
    local err = 0
    for i, fn in ipairs(order) do
      local want, ftz = {}, ap and (fn == "exp" or fn == "exp2" or fn == "log" or fn == "log2")
      for j = 1, #xt do want[j] = ftz and flush32(fns[fn](flush32(xt[j]))) or fns[fn](xt[j]) end
      local opts = ap and { abs = 1e-30, zero_sign = false, tol = 1e-4 } or { tol = 8 }
      err = math.max(err, ulp_error(mgpu, res[i], want, "f32", opts, xt))
    end
    return err, ap and 1e-4 or 8
  end)
end

-- -- pow ------------------------------------------------------------------------------------

for _, dt in ipairs({ "f32", "f16", "bf16", "f64" }) do
  for _, ap in ipairs({ false, true }) do
    if not ap or dt == "f32" or dt == "f64" then
      add(string.format("math/pow/%s%s", dt, ap and "/approx_math" or ""), function(mgpu)
        local sp = { 0.0, -0.0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, 2.5, huge, -huge, nan, 1e-40, 1e30 }
        local xs, ys, r = {}, {}, rng(#dt + (ap and 5 or 0) + os.time())
        local exact = not ap or dt == "f64"          -- f64 has no approximate form
        if exact then
          for i = 1, #sp do for j = 1, #sp do xs[#xs + 1], ys[#ys + 1] = sp[i], sp[j] end end
        end
        local big = wide[dt] and 1 or 0
        local lim = dt == "f64" and 709 or 80       -- |y ln x| up to the overflow threshold
        while #xs < N do
          local m = math.floor(r() * 5)
          if m == 0 then xs[#xs + 1], ys[#ys + 1] = r() * 10, r() * 20 - 10
          elseif m == 1 then xs[#xs + 1], ys[#ys + 1] = r() * 4, (r() - 0.5) * (big == 1 and 200 or 30)
          elseif m == 2 then xs[#xs + 1], ys[#ys + 1] = -r() * 10, math.floor(r() * 21) - 10
          elseif m == 3 and dt == "f64" then
            local x = 1 + (r() - 0.5) * 0.1
            xs[#xs + 1], ys[#ys + 1] = x, (r() * 2 - 1) * lim / math.abs(math.log(x))
          else xs[#xs + 1], ys[#ys + 1] = 10 ^ ((r() - 0.5) * (big == 1 and 60 or 8)), (r() - 0.5) * 4 end
          if ap and xs[#xs] < 0 then xs[#xs] = -xs[#xs] end
        end
        local k = map_kernel(mgpu, string.format("m_pow_%s%s", dt, ap and "_a" or ""), 2, dt,
                             function(a, b) return a ^ b end, ap)
        local x, y = mgpu.from_table(xs, dt), mgpu.from_table(ys, dt)
        local xt, yt, want = x:to_table(), y:to_table(), {}
        for i = 1, N do want[i] = ref.pow(xt[i], yt[i]) end
        if not exact then return ulp_error(mgpu, k(x, y), want, dt, { abs = 1e-30, tol = 1e-4 }, xt), 1e-4 end
        local tol = dt == "f64" and tol64.pow or 1
        return ulp_error(mgpu, k(x, y), want, dt, { tol = tol }, xt), tol
      end)
    end
  end
end

-- -- max/min: NaN propagates --------------------------------------------------------------------

for _, dt in ipairs({ "f32", "f16", "bf16", "f64" }) do
  add("math/max-min-nan/" .. dt, function(mgpu)
    local k = mgpu.kernel{
      name = "m_maxmin_" .. dt, grid = { N / 512 }, out_shape = { mgpu.shape({ N }, dt), mgpu.shape({ N }, dt) },
      body = function(a, b, mx, mn)
        local blk = mgpu.ds(mgpu.program_id(0) * 512, 512)
        local x, y = a:at(blk):load(), b:at(blk):load()
        mx:at(blk):store(mgpu.max(x, y))
        mn:at(blk):store(mgpu.min(x, y))
      end,
    }
    local xs, ys, r = {}, {}, rng(3)
    local sp = { 1, -1, 0.0, huge, -huge, nan, 2.5 }
    for i = 1, #sp do for j = 1, #sp do xs[#xs + 1], ys[#ys + 1] = sp[i], sp[j] end end
    while #xs < N do
      xs[#xs + 1], ys[#ys + 1] = (r() - 0.5) * 100, (r() - 0.5) * 100
      if r() < 0.1 then xs[#xs] = nan elseif r() < 0.1 then ys[#ys] = nan end
    end
    local x, y = mgpu.from_table(xs, dt), mgpu.from_table(ys, dt)
    local mx, mn = k(x, y)
    local xt, yt, wmax, wmin = x:to_table(), y:to_table(), {}, {}
    for i = 1, N do wmax[i], wmin[i] = ref.max(xt[i], yt[i]), ref.min(xt[i], yt[i]) end
    return math.max(ulp_error(mgpu, mx, wmax, dt, { zero_sign = false }), ulp_error(mgpu, mn, wmin, dt, { zero_sign = false })), 0
  end)
end

-- -- Integers: clz, popcount, sign, bitwise, shifts ---------------------------------------------------

local ibits = { i8 = 8, i16 = 16, i32 = 32, i64 = 64, u8 = 8, u16 = 16, u32 = 32, u64 = 64 }

-- bits of an integer value (two's complement within w bits), least significant first;
-- exact for |v| < 2^53
local function tobits(v, w)
  local neg = v < 0
  if neg then v = -v - 1 end
  local t = {}
  for i = 1, w do
    local h = math.floor(v / 2)
    t[i] = v - 2 * h
    if neg then t[i] = 1 - t[i] end
    v = h
  end
  return t
end
local function frombits(t, w, signed)
  local neg = signed and t[w] == 1
  local v = 0.0              -- a float: Lua 5.4 integers would wrap
  for i = w, 1, -1 do v = v * 2 + (neg and 1 - t[i] or t[i]) end
  return neg and -v - 1 or v
end

for _, dt in ipairs({ "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64" }) do
  add("math/int-bits/" .. dt, function(mgpu)
    local w, signed = ibits[dt], dt:sub(1, 1) == "i"
    local ops = { "clz", "popcount", "sign", "not", "and", "or", "xor", "shl", "shrl", "shra" }
    local outs = {}
    for i = 1, #ops do outs[i] = mgpu.shape({ N }, dt) end
    local k = mgpu.kernel{
      name = "m_int_" .. dt, grid = { N / 512 }, out_shape = outs,
      body = function(a, b, ...)
        local o = { ... }
        local blk = mgpu.ds(mgpu.program_id(0) * 512, 512)
        local x, y = a:at(blk):load(), b:at(blk):load()
        local r = { x:clz(), mgpu.popcount(x), mgpu.sign(x), mgpu.bitwise_not(x), mgpu.bitwise_and(x, y),
                    mgpu.bitwise_or(x, y), mgpu.bitwise_xor(x, y), mgpu.shift_left(x, y),
                    mgpu.shift_right_logical(x, y), x:shift_right_arithmetic(y) }
        for i = 1, #r do o[i]:at(blk):store(r[i]) end
      end,
    }
    -- values exactly representable in a double: 53 random bits at most for 64-bit dtypes
    local xs, ys, r = {}, {}, rng(w + (signed and 1 or 0))
    local lo, hi = signed and -2 ^ (w - 1) or 0, signed and 2 ^ (w - 1) - 1 or 2 ^ w - 1
    if w == 64 then lo, hi = signed and -2 ^ 52 or 0, 2 ^ 53 - 1 end
    local fixed = { 0, 1, hi, lo, signed and -1 or 2, 5 }
    for i = 1, N do
      local v = fixed[i] or math.floor(lo + (hi - lo + 1) * r())
      if not fixed[i] and r() < 0.3 then v = math.floor(v / 2 ^ math.floor(r() * w)) end
      xs[i] = v
      local s = math.floor(r() * (w + 4))                            -- amounts past the width too
      if signed and r() < 0.1 then s = -1 - math.floor(r() * 3) end  -- negative amounts
      if i <= #fixed then s = i % w end
      ys[i] = s
    end
    local x, y = mgpu.from_table(xs, dt), mgpu.from_table(ys, dt)
    local res = { k(x, y) }
    local xt, yt = x:to_table(), y:to_table()
    local bad = 0
    for i = 1, N do
      local bx, by = tobits(xt[i], w), tobits(yt[i], w)
      local amount = yt[i]
      if amount < 0 then amount = w end                  -- negative amounts count as huge
      local lz, pc = 0, 0
      for j = w, 1, -1 do if bx[j] == 1 then break end; lz = lz + 1 end
      for j = 1, w do pc = pc + bx[j] end
      local function bitwise(f) local t = {}; for j = 1, w do t[j] = f(bx[j], by[j]) end; return frombits(t, w, signed) end
      local function shifted(dir, fill)
        local t = {}
        for j = 1, w do
          local src = j - dir * amount
          t[j] = (src >= 1 and src <= w) and bx[src] or fill
        end
        return frombits(t, w, signed)
      end
      local want = {
        lz, pc, signed and (xt[i] > 0 and 1 or xt[i] < 0 and -1 or 0) or (xt[i] ~= 0 and 1 or 0),
        bitwise(function(p) return 1 - p end),
        bitwise(function(p, q) return p * q end),
        bitwise(function(p, q) return math.max(p, q) end),
        bitwise(function(p, q) return (p + q) % 2 end),
        shifted(1, 0), shifted(-1, 0), shifted(-1, bx[w]),
      }
      for j = 1, #want do
        local g = res[j]:get(i)
        if math.abs(want[j]) < 2 ^ 53 and g ~= want[j] then   -- values reach Lua as doubles
          bad = bad + 1
          if os.getenv("MGPU_MATH_VERBOSE") and bad < 5 then
            io.stderr:write(string.format("  %s %s(%s, %s) = %s want %s\n", dt, ops[j], xt[i], yt[i], tostring(g), want[j]))
          end
        end
      end
    end
    return bad, 0
  end)
end

return cases
