--[[
Numerical cases for every op: each builds a small kernel, runs it on fresh
random inputs (outputs poisoned first), and compares with a reference
computed in double precision in plain Lua.  The busted specs run them in
the interpreter; tools/gpu_check.lua runs the same cases on the GPU.

A case is { name = ..., run = function(mgpu) return err, tol end }: err is
the relative error ||out - ref|| / ||ref|| over positions where both are
finite, or math.huge when NaN positions differ.
]]
local cases = {}

local function add(name, run) cases[#cases + 1] = { name = name, run = run } end

local N, B = 2000, 512        -- not a multiple of the block: the last block is clipped
local function nblocks(n) return math.floor((n + B - 1) / B) end

-- Relative error of an output array against a table of references.
local function compare(mgpu, out, ref, dtype)
  local got = out:to_table()
  local num, den = 0, 0
  for i = 1, #ref do
    local r, g = ref[i], got[i]
    if type(g) == "boolean" then g = g and 1 or 0 end
    local rn, gn = r ~= r, g ~= g
    if rn ~= gn then return math.huge end
    if not rn and math.abs(r) ~= math.huge then
      num = num + (g - r) ^ 2
      den = den + r ^ 2
    elseif not rn and r ~= g then
      return math.huge
    end
  end
  if den == 0 then return math.sqrt(num) end
  return math.sqrt(num / den)
end
cases.compare = compare

-- Round a table of doubles to a dtype through a host array.
local function round(mgpu, t, dtype)
  if dtype == "f64" then return t end
  return mgpu.host.from_table(t):round(dtype):to_table()
end

local function trunc(x) return x >= 0 and math.floor(x) or math.ceil(x) end

-- A kernel applying f(loaded inputs...) blockwise over n elements.
local function map_kernel(mgpu, name, nin, out_dtype, f, opts)
  opts = opts or {}
  return mgpu.kernel{
    name = name, grid = { nblocks(N) }, out_shape = mgpu.shape({ N }, out_dtype),
    compiler_params = mgpu.CompilerParams{ approx_math = opts.approx or false },
    body = function(...)
      local refs = { ... }
      local blk = mgpu.ds(mgpu.program_id(0) * B, B)
      local vals = {}
      for i = 1, nin do vals[i] = refs[i]:at(blk):load() end
      refs[nin + 1]:at(blk):store(f((table.unpack or unpack)(vals)))
    end,
  }
end

-- -- Unary float ops ----------------------------------------------------------------------

local unary = {
  { "exp", -20, 20, math.exp },
  { "exp2", -20, 20, function(x) return 2 ^ x end },
  { "log", 1e-3, 1e3, math.log },
  { "log2", 1e-3, 1e3, function(x) return math.log(x) / math.log(2) end },
  { "sqrt", 0, 100, math.sqrt },
  { "rsqrt", 1e-2, 100, function(x) return 1 / math.sqrt(x) end },
  { "tanh", -4, 4, function(x) local e = math.exp(-2 * math.abs(x)); local t = (1 - e) / (1 + e); return x < 0 and -t or t end },
  { "abs", -10, 10, math.abs, true },
  { "neg", -10, 10, function(x) return -x end, true },
  { "floor", -10, 10, math.floor, true },
  { "ceil", -10, 10, math.ceil, true },
}
local float_tol = { f32 = 2e-6, bf16 = 1e-2, f16 = 2e-3 }

for _, u in ipairs(unary) do
  for _, dt in ipairs({ "f32", "bf16", "f16" }) do
    add(u[1] .. "/" .. dt, function(mgpu)
      local k = map_kernel(mgpu, "u_" .. u[1], 1, dt, function(x) return x[u[1]](x) end)
      local x = mgpu.random.uniform(N, dt, nil, u[2], u[3])
      local xt, ref = x:to_table(), {}
      for i = 1, N do ref[i] = u[4](xt[i]) end
      return compare(mgpu, k(x), round(mgpu, ref, dt)), u[5] and 0 or float_tol[dt]
    end)
  end
end

-- approximate math: same functions, looser bounds
for _, u in ipairs({ unary[1], unary[3], unary[5], unary[7] }) do
  add(u[1] .. "/f32/approx_math", function(mgpu)
    local k = map_kernel(mgpu, "a_" .. u[1], 1, "f32", function(x) return x[u[1]](x) end, { approx = true })
    local x = mgpu.random.uniform(N, "f32", nil, u[2], u[3])
    local xt, ref = x:to_table(), {}
    for i = 1, N do ref[i] = u[4](xt[i]) end
    return compare(mgpu, k(x), ref), 1e-4
  end)
end

-- special values through the accurate functions
add("exp-log-tanh/f32/specials", function(mgpu)
  local vals = { 0, -0.0, 1, -1, 1e-30, 88.5, 89, 100, -87, -104, -200, 1 / 0, -1 / 0, 0 / 0, 1e-40, 3e38 }
  local k = mgpu.kernel{
    name = "specials", grid = { 1 }, out_shape = { mgpu.shape({ #vals }, "f32"), mgpu.shape({ #vals }, "f32"),
                                                   mgpu.shape({ #vals }, "f32") },
    body = function(x, e, l, t)
      local v = x:load()
      e:store(v:exp()); l:store(v:abs():log()); t:store(v:tanh())
    end,
  }
  local e, l, t = k(mgpu.from_table(vals, "f32"))
  local xs = mgpu.from_table(vals, "f32"):to_table()
  local re, rl, rt = {}, {}, {}
  for i, x in ipairs(xs) do
    re[i] = math.exp(x); rl[i] = math.log(math.abs(x))
    if x ~= x then rt[i] = x elseif x == 1 / 0 then rt[i] = 1 elseif x == -1 / 0 then rt[i] = -1
    else local q = math.exp(-2 * math.abs(x)); rt[i] = (x < 0 and -1 or 1) * (1 - q) / (1 + q) end
  end
  local err = math.max(compare(mgpu, e, round(mgpu, re, "f32")), compare(mgpu, l, round(mgpu, rl, "f32")),
                       compare(mgpu, t, round(mgpu, rt, "f32")))
  return err, 2e-6
end)

-- -- Binary ops -----------------------------------------------------------------------------

local fbin = {
  { "add", function(a, b) return a + b end, true },
  { "sub", function(a, b) return a - b end, true },
  { "mul", function(a, b) return a * b end, true },
  { "div", function(a, b) return a / b end, true },
  { "max", math.max, true },
  { "min", math.min, true },
}
for _, o in ipairs(fbin) do
  for _, dt in ipairs({ "f32", "bf16", "f16", "f64" }) do
    add(o[1] .. "/" .. dt, function(mgpu)
      local k = map_kernel(mgpu, "b_" .. o[1], 2, dt, function(a, b)
        if o[1] == "max" then return a:maximum(b) elseif o[1] == "min" then return a:minimum(b) end
        if o[1] == "add" then return a + b elseif o[1] == "sub" then return a - b
        elseif o[1] == "mul" then return a * b else return a / b end
      end)
      local a = mgpu.random.normal(N, dt)
      local b = mgpu.random.uniform(N, dt, nil, 0.5, 4)
      local at, bt, ref = a:to_table(), b:to_table(), {}
      for i = 1, N do ref[i] = o[2](at[i], bt[i]) end
      return compare(mgpu, k(a, b), round(mgpu, ref, dt)), 0
    end)
  end
end

add("rem/f32", function(mgpu)
  local k = map_kernel(mgpu, "frem", 2, "f32", function(a, b) return a % b end)
  local a, b = mgpu.random.uniform(N, "f32", nil, -50, 50), mgpu.random.uniform(N, "f32", nil, 0.5, 7)
  local at, bt, ref = a:to_table(), b:to_table(), {}
  for i = 1, N do ref[i] = math.fmod(at[i], bt[i]) end
  return compare(mgpu, k(a, b), ref), 1e-5
end)

local ibin = {
  { "add", function(a, b) return a + b end },
  { "sub", function(a, b) return a - b end },
  { "mul", function(a, b) return a * b end },
  { "div", function(a, b) return trunc(a / b) end },
  { "rem", function(a, b) return a - trunc(a / b) * b end },
  { "max", math.max }, { "min", math.min },
}
for _, o in ipairs(ibin) do
  for _, dt in ipairs({ "i32", "i64", "i16", "u8" }) do
    add(o[1] .. "/" .. dt, function(mgpu)
      local k = map_kernel(mgpu, "i_" .. o[1], 2, dt, function(a, b)
        if o[1] == "max" then return mgpu.max(a, b) elseif o[1] == "min" then return mgpu.min(a, b) end
        if o[1] == "add" then return a + b elseif o[1] == "sub" then return a - b
        elseif o[1] == "mul" then return a * b elseif o[1] == "div" then return a / b else return a % b end
      end)
      local lo = dt == "u8" and 0 or -100
      local a = mgpu.random.uniform(N, dt, nil, lo, 100)
      local b = mgpu.random.uniform(N, dt, nil, 1, 12)
      local at, bt, ref = a:to_table(), b:to_table(), {}
      -- results stay in range except for i16 products and u8 differences, which wrap
      local wrap = { i16 = 2 ^ 16, u8 = 256 }
      for i = 1, N do
        local r = o[2](at[i], bt[i])
        if wrap[dt] then
          r = r % wrap[dt]
          if dt == "i16" and r >= 2 ^ 15 then r = r - wrap[dt] end
        end
        ref[i] = r
      end
      return compare(mgpu, k(a, b), ref), 0
    end)
  end
end

add("bitwise-shifts/i32", function(mgpu)
  local k = mgpu.kernel{
    name = "bits", grid = { nblocks(N) }, out_shape = { mgpu.shape({ N }, "i32"), mgpu.shape({ N }, "i32"),
                                                     mgpu.shape({ N }, "i32"), mgpu.shape({ N }, "i32") },
    body = function(a, s, o1, o2, o3, o4)
      local blk = mgpu.ds(mgpu.program_id(0) * B, B)
      local x, y = a:at(blk):load(), s:at(blk):load()
      o1:at(blk):store(x:band(255):bor(y):bxor(7))
      o2:at(blk):store(x:shl(y))
      o3:at(blk):store(x:shr(y))
      o4:at(blk):store(x:bnot())
    end,
  }
  local a, s = mgpu.random.uniform(N, "i32", nil, -5000, 5000), mgpu.random.uniform(N, "i32", nil, 0, 40)
  local r1, r2, r3, r4 = k(a, s)
  local at, st = a:to_table(), s:to_table()
  local e1, e2, e3, e4 = {}, {}, {}, {}
  local function w32(v) v = v % 2 ^ 32; return v >= 2 ^ 31 and v - 2 ^ 32 or v end
  local function bits(v) v = v % 2 ^ 32; local t = {}; for i = 1, 32 do t[i] = v % 2; v = math.floor(v / 2) end; return t end
  local function num(t) local v = 0; for i = 32, 1, -1 do v = v * 2 + t[i] end; return w32(v) end
  for i = 1, N do
    local x, y = at[i], st[i]
    local xb, yb = bits(x), bits(y)
    local t = {}
    for j = 1, 32 do
      local v = (j <= 8 and xb[j] or 0)
      v = (v == 1 or yb[j] == 1) and 1 or 0
      local seven = (j <= 3) and 1 or 0
      t[j] = v ~= seven and 1 or 0
    end
    e1[i] = num(t)
    e2[i] = y >= 32 and 0 or w32(x * 2 ^ y)
    e3[i] = y >= 32 and (x < 0 and -1 or 0) or math.floor(x / 2 ^ y)
    e4[i] = -x - 1
  end
  return math.max(compare(mgpu, r1, e1), compare(mgpu, r2, e2), compare(mgpu, r3, e3), compare(mgpu, r4, e4)), 0
end)

-- -- Comparisons, select --------------------------------------------------------------------

for _, dt in ipairs({ "f32", "bf16", "i32" }) do
  add("compare-select/" .. dt, function(mgpu)
    local names = { "lt", "le", "gt", "ge", "eq", "ne" }
    local outs = {}
    for i = 1, #names do outs[i] = mgpu.shape({ N }, "f32") end
    local k = mgpu.kernel{
      name = "cmp", grid = { nblocks(N) }, out_shape = outs,
      body = function(a, b, ...)
        local o = { ... }
        local blk = mgpu.ds(mgpu.program_id(0) * B, B)
        local x, y = a:at(blk):load(), b:at(blk):load()
        local one, mone = mgpu.const(1, "f32"), mgpu.const(-1, "f32")
        for i, nm in ipairs(names) do o[i]:at(blk):store(mgpu.select(x[nm](x, y), one, mone)) end
      end,
    }
    -- small integers so that equality happens; NaNs in the float cases
    local at, bt = {}, {}
    for i = 1, N do
      at[i] = math.random(-3, 3); bt[i] = math.random(-3, 3)
      if dt ~= "i32" and i % 97 == 0 then at[i] = 0 / 0 end
    end
    local res = { k(mgpu.from_table(at, dt), mgpu.from_table(bt, dt)) }
    local fns = { function(x, y) return x < y end, function(x, y) return x <= y end, function(x, y) return x > y end,
                  function(x, y) return x >= y end, function(x, y) return x == y end, function(x, y) return x ~= y end }
    local err = 0
    for j = 1, #names do
      local ref = {}
      for i = 1, N do ref[i] = fns[j](at[i], bt[i]) and 1 or -1 end
      err = math.max(err, compare(mgpu, res[j], ref))
    end
    return err, 0
  end)
end

-- -- Conversions ----------------------------------------------------------------------------

local conv = {
  { "f32", "bf16", -300, 300 }, { "f32", "f16", -70000, 70000 }, { "bf16", "f32", -5, 5 }, { "f16", "f32", -5, 5 },
  { "f16", "bf16", -5, 5 }, { "f32", "i32", -3e9, 3e9 }, { "f32", "u8", -50, 400 }, { "i32", "f32", -2e9, 2e9 },
  { "i32", "i16", -100000, 100000 }, { "i32", "f16", -70000, 70000 }, { "f32", "f64", -1e3, 1e3 },
  { "f64", "f32", -1e3, 1e3 }, { "i64", "i32", -1e10, 1e10 }, { "i32", "i64", -2e9, 2e9 },
}
for _, c in ipairs(conv) do
  add("astype/" .. c[1] .. "->" .. c[2], function(mgpu)
    local k = map_kernel(mgpu, "cvt", 1, c[2], function(x) return x:astype(c[2]) end)
    local x = mgpu.random.uniform(N, c[1], nil, c[3], c[4])
    local xt, ref = x:to_table(), {}
    local ints = { i32 = { -2 ^ 31, 2 ^ 31 - 1 }, u8 = { 0, 255 }, i16 = { -2 ^ 15, 2 ^ 15 - 1 } }
    for i = 1, N do
      local v = xt[i]
      local r = ints[c[2]]
      if r and c[1]:sub(1, 1) == "f" then          -- float -> int: truncate, saturate
        v = math.min(math.max(trunc(v), r[1]), r[2])
      elseif r and c[1]:sub(1, 1) == "i" then       -- int -> narrower int: wrap
        local span = r[2] - r[1] + 1
        v = (v - r[1]) % span + r[1]
      end
      ref[i] = v
    end
    if c[2] == "f16" and c[1] == "i32" then ref = round(mgpu, round(mgpu, ref, "f32"), "f16") end
    return compare(mgpu, k(x), round(mgpu, ref, c[2])), 0
  end)
end

add("bitcast/f32<->i32", function(mgpu)
  local k = mgpu.kernel{
    name = "bitcast", grid = { 1 }, out_shape = { mgpu.shape({ 256 }, "i32"), mgpu.shape({ 256 }, "f32") },
    body = function(x, bits, back)
      local v = x:load():bitcast("i32")
      bits:store(v)
      back:store((v + 0):bitcast("f32"))
    end,
  }
  local vals = {}
  for i = 1, 256 do vals[i] = (i - 128) * 0.25 end
  vals[129], vals[130] = 1.0, -2.0
  local x = mgpu.from_table(vals, "f32")
  local bits, back = k(x)
  local bt = bits:to_table()
  local ok = bt[129] == 0x3f800000 and bt[130] == -1073741824
  return (ok and 0 or 1) + compare(mgpu, back, x:to_table()), 0
end)

-- -- Broadcast, scalars, refs -----------------------------------------------------------------

add("scalar-load-broadcast", function(mgpu)
  local k = mgpu.kernel{
    name = "scal", grid = { 3 }, out_shape = { mgpu.shape({ 3, 200 }, "f32"), mgpu.shape({}, "f32") },
    body = function(s, o, total)
      local i = mgpu.program_id(0)
      local v = s:load() * (i + 1):astype("f32")
      o:at(i):store(v:broadcast_to({ 200 }) + 1.0)
      mgpu.when(mgpu.eq(i, 2), function() total:store(v) end)
    end,
  }
  local o, total = k(mgpu.full({}, 1.5, "f32"))
  local ref = {}
  for r = 1, 3 do for c = 1, 200 do ref[(r - 1) * 200 + c] = 1.5 * r + 1 end end
  return math.max(compare(mgpu, o, ref), compare(mgpu, total, { 4.5 })), 0
end)

add("views-2d-rows-columns", function(mgpu)
  local R, C = 37, 96
  local k = mgpu.kernel{
    name = "views", grid = { 5 }, out_shape = { mgpu.shape({ R, C }, "f32"), mgpu.shape({ C }, "f32") },
    body = function(x, rows, col)
      local i = mgpu.program_id(0)
      local blk = mgpu.ds(i * 8, 8)                  -- 8-row blocks; the last one is clipped
      rows:at(blk, mgpu.all):store(x:at(blk):load() * 2.0)
      mgpu.when(mgpu.eq(i, 0), function()            -- a strided view: column 5
        col:at(mgpu.ds(0, R)):store(x:at(mgpu.all, 5):load())
      end)
    end,
  }
  local x = mgpu.random.normal({ R, C }, "f32")
  local rows, col = k(x)
  local xt, r1, r2 = x:to_table(), {}, {}
  for i = 1, R * C do r1[i] = 2 * xt[i] end
  for i = 1, R do r2[i] = xt[(i - 1) * C + 6] end
  local ct = col:to_table()
  for i = R + 1, C do r2[i] = ct[i] end              -- not written: keeps the poison (NaN)
  return math.max(compare(mgpu, rows, r1), compare(mgpu, col, r2)), 0
end)

add("views-nested-squeezed", function(mgpu)
  local k = mgpu.kernel{
    name = "nested", grid = { 2, 3 }, out_shape = mgpu.shape({ 2, 3, 64 }, "bf16"),
    body = function(x, o)
      local a, b = mgpu.program_id(0), mgpu.program_id(1)
      local plane = x:at(a)                          -- (3, 128)
      local row = plane:at(b)                        -- (128)
      o:at(a, b):store(row:at(mgpu.ds(64, 64)):load() + row:at(mgpu.ds(0, 64)):load())
    end,
  }
  local x = mgpu.random.normal({ 2, 3, 128 }, "bf16")
  local xt, ref = x:to_table(), {}
  for a = 0, 1 do for b = 0, 2 do for c = 1, 64 do
    local base = (a * 3 + b) * 128
    ref[(a * 3 + b) * 64 + c] = xt[base + 64 + c] + xt[base + c]
  end end end
  return compare(mgpu, k(x), round(mgpu, ref, "bf16")), 0
end)

-- Views taken by a traced integer index past the array's end: the whole view is outside, so loads
-- read zeros and stores write nothing (the lowering's branch around the access); in the plain
-- layout and in the wgmma fragment's (tiled) one.
add("views-traced-index-past-end", function(mgpu)
  local k = mgpu.kernel{
    name = "past_end", grid = { 6 },
    out_shape = { mgpu.shape({ 4, 128 }, "f32"), mgpu.shape({ 6, 128 }, "f32"), mgpu.shape({ 4, 64, 8 }, "f32") },
    body = function(x, w, o, o2, ow)
      local i = mgpu.program_id(0)
      local v = x:at(i):load()                       -- rows 4 and 5 do not exist: zeros
      o:at(i):store(v * 2.0)                         -- blocks 4 and 5 write nothing
      o2:at(i):store(v + 1.0)
      ow:at(i):store(w:at(i):load{ layout = mgpu.Layout.WGMMA } * 3.0)
    end,
  }
  local x, w = mgpu.random.normal({ 4, 128 }, "f32"), mgpu.random.normal({ 4, 64, 8 }, "f32")
  local o, o2, ow = k(x, w)
  local xt, wt, r1, r2, r3 = x:to_table(), w:to_table(), {}, {}, {}
  for i = 1, 4 * 128 do r1[i] = 2 * xt[i]; r2[i] = xt[i] + 1 end
  for i = 4 * 128 + 1, 6 * 128 do r2[i] = 1 end
  for i = 1, 4 * 64 * 8 do r3[i] = 3 * wt[i] end
  return math.max(compare(mgpu, o, r1), compare(mgpu, o2, r2), compare(mgpu, ow, r3)), 1e-6
end)

-- -- Control flow, grids and warpgroups --------------------------------------------------------

add("fori-carry-arrays", function(mgpu)
  local k = mgpu.kernel{
    name = "fori", grid = { 1 }, out_shape = { mgpu.shape({ 512 }, "f32"), mgpu.shape({}, "i32") },
    body = function(x, o, count)
      local v = x:load()
      local acc, n = mgpu.fori(0, 10, function(i, acc, n)
        return acc + v * i:astype("f32"), n + 1
      end, mgpu.broadcast(0, { 512 }, "f32"), 0)
      o:store(acc)
      count:store(n)
    end,
  }
  local x = mgpu.random.normal(512, "f32")
  local o, count = k(x)
  local xt, ref = x:to_table(), {}
  for i = 1, 512 do local s = 0; for j = 0, 9 do s = s + xt[i] * j end; ref[i] = s end
  return math.max(compare(mgpu, o, ref), compare(mgpu, count, { 10 })), 1e-6
end)

add("while-loop", function(mgpu)
  -- Collatz steps of each block's start value: a trip count known only on the device,
  -- with an array carried alongside (doubled every step) and a loop that runs zero times
  local starts = { 1, 6, 27, 97 }
  local k = mgpu.kernel{
    name = "while", grid = { 4 }, out_shape = { mgpu.shape({ 4, 128 }, "f32"), mgpu.shape({ 4 }, "i32") },
    body = function(x, n0, o, steps)
      local i = mgpu.program_id(0)
      local _, count, v = mgpu.while_loop(function(n) return mgpu.ne(n, 1) end, function(n, c, v)
        local half = n / 2
        return mgpu.select(mgpu.eq(n % 2, 0), half, n * 3 + 1), c + 1, v * 1.5
      end, n0:at(i):load(), 0, x:at(i):load())
      o:at(i):store(v)
      steps:at(i):store(count)
    end,
  }
  local x = mgpu.random.normal({ 4, 128 }, "f32")
  local o, steps = k(x, mgpu.from_table(starts, "i32"))
  local want_steps, ref, xt = {}, {}, x:to_table()
  for b = 1, 4 do
    local n, c = starts[b], 0
    while n ~= 1 do n = n % 2 == 0 and math.floor(n / 2) or 3 * n + 1; c = c + 1 end
    want_steps[b] = c
    for j = 1, 128 do ref[(b - 1) * 128 + j] = xt[(b - 1) * 128 + j] * 1.5 ^ c end
  end
  return math.max(compare(mgpu, o, ref), compare(mgpu, steps, want_steps)), 1e-6
end)

add("dynamic-scheduling", function(mgpu)
  -- 3 warpgroups per block, the last claims; every item visited once, the counter left at zero
  local items, workers = 1000, 40
  local k = mgpu.kernel{
    name = "dyn", grid = { workers }, grid_names = { "b" }, num_threads = 3, thread_name = "wg",
    out_shape = mgpu.shape({ items }, "i32"),
    body = function(counter, visits)
      mgpu.dynamic_scheduling_loop("b", { counter = counter, grid = { items }, thread_axis = "wg" }, function(info)
        mgpu.when(mgpu.eq(mgpu.axis_index("wg"), 1), function() mgpu.atomic_add(visits:at(info.index[1]), 1) end)
      end)
    end,
  }
  local counter, bad = mgpu.zeros({ 2 }, "i32"), 0
  for _ = 1, 3 do
    local visits = mgpu.zeros({ items }, "i32")
    k:call_into(visits, counter)
    for _, v in ipairs(visits:to_table()) do if v ~= 1 then bad = bad + 1 end end
    for _, v in ipairs(counter:to_table()) do if v ~= 0 then bad = bad + 1 end end
  end
  return bad, 0
end)

add("cond-when", function(mgpu)
  local k = mgpu.kernel{
    name = "cond", grid = { 4 }, out_shape = mgpu.shape({ 4, 128 }, "f32"),
    body = function(x, o)
      local i = mgpu.program_id(0)
      local v = x:at(i):load()
      local r = mgpu.cond(mgpu.lt(i, 2), function() return v + 1.0 end, function() return v * -1.0 end)
      o:at(i):store(r)
      mgpu.when(mgpu.eq(i, 3), function() o:at(i):store(v:abs()) end)
    end,
  }
  local x = mgpu.random.normal({ 4, 128 }, "f32")
  local xt, ref = x:to_table(), {}
  for i = 0, 3 do for c = 1, 128 do
    local v = xt[i * 128 + c]
    ref[i * 128 + c] = i < 2 and v + 1 or (i == 3 and math.abs(v) or -v)
  end end
  return compare(mgpu, k(x), round(mgpu, ref, "f32")), 0
end)

add("grid-3d-and-warpgroups", function(mgpu)
  local k = mgpu.kernel{
    name = "ids", grid = { 2, 3, 4 }, grid_names = { "a", "b", "c" }, num_threads = 2, thread_name = "wg",
    out_shape = mgpu.shape({ 2, 3, 4, 2, 128 }, "i32"),
    body = function(o)
      local a, b, c, wg = mgpu.axis_index("a"), mgpu.axis_index("b"), mgpu.axis_index("c"), mgpu.axis_index("wg")
      local code = ((a * mgpu.num_programs(1) + b) * mgpu.num_programs(2) + c) * 10 + wg
      o:at(a, b, c, wg):store(code)
    end,
  }
  local o = k():to_table()
  local ref = {}
  for a = 0, 1 do for b = 0, 2 do for c = 0, 3 do for w = 0, 1 do for l = 1, 128 do
    ref[#ref + 1] = ((a * 3 + b) * 4 + c) * 10 + w
  end end end end end
  return compare(mgpu, mgpu.from_table(o, "i32"), ref), 0
end)

-- Grids past 3 axes fold their leading axes into CUDA's z: every logical index and size.
add("grid-5d-folded", function(mgpu)
  local G = { 3, 2, 5, 4, 6 }
  local names = { "a", "b", "c", "d", "e" }
  local k = mgpu.kernel{
    name = "ids5", grid = G, grid_names = names, num_threads = 2, thread_name = "wg",
    out_shape = { mgpu.shape({ 3, 2, 5, 4, 6, 2, 128 }, "i32"), mgpu.shape({ 3, 2, 5, 4, 6 }, "i32") },
    body = function(o, sz)
      local id = {}
      for i = 1, 5 do id[i] = mgpu.program_id(i - 1) end
      local flat = mgpu.axis_index(names)                        -- row-major over the five axes
      local code = flat * 100 + mgpu.axis_index({ "e", "wg" }) * 4 + mgpu.axis_index("c") % 4
      o:at(id[1], id[2], id[3], id[4], id[5], mgpu.axis_index("wg")):store(code)
      local n = mgpu.axis_size(names) * 1000 + mgpu.num_programs(0) * 100 + mgpu.num_programs(2) * 10
                + mgpu.axis_size({ "d", "wg" })
      sz:at(id[1], id[2], id[3], id[4], id[5]):store(n)
    end,
  }
  local o, sz = k()
  local ref, ref2, flat = {}, {}, 0
  for a = 0, 2 do for b = 0, 1 do for c = 0, 4 do for d = 0, 3 do for e = 0, 5 do
    for w = 0, 1 do for _ = 1, 128 do ref[#ref + 1] = flat * 100 + (e * 2 + w) * 4 + c % 4 end end
    ref2[#ref2 + 1] = 720 * 1000 + 3 * 100 + 5 * 10 + 8
    flat = flat + 1
  end end end end end
  return math.max(compare(mgpu, o, ref), compare(mgpu, sz, ref2)), 0
end)

-- A 4-D grid in clusters along x and along the folded z axis.
add("grid-4d-cluster", function(mgpu)
  local k = mgpu.kernel{
    name = "ids4c", grid = { 2, 3, 2, 4 }, cluster = { 2, 1, 2 }, cluster_names = { "cx", "cy", "cz" },
    out_shape = mgpu.shape({ 2, 3, 2, 4, 2, 2, 128 }, "i32"),
    body = function(o)
      local p = {}
      for i = 1, 4 do p[i] = mgpu.program_id(i - 1) end
      local cx, cz = mgpu.axis_index("cx"), mgpu.axis_index("cz")
      local flat = ((p[1] * 3 + p[2]) * 2 + p[3]) * 4 + p[4]
      o:at(p[1], p[2], p[3], p[4], cz, cx):store(flat * 4 + cz * 2 + cx)
    end,
  }
  local ref, flat = {}, 0
  for _ = 1, 48 do
    for cz = 0, 1 do for cx = 0, 1 do for _ = 1, 128 do ref[#ref + 1] = flat * 4 + cz * 2 + cx end end end
    flat = flat + 1
  end
  return compare(mgpu, k(), ref), 0
end)

add("scalar-arguments", function(mgpu)
  local k = mgpu.kernel{
    name = "scalars", grid = { nblocks(N) }, out_shape = function(x) return mgpu.shape(x.shape, "f32") end,
    body = function(x, a, n, h, o)
      local blk = mgpu.ds(mgpu.program_id(0) * B, B)
      local v = x:at(blk):load() * a + n:astype("f32") + h:astype("f32")
      o:at(blk):store(v)
    end,
  }
  local x = mgpu.random.normal(N, "f32")
  local o = k(x, 2.5, 7, mgpu.scalar(-1.5, "bf16"))
  local xt, ref = x:to_table(), {}
  for i = 1, N do ref[i] = xt[i] * 2.5 + 7 - 1.5 end
  local o2 = k(x, 0.5, -3, mgpu.scalar(4, "bf16"))   -- new values, same trace
  local ref2 = {}
  for i = 1, N do ref2[i] = xt[i] * 0.5 - 3 + 4 end
  return math.max(compare(mgpu, o, ref), compare(mgpu, o2, ref2)), 1e-6   -- three roundings
end)

-- -- Layouts, reductions, broadcasts ------------------------------------------------------

-- reference reductions of a row-major (R, C) table
local function reduce_ref(t, R, C, axis, f, init)
  local out = {}
  for i = 1, (axis == 1 and R or C) do out[i] = init end
  for r = 1, R do for c = 1, C do
    local o = axis == 1 and r or c
    out[o] = f(out[o], t[(r - 1) * C + c])
  end end
  return out
end
local function add2(a, b) return a + b end

for _, cfg in ipairs({ { "rows", nil, 64, 1024 }, { "wgmma", "WGMMA", 128, 64 } }) do
  for _, dt in ipairs({ "f32", "bf16", "i32" }) do
    add("reduce/" .. cfg[1] .. "/" .. dt, function(mgpu)
      local R, C = cfg[3], cfg[4]
      local lay = cfg[2] and mgpu.Layout[cfg[2]]
      local outs = { mgpu.shape({ R }, dt), mgpu.shape({ R }, dt), mgpu.shape({ R }, dt), mgpu.shape({ C }, dt),
                     mgpu.shape({ C }, dt) }
      local k = mgpu.kernel{
        name = "red_" .. cfg[1], grid = { 1 }, out_shape = outs,
        body = function(x, s1, m1, n1, s0, m0)
          local v = x:load{ layout = lay }
          s1:store(v:sum(1)); m1:store(v:max(1)); n1:store(v:min(1))
          if lay then s0:store(v:sum(0)); m0:store(v:max(0))   -- across warps: through SMEM
          else s0:store(mgpu.broadcast(0, { C }, dt)); m0:store(mgpu.broadcast(0, { C }, dt)) end
        end,
      }
      local x = dt == "i32" and mgpu.random.uniform({ R, C }, dt, nil, -1000, 1000) or mgpu.random.normal({ R, C }, dt)
      local res = { k(x) }
      local xt = x:to_table()
      local big = -math.huge
      local refs = { reduce_ref(xt, R, C, 1, add2, 0), reduce_ref(xt, R, C, 1, math.max, -math.huge),
                     reduce_ref(xt, R, C, 1, math.min, math.huge) }
      if lay then
        refs[4] = reduce_ref(xt, R, C, 0, add2, 0); refs[5] = reduce_ref(xt, R, C, 0, math.max, big)
      else
        refs[4], refs[5] = {}, {}
        for i = 1, C do refs[4][i] = 0; refs[5][i] = 0 end
      end
      local err = 0
      for i = 1, 5 do
        local ref = (dt == "bf16" and (i == 1 or i == 4)) and round(mgpu, refs[i], "bf16") or refs[i]
        err = math.max(err, compare(mgpu, res[i], ref))
      end
      return err, dt == "bf16" and 1e-2 or (dt == "f32" and 1e-6 or 0)
    end)
  end
end

add("reduce/strided-full", function(mgpu)
  local n = 3001
  local k = mgpu.kernel{
    name = "fullsum", grid = { 1 }, out_shape = { mgpu.shape({}, "f32"), mgpu.shape({}, "f32"), mgpu.shape({}, "f32") },
    body = function(x, s, mx, mean)
      local v = x:load()
      s:store(v:sum()); mx:store(v:max()); mean:store(v:mean())
    end,
  }
  local x = mgpu.random.uniform(n, "f32", nil, 1, 2)   -- positive: padding must not count
  local s, mx, mean = k(x)
  local xt, tot, big = x:to_table(), 0, -math.huge
  for i = 1, n do tot = tot + xt[i]; big = math.max(big, xt[i]) end
  return math.max(compare(mgpu, s, { tot }), compare(mgpu, mx, { big }), compare(mgpu, mean, { tot / n })), 1e-6
end)

add("softmax-rows/bf16", function(mgpu)
  local R, C = 16, 512
  local k = mgpu.kernel{
    name = "softmax", grid = { 2 }, out_shape = mgpu.shape({ R, C }, "bf16"),
    body = function(x, o)
      local rows = mgpu.ds(mgpu.program_id(0) * 8, 8)
      local v = x:at(rows):load():astype("f32")
      local p = (v - v:max(1)):exp()             -- (8, C) - (8,): broadcast over columns
      o:at(rows):store((p / p:sum(1)):astype("bf16"))
    end,
  }
  local x = mgpu.random.normal({ R, C }, "bf16", nil, 0, 3)
  local xt, ref = x:to_table(), {}
  for r = 0, R - 1 do
    local m, sum = -math.huge, 0
    for c = 1, C do m = math.max(m, xt[r * C + c]) end
    for c = 1, C do sum = sum + math.exp(xt[r * C + c] - m) end
    for c = 1, C do ref[r * C + c] = math.exp(xt[r * C + c] - m) / sum end
  end
  return compare(mgpu, k(x), ref), 1e-2
end)

add("iota-layouts", function(mgpu)
  local k = mgpu.kernel{
    name = "iota", grid = { 1 }, out_shape = { mgpu.shape({ 128, 64 }, "i32"), mgpu.shape({ 128, 64 }, "f32"),
                                               mgpu.shape({ 32, 128 }, "f32") },
    body = function(a, b, c)
      a:store(mgpu.broadcasted_iota("i32", { 128, 64 }, 1, { layout = mgpu.Layout.WGMMA }))
      b:store(mgpu.broadcasted_iota("f32", { 128, 64 }, 0, { layout = mgpu.Layout.WGMMA }))
      c:store(mgpu.broadcasted_iota("f32", { 4096 }, 0):reshape({ 32, 128 }))   -- strided, reshaped
    end,
  }
  local a, b, c = k()
  local ra, rb, rc = {}, {}, {}
  for r = 0, 127 do for col = 0, 63 do ra[#ra + 1] = col; rb[#rb + 1] = r end end
  for i = 0, 4095 do rc[i + 1] = i end
  return math.max(compare(mgpu, a, ra), compare(mgpu, b, rb), compare(mgpu, c, rc)), 0
end)

add("wgmma-layout-elementwise-and-rows", function(mgpu)
  local k = mgpu.kernel{
    name = "wgrows", grid = { 2 }, out_shape = mgpu.shape({ 256, 32 }, "f32"),
    body = function(x, o)
      local blk = mgpu.ds(mgpu.program_id(0) * 128, 128)
      local v = mgpu.layout_cast(x:at(blk):load(), mgpu.Layout.WGMMA)
      local scale = v:abs():max(1)                      -- in WGMMA:reduce(1), shuffles only
      o:at(blk):store(v / (scale + 1.0))
    end,
  }
  local x = mgpu.random.normal({ 256, 32 }, "f32")
  local xt, ref = x:to_table(), {}
  for r = 0, 255 do
    local m = 0
    for c = 1, 32 do m = math.max(m, math.abs(xt[r * 32 + c])) end
    for c = 1, 32 do ref[r * 32 + c] = xt[r * 32 + c] / (m + 1) end
  end
  return compare(mgpu, k(x), round(mgpu, ref, "f32")), 1e-6
end)

add("lane-semantics", function(mgpu)
  local k = mgpu.kernel{
    name = "lane", grid = { 1 }, compiler_params = mgpu.CompilerParams{ lowering_semantics = "Lane" },
    out_shape = mgpu.shape({ 1024 }, "f32"),
    body = function(x, o) o:store(x:load() * 3.0 + x:load():sum()) end,
  }
  local x = mgpu.random.uniform(1024, "f32")
  local xt, tot, ref = x:to_table(), 0, {}
  for i = 1, 1024 do tot = tot + xt[i] end
  for i = 1, 1024 do ref[i] = xt[i] * 3 + tot end
  return compare(mgpu, k(x), ref), 1e-6
end)

add("kernel-interpret-flag", function(mgpu)
  -- interpret = true runs in the interpreter even on a GPU (buffers are copied)
  local k = mgpu.kernel{ name = "interp", grid = { 2 }, interpret = true, out_shape = mgpu.shape({ 2, 130 }, "f32"),
    body = function(x, o) local i = mgpu.program_id(0); o:at(i):store(x:at(i):load():exp()) end }
  local x = mgpu.random.normal({ 2, 130 }, "f32")
  local xt, ref = x:to_table(), {}
  for i = 1, 260 do ref[i] = math.exp(xt[i]) end
  return compare(mgpu, k(x), round(mgpu, ref, "f32")), 0
end)

-- -- SMEM: transforms, layouts, views, scopes ------------------------------------------------

-- x goes GMEM -> registers (layout a) -> SMEM (transforms) -> registers (layout b) -> GMEM:
-- every element must come back exactly, whichever threads moved it.
local smem_cfgs = {
  { "plain", {} },
  { "tiled", function(T, el) return { T.tiling{ 8, math.floor(128 / el) } } end },
  { "swz128", function(T, el) return { T.tiling{ 8, math.floor(128 / el) }, T.swizzle(128) } end },
  { "swz64", function(T, el) return { T.tiling{ 8, math.floor(64 / el) }, T.swizzle(64) } end },
  { "swz32", function(T, el) return { T.tiling{ 8, math.floor(32 / el) }, T.swizzle(32) } end },
  { "transposed", function(T, el) return { T.transpose{ 1, 0 }, T.tiling{ 8, math.floor(128 / el) }, T.swizzle(128) } end },
}
local smem_layouts = { { "strided", nil }, { "wgmma", "WGMMA" } }
for _, cfg in ipairs(smem_cfgs) do
  for _, dt in ipairs({ "f32", "bf16", "i8" }) do
    for _, la in ipairs(smem_layouts) do
      for _, lb in ipairs(smem_layouts) do
        if not (dt == "i8" and (la[2] or lb[2] or cfg[1] == "transposed")) then
          add(string.format("smem/%s/%s/%s-%s", cfg[1], dt, la[1], lb[1]), function(mgpu)
            local el = ({ f32 = 4, bf16 = 2, i8 = 1 })[dt]
            local xf = type(cfg[2]) == "function" and cfg[2](mgpu.transforms, el) or cfg[2]
            local R, C = 64, 128
            local k = mgpu.kernel{
              name = "smem_rt", grid = { 2 }, out_shape = mgpu.shape({ 2 * R, C }, dt),
              scratch_shapes = { mgpu.SMEM({ R, C }, dt, { transforms = xf }) },
              body = function(x, o, s)
                local blk = mgpu.ds(mgpu.program_id(0) * R, R)
                s:store(x:at(blk):load{ layout = la[2] and mgpu.Layout[la[2]] })
                o:at(blk):store(s:load{ layout = lb[2] and mgpu.Layout[lb[2]] })
              end,
            }
            local x = dt == "i8" and mgpu.random.uniform({ 2 * R, C }, dt, nil, -100, 100)
                      or mgpu.random.normal({ 2 * R, C }, dt)
            return compare(mgpu, k(x), x:to_table()), 0
          end)
        end
      end
    end
  end
end

add("smem/dynamic-slots-and-views", function(mgpu)
  local T = mgpu.transforms
  local R, C = 32, 64
  local k = mgpu.kernel{
    name = "smem_slots", grid = { 4 }, out_shape = { mgpu.shape({ 4, R, C }, "bf16"), mgpu.shape({ 4, 16, C }, "bf16") },
    scratch_shapes = { mgpu.SMEM({ 3, R, C }, "bf16", { transforms = { T.tiling{ 8, 64 }, T.swizzle(128) } }) },
    body = function(x, o, o2, s)
      local i = mgpu.program_id(0)
      local slot = i % 3                                  -- a dynamic slot index
      s:at(slot):store(x:at(i):load() * 2.0)
      o:at(i):store(s:at(slot):load())
      o2:at(i):store(s:at(slot, mgpu.ds(8, 16)):load())    -- a static sub-view (rows 8..23)
    end,
  }
  local x = mgpu.random.normal({ 4, R, C }, "bf16")
  local o, o2 = k(x)
  local xt, ref, ref2 = x:to_table(), {}, {}
  for i = 1, #xt do ref[i] = 2 * xt[i] end
  for b = 0, 3 do for r = 0, 15 do for c = 1, C do
    ref2[#ref2 + 1] = 2 * xt[b * R * C + (r + 8) * C + c]
  end end end
  return math.max(compare(mgpu, o, ref), compare(mgpu, o2, ref2)), 0
end)

add("smem/run_scoped-and-scalars", function(mgpu)
  local k = mgpu.kernel{
    name = "smem_scoped", grid = { 2 }, out_shape = { mgpu.shape({ 2, 256 }, "f32"), mgpu.shape({ 2 }, "f32") },
    body = function(x, o, tot)
      local i = mgpu.program_id(0)
      local y = mgpu.run_scoped(function(a, b)
        a:store(x:at(i):load())
        b:store(a:load():sum())                           -- a rank-0 SMEM ref
        return a:load() + b:load()
      end, mgpu.SMEM({ 256 }, "f32"), mgpu.SMEM({}, "f32"))
      local z = mgpu.run_scoped({ buf = mgpu.SMEM({ 256 }, "f32") }, function(s)
        s.buf:store(7.0)                                  -- a scalar stored everywhere
        return s.buf:load() + y
      end)
      o:at(i):store(z)
      tot:at(i):store(z:sum())
    end,
  }
  local x = mgpu.random.normal({ 2, 256 }, "f32")
  local o, tot = k(x)
  local xt, ref, rt = x:to_table(), {}, {}
  for b = 0, 1 do
    local sum = 0
    for c = 1, 256 do sum = sum + xt[b * 256 + c] end
    local s2 = 0
    for c = 1, 256 do ref[b * 256 + c] = xt[b * 256 + c] + sum + 7; s2 = s2 + ref[b * 256 + c] end
    rt[b + 1] = s2
  end
  return math.max(compare(mgpu, o, ref), compare(mgpu, tot, rt)), 1e-5
end)

add("smem/transpose_ref", function(mgpu)
  local T = mgpu.transforms
  local k = mgpu.kernel{
    name = "smem_tr", grid = { 1 }, out_shape = mgpu.shape({ 64, 32 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 32, 64 }, "f32", { transforms = { T.tiling{ 8, 32 }, T.swizzle(128) } }) },
    body = function(x, o, s)
      s:store(x:load())
      o:store(mgpu.transpose_ref(s, { 1, 0 }):load())
    end,
  }
  local x = mgpu.random.normal({ 32, 64 }, "f32")
  local xt, ref = x:to_table(), {}
  for r = 0, 63 do for c = 0, 31 do ref[#ref + 1] = xt[c * 64 + r + 1] end end
  return compare(mgpu, k(x), ref), 0
end)

add("smem/warpgroups", function(mgpu)
  -- two warpgroups, each with its own half of one scratch buffer
  local k = mgpu.kernel{
    name = "smem_wg", grid = { 1 }, num_threads = 2, thread_name = "wg", out_shape = mgpu.shape({ 2, 512 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 2, 512 }, "f32") },
    body = function(x, o, s)
      local wg = mgpu.axis_index("wg")
      s:at(wg):store(x:at(wg):load() + 1.0)
      o:at(wg):store(s:at(wg):load() * 2.0)
    end,
  }
  local x = mgpu.random.normal({ 2, 512 }, "f32")
  local xt, ref = x:to_table(), {}
  for i = 1, #xt do ref[i] = (xt[i] + 1) * 2 end
  return compare(mgpu, k(x), round(mgpu, ref, "f32")), 1e-7
end)

-- -- TMA copies, barriers, wgmma, clusters -----------------------------------------------------

local function ttab(t, R, C)   -- transpose a row-major (R, C) table
  local o = {}
  for c = 0, C - 1 do for r = 0, R - 1 do o[#o + 1] = t[r * C + c + 1] end end
  return o
end

local function matmul_tab(a, b, M, N, K)
  local c = {}
  for i = 0, M - 1 do for j = 0, N - 1 do
    local sum = 0
    for kk = 0, K - 1 do sum = sum + a[i * K + kk + 1] * b[kk * N + j + 1] end
    c[i * N + j + 1] = sum
  end end
  return c
end

-- GMEM -> SMEM -> GMEM through TMA, tile by tile; the array does not divide into tiles,
-- so the last tiles are partly outside it (zeros in, clipped out).
local tma_cfgs = {
  { "plain", "f32", {}, 64, 32 },
  { "swz128", "bf16", function(T) return { T.tiling{ 8, 64 }, T.swizzle(128) } end, 64, 128 },
  { "swz64", "bf16", function(T) return { T.tiling{ 8, 32 }, T.swizzle(64) } end, 32, 64 },
  { "swz32", "f16", function(T) return { T.tiling{ 8, 16 }, T.swizzle(32) } end, 16, 48 },
  { "f32-swz128", "f32", function(T) return { T.tiling{ 8, 32 }, T.swizzle(128) } end, 64, 64 },
  -- rows and columns that no tile divides: 8-row tiles next to each other, one column tile per copy
  { "ragged", "bf16", function(T) return { T.tiling{ 8, 64 }, T.swizzle(128) } end, 64, 64, 100, 72 },
  -- two column tiles, ordered outermost so that the 8-row tiles stay next to each other
  { "ragged-rows-transposed", "bf16",
    function(T) return { T.tiling{ 8, 64 }, T.transpose{ 1, 0, 2, 3 }, T.swizzle(128) } end, 64, 128, 100, 256 },
}
for _, cfg in ipairs(tma_cfgs) do
  add("tma/roundtrip/" .. cfg[1], function(mgpu)
    local dt, tr, tc = cfg[2], cfg[4], cfg[5]
    local xf = type(cfg[3]) == "function" and cfg[3](mgpu.transforms) or cfg[3]
    local R, C = cfg[6] or 200, cfg[7] or 2 * tc   -- 200 rows: the last row tile is partial
    local k = mgpu.kernel{
      name = "tma_rt", grid = { math.floor((R + tr - 1) / tr), math.floor((C + tc - 1) / tc) }, out_shape = mgpu.shape({ R, C }, dt),
      scratch_shapes = { mgpu.SMEM({ tr, tc }, dt, { transforms = xf }), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        local i, j = mgpu.program_id(0), mgpu.program_id(1)
        local rows, cols = mgpu.ds(i * tr, tr), mgpu.ds(j * tc, tc)
        mgpu.copy_gmem_to_smem(x:at(rows, cols), s, bar)
        mgpu.barrier_wait(bar)
        mgpu.copy_smem_to_gmem(s, o:at(rows, cols))
        mgpu.wait_smem_to_gmem(0)
      end,
    }
    local x = mgpu.random.normal({ R, C }, dt)
    return compare(mgpu, k(x), x:to_table()), 0
  end)
end

add("tma/pipeline-slots", function(mgpu)
  -- one block streams 12 tiles through 3 slots: barrier phases wrap around
  local T = mgpu.transforms
  local n, tr, C, S = 12, 16, 64, 3
  local k = mgpu.kernel{
    name = "tma_pipe", grid = { 1 }, out_shape = mgpu.shape({ n * tr, C }, "bf16"),
    scratch_shapes = { mgpu.SMEM({ S, tr, C }, "bf16", { transforms = { T.tiling{ 8, 64 }, T.swizzle(128) } }),
                       mgpu.Barrier{ num_barriers = S } },
    body = function(x, o, s, bars)
      for t = 0, S - 1 do mgpu.copy_gmem_to_smem(x:at(mgpu.ds(t * tr, tr)), s:at(t), bars:at(t)) end
      mgpu.fori(0, n, function(t)
        local slot = t % S
        mgpu.barrier_wait(bars:at(slot))
        o:at(mgpu.ds(t * tr, tr)):store(s:at(slot):load() * 2.0)
        mgpu.commit_smem()   -- the slot's reads are done before TMA overwrites it
        mgpu.when(mgpu.lt(t + S, n), function()
          mgpu.copy_gmem_to_smem(x:at(mgpu.ds((t + S) * tr, tr)), s:at(slot), bars:at(slot))
        end)
      end)
    end,
  }
  local x = mgpu.random.normal({ n * tr, C }, "bf16")
  local ref = {}
  for i, v in ipairs(x:to_table()) do ref[i] = 2 * v end
  return compare(mgpu, k(x), ref), 0
end)

add("tma/store-reduce-add", function(mgpu)
  local k = mgpu.kernel{
    name = "tma_red", grid = { 4 }, out_shape = mgpu.shape({ 64, 32 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 64, 32 }, "f32") },
    body = function(x, o, s)
      s:store(x:at(mgpu.program_id(0)):load())
      mgpu.commit_smem()
      mgpu.copy_smem_to_gmem(s, o, { reduction_op = "add" })
      mgpu.wait_smem_to_gmem(0)
    end,
  }
  local x = mgpu.random.normal({ 4, 64, 32 }, "f32")
  local o = mgpu.full({ 64, 32 }, 1.0, "f32")
  k:call_into(o, x)
  local xt, ref = x:to_table(), {}
  for i = 1, 64 * 32 do ref[i] = 1 + xt[i] + xt[i + 2048] + xt[i + 4096] + xt[i + 6144] end
  return compare(mgpu, o, ref), 1e-6
end)

add("barrier/producer-consumer", function(mgpu)
  -- warpgroup 0 writes SMEM and arrives; warpgroup 1 waits and reads (twice: phases alternate)
  local k = mgpu.kernel{
    name = "bar_pc", grid = { 2 }, num_threads = 2, thread_name = "wg", out_shape = mgpu.shape({ 2, 2, 512 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 512 }, "f32"), mgpu.Barrier{ num_barriers = 2 } },
    body = function(x, o, s, bars)
      local b, wg = mgpu.program_id(0), mgpu.axis_index("wg")
      mgpu.fori(0, 2, function(r)
        mgpu.when(mgpu.eq(wg, 0), function()
          mgpu.when(mgpu.gt(r, 0), function() mgpu.barrier_wait(bars:at(1)) end)   -- the consumer is done with s
          s:store(x:at(b, r):load() + 1.0)
          mgpu.barrier_arrive(bars:at(0))
        end)
        mgpu.when(mgpu.eq(wg, 1), function()
          mgpu.barrier_wait(bars:at(0))
          o:at(b, r):store(s:load() * 3.0)
          mgpu.barrier_arrive(bars:at(1))
        end)
      end)
    end,
  }
  local x = mgpu.random.normal({ 2, 2, 512 }, "f32")
  local ref = {}
  for i, v in ipairs(x:to_table()) do ref[i] = (v + 1) * 3 end
  return compare(mgpu, k(x), round(mgpu, ref, "f32")), 1e-7
end)

add("cluster/multicast-and-cluster-barrier", function(mgpu)
  local T = mgpu.transforms
  local k = mgpu.kernel{
    name = "mcast", grid = { 2 }, cluster = { 2 }, cluster_names = { "c" },
    out_shape = { mgpu.shape({ 2, 2, 64, 64 }, "bf16"), mgpu.shape({ 2, 2 }, "i32") },
    scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { T.tiling{ 8, 64 }, T.swizzle(128) } }),
                       mgpu.Barrier{}, mgpu.ClusterBarrier{ collective_axes = "c" } },
    body = function(x, o, ids, s, bar, cbar)
      local g, c = mgpu.program_id(0), mgpu.axis_index("c")
      mgpu.copy_gmem_to_smem(x:at(g), s, bar, { collective_axes = "c" })   -- each block loads half, both get all
      mgpu.barrier_wait(bar)
      mgpu.copy_smem_to_gmem(s, o:at(g, c))
      mgpu.wait_smem_to_gmem(0)
      ids:at(g, c):store(g * 10 + c)
      mgpu.barrier_arrive(cbar)                 -- each block tells both blocks it is done
      mgpu.barrier_wait(cbar)
    end,
  }
  local x = mgpu.random.normal({ 2, 64, 64 }, "bf16")
  local o, ids = k(x)
  local xt, ref = x:to_table(), {}
  for g = 0, 1 do for _ = 0, 1 do for i = 1, 4096 do ref[#ref + 1] = xt[g * 4096 + i] end end end
  return math.max(compare(mgpu, o, ref), compare(mgpu, ids, { 0, 1, 10, 11 })), 0
end)

-- DSMEM: each block of a cluster of 4 reads the next block's SMEM (a traced block index; generic
-- loads through cluster_ref), after a cluster barrier.
add("cluster/dsmem-ring", function(mgpu)
  local k = mgpu.kernel{
    name = "dsmem_ring", grid = { 2 }, cluster = { 4 }, cluster_names = { "c" },
    out_shape = mgpu.shape({ 2, 4, 512 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 512 }, "f32"), mgpu.ClusterBarrier{ collective_axes = "c" } },
    body = function(x, o, buf, cbar)
      local g, c = mgpu.program_id(0), mgpu.axis_index("c")
      buf:store(x:at(g, c):load())
      mgpu.barrier_arrive(cbar)   -- written: every block of the cluster may read it
      mgpu.barrier_wait(cbar)
      o:at(g, c):store(mgpu.cluster_ref(buf, { c = (c + 1) % 4 }):load() * 2)
    end,
  }
  local x = mgpu.random.normal({ 2, 4, 512 }, "f32")
  local out = k(x)
  local xt, ref = x:to_table(), {}
  for g = 0, 1 do
    for c = 0, 3 do
      for i = 1, 512 do ref[#ref + 1] = 2 * xt[(g * 4 + (c + 1) % 4) * 512 + i] end
    end
  end
  return compare(mgpu, out, ref), 0
end)

-- DSMEM stores: in clusters of 2x2, each block stores its 8x32 tile into its own swizzled SMEM
-- (slot 0) and into slot 1 of its neighbour along cx and slot 2 of its neighbour along cy (a
-- cluster barrier over both axes orders each block with those two), then weighs the slots.
add("cluster/dsmem-push", function(mgpu)
  local T = mgpu.transforms
  local k = mgpu.kernel{
    name = "dsmem_push", grid = { 2 }, cluster = { 2, 2 }, cluster_names = { "cx", "cy" },
    out_shape = mgpu.shape({ 2, 2, 2, 8, 32 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 3, 8, 32 }, "f32", { transforms = { T.tiling{ 8, 32 }, T.swizzle(128) } }),
                       mgpu.ClusterBarrier{ collective_axes = { "cx", "cy" } } },
    body = function(x, o, slots, cbar)
      local g, cx, cy = mgpu.program_id(0), mgpu.axis_index("cx"), mgpu.axis_index("cy")
      local tile = x:at(g, cy, cx):load()
      slots:at(0):store(tile)
      mgpu.cluster_ref(slots, { cx = 1 - cx }):at(1):store(tile)
      mgpu.cluster_ref(slots, { cy = 1 - cy }):at(2):store(tile)
      mgpu.barrier_arrive(cbar)
      mgpu.barrier_wait(cbar)
      o:at(g, cy, cx):store(slots:at(0):load() + slots:at(1):load() * 2 + slots:at(2):load() * 3)
    end,
  }
  local x = mgpu.random.normal({ 2, 2, 2, 8, 32 }, "f32")
  local out = k(x)
  local xt, ref = x:to_table(), {}
  local function at(g, cy, cx, i) return xt[((g * 2 + cy) * 2 + cx) * 256 + i] end
  for g = 0, 1 do
    for cy = 0, 1 do
      for cx = 0, 1 do
        for i = 1, 256 do ref[#ref + 1] = at(g, cy, cx, i) + 2 * at(g, cy, 1 - cx, i) + 3 * at(g, 1 - cy, cx, i) end
      end
    end
  end
  return compare(mgpu, out, round(mgpu, ref, "f32")), 1e-6
end)

-- async_store_smem: each block of a cluster of 4 stores its bf16 tile (WGMMA pairs) into the next
-- block's swizzled SMEM, and reads what the block before it stored once its barrier completes.
add("cluster/async-store-smem", function(mgpu)
  local T = mgpu.transforms
  local k = mgpu.kernel{
    name = "async_smem", grid = { 2 }, cluster = { 4 }, cluster_names = { "c" },
    out_shape = mgpu.shape({ 2, 4, 64, 64 }, "bf16"),
    scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { T.tiling{ 8, 64 }, T.swizzle(128) } }), mgpu.Barrier{} },
    body = function(x, o, s, bar)
      local g, c = mgpu.program_id(0), mgpu.axis_index("c")
      local v = x:at(g, c):load{ layout = mgpu.Layout.WGMMA }
      mgpu.async_store_smem(v, s, bar, { cluster_idx = (c + 1) % 4, cluster_dim = "c" })
      mgpu.barrier_wait(bar)
      o:at(g, c):store(s:load{ layout = mgpu.Layout.WGMMA })
    end,
  }
  local x = mgpu.random.normal({ 2, 4, 64, 64 }, "bf16")
  local out = k(x)
  local xt, ref = x:to_table(), {}
  for g = 0, 1 do
    for c = 0, 3 do
      for i = 1, 4096 do ref[#ref + 1] = xt[(g * 4 + (c + 3) % 4) * 4096 + i] end
    end
  end
  return compare(mgpu, out, ref), 0
end)

-- async_store_smem with atomic = "add": in pairs, each block puts its i32 tile in its SMEM, the
-- pair meets at a cluster barrier, then each adds its tile into the other's SMEM.
add("cluster/async-store-smem-atomic", function(mgpu)
  local k = mgpu.kernel{
    name = "async_smem_add", grid = { 2 }, cluster = { 2 }, cluster_names = { "c" },
    out_shape = mgpu.shape({ 2, 2, 64, 32 }, "i32"),
    scratch_shapes = { mgpu.SMEM({ 64, 32 }, "i32"), mgpu.ClusterBarrier{ collective_axes = "c" }, mgpu.Barrier{} },
    body = function(x, o, s, cbar, bar)
      local g, c = mgpu.program_id(0), mgpu.axis_index("c")
      local v = x:at(g, c):load{ layout = mgpu.Layout.WGMMA }
      s:store(v * 3)
      mgpu.commit_smem()          -- (ordered for the asynchronous unit, whichever proxy its adds take)
      mgpu.barrier_arrive(cbar)   -- both SMEMs hold their tiles before either adds into the other's
      mgpu.barrier_wait(cbar)
      mgpu.async_store_smem(v, s, bar, { cluster_idx = 1 - c, cluster_dim = "c", atomic = "add" })
      mgpu.barrier_wait(bar)
      o:at(g, c):store(s:load{ layout = mgpu.Layout.WGMMA })
    end,
  }
  local t = {}
  for i = 1, 2 * 2 * 64 * 32 do t[i] = (i * 7919) % 20011 - 10005 end
  local x = mgpu.from_table(t, "i32", { 2, 2, 64, 32 })
  local out = k(x)
  local ref = {}
  for g = 0, 1 do
    for c = 0, 1 do
      for i = 1, 2048 do ref[#ref + 1] = 3 * t[(g * 2 + c) * 2048 + i] + t[(g * 2 + 1 - c) * 2048 + i] end
    end
  end
  return compare(mgpu, out, ref), 0
end)

-- wgmma: acc (M, N) += A (M, K) @ B (K, N).  amajor/bmajor: "K" or "MN" (the SMEM operand seen
-- through transpose_ref when it is stored the other way), areg: A from registers (WGMMA_8BIT
-- for 8-bit A), bdt: B's dtype when it differs from A's (f8e4m3 x f8e5m2, i8 x u8).
local function int_operand(mgpu, shape, dt, seed)   -- every value of i8 / u8, exactly
  local t, x = {}, seed
  for i = 1, shape[1] * shape[2] do
    x = (x * 1103515245 + 12345) % 2147483648
    t[i] = math.floor(x / 65536) % 256 - (dt == "i8" and 128 or 0)
  end
  return mgpu.from_table(t, dt, shape)
end
local function wgmma_case(name, o)
  add("wgmma/" .. name, function(mgpu)
    local T = mgpu.transforms
    local M, N, K, dt = o.M or 64, o.N or 64, o.K or 64, o.dt or "bf16"
    local bdt = o.bdt or dt
    local bytes = ({ bf16 = 2, f16 = 2, f32 = 4, f8e4m3 = 1, f8e5m2 = 1, i8 = 1, u8 = 1 })[dt]
    local int = dt == "i8" or dt == "u8"
    local sw = o.swizzle or 128
    local xf = { T.tiling{ 8, math.floor(sw / bytes) }, T.swizzle(sw) }
    local a_shape = o.amajor == "MN" and { K, M } or { M, K }
    local b_shape = o.bmajor == "K" and { N, K } or { K, N }
    local k = mgpu.kernel{
      name = "wgmma_t", grid = { 1 }, out_shape = mgpu.shape({ M, N }, o.acc or "f32"),
      scratch_shapes = { mgpu.SMEM(a_shape, dt, { transforms = xf }), mgpu.SMEM(b_shape, bdt, { transforms = xf }),
                         mgpu.Barrier{ num_barriers = 2 } },
      body = function(a, b, c, as, bs, bars)
        mgpu.copy_gmem_to_smem(a, as, bars:at(0))
        mgpu.copy_gmem_to_smem(b, bs, bars:at(1))
        mgpu.barrier_wait(bars:at(0))
        mgpu.barrier_wait(bars:at(1))
        local av = o.amajor == "MN" and mgpu.transpose_ref(as, { 1, 0 }) or as
        local bv = o.bmajor == "K" and mgpu.transpose_ref(bs, { 1, 0 }) or bs
        if o.areg then av = av:load{ layout = bytes == 1 and mgpu.Layout.WGMMA_8BIT or mgpu.Layout.WGMMA } end
        mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc, av, bv)
          if o.twice then mgpu.wgmma(acc, av, bv) end
          mgpu.wgmma_wait(0)
          c:store(acc:load())
        end, mgpu.ACC({ M, N }, o.acc or "f32"))
      end,
    }
    local a = int and int_operand(mgpu, a_shape, dt, 7) or mgpu.random.normal(a_shape, dt, nil, 0, 1)
    local b = int and int_operand(mgpu, b_shape, bdt, 11) or mgpu.random.normal(b_shape, bdt, nil, 0, 1)
    local at, bt = a:to_table(), b:to_table()
    if o.amajor == "MN" then at = ttab(at, K, M) end
    if o.bmajor == "K" then bt = ttab(bt, N, K) end
    local ref = matmul_tab(at, bt, M, N, K)
    if o.twice then for i = 1, #ref do ref[i] = 2 * ref[i] end end
    -- tf32 drops 13 mantissa bits; f16 accumulators round every step; the tensor cores add f8
    -- products with a narrower accumulator than f32 (about 1e-4 relative here)
    local tol = int and 0 or dt == "f32" and 5e-3 or (o.acc == "f16" and 2e-3 or (bytes == 1 and 1e-3 or 1e-5))
    return compare(mgpu, k(a, b), ref), tol
  end)
end
wgmma_case("bf16-64x64x64", {})
wgmma_case("bf16-128x128x64-twice", { M = 128, N = 128, twice = true })
wgmma_case("bf16-64x256x128", { N = 256, K = 128 })
wgmma_case("bf16-A-MN-major", { amajor = "MN", K = 128 })
wgmma_case("bf16-B-K-major", { bmajor = "K", N = 128 })
wgmma_case("f16-both-transposed-f16acc", { dt = "f16", amajor = "MN", bmajor = "K", acc = "f16" })
wgmma_case("bf16-swizzle64", { swizzle = 64, N = 96, K = 64 })
wgmma_case("bf16-swizzle32", { swizzle = 32, N = 32, K = 32 })
wgmma_case("bf16-A-in-registers", { areg = true, N = 128 })
wgmma_case("tf32", { dt = "f32", bmajor = "K", K = 64 })
wgmma_case("f8e4m3", { dt = "f8e4m3", bmajor = "K", K = 128 })
wgmma_case("f8e5m2-f16acc", { dt = "f8e5m2", bmajor = "K", K = 128, acc = "f16" })
wgmma_case("i8-i32acc", { dt = "i8", bmajor = "K", K = 128, acc = "i32" })
wgmma_case("u8-i32acc-128x128-twice", { dt = "u8", bmajor = "K", M = 128, N = 128, K = 128, acc = "i32", twice = true })
wgmma_case("i8xu8-N48-swizzle64", { dt = "i8", bdt = "u8", bmajor = "K", N = 48, K = 128, swizzle = 64, acc = "i32" })
wgmma_case("u8xi8-N24-swizzle32", { dt = "u8", bdt = "i8", bmajor = "K", N = 24, K = 64, swizzle = 32, acc = "i32" })
wgmma_case("i8-A-in-registers", { dt = "i8", bmajor = "K", N = 128, K = 128, acc = "i32", areg = true })
wgmma_case("f8e4m3xf8e5m2", { dt = "f8e4m3", bdt = "f8e5m2", bmajor = "K", K = 128 })
wgmma_case("f8e5m2xf8e4m3-f16acc", { dt = "f8e5m2", bdt = "f8e4m3", bmajor = "K", K = 128, acc = "f16" })
wgmma_case("f8e4m3-A-in-registers", { dt = "f8e4m3", bmajor = "K", M = 128, K = 128, areg = true })
wgmma_case("f8e5m2xf8e4m3-A-in-registers", { dt = "f8e5m2", bdt = "f8e4m3", bmajor = "K", K = 128, areg = true })

-- Pallas' test_wgmma_accumulator_load_with_custom_wait: two wgmma groups into two accumulators
-- back to back inside a pipeline loop, the first read after wgmma_wait(1), the second after
-- wgmma_wait(0) (ptxas must inject no warpgroup arrive or wait: ptxas_ops fails on its notes)
add("wgmma/two-accumulators-custom-wait", function(mgpu)
  local T = mgpu.transforms
  local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }
  local k = mgpu.pallas_call{
    name = "two_accs", grid = { 1, 1 },
    out_shape = { mgpu.shape({ 64, 64 }, "f32"), mgpu.shape({ 64, 64 }, "f32") },
    in_specs = { mgpu.BlockSpec{ transforms = xf }, mgpu.BlockSpec{ transforms = xf } },
    body = function(a, b, o0, o1)
      local r0, r1 = mgpu.run_scoped(function(x, y)
        mgpu.wgmma(x, a, b)
        mgpu.wgmma(y, a, b)
        mgpu.wgmma_wait(1)
        local v0 = x:load()
        mgpu.wgmma_wait(0)
        return v0, y:load()
      end, mgpu.ACC({ 64, 64 }, "f32"), mgpu.ACC({ 64, 64 }, "f32"))
      o0:store(r0)
      o1:store(r1)
    end,
  }
  local a = mgpu.random.normal({ 64, 64 }, "f16", nil, 0, 1)
  local b = mgpu.random.normal({ 64, 64 }, "f16", nil, 0, 1)
  local o0, o1 = k(a, b)
  local ref = matmul_tab(a:to_table(), b:to_table(), 64, 64, 64)
  return math.max(compare(mgpu, o0, ref), compare(mgpu, o1, ref)), 1e-5
end)

-- Accumulators starting from an array (ACC.init) and slices of one (acc:at): C (M, 128) starts as X,
-- columns [0, 64) get A @ B0 and columns [64, 128) get A @ B1 (two N = 64 wgmma into slices); the
-- output is read back in two partial loads (one per column half; with M = 128 also per row block).
local function acc_case(name, M)
  add("wgmma/acc-" .. name, function(mgpu)
    local T = mgpu.transforms
    local K = 64
    local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }
    local k = mgpu.kernel{
      name = "acc_slices", grid = { 1 }, out_shape = mgpu.shape({ M, 128 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ M, K }, "bf16", { transforms = xf }), mgpu.SMEM({ K, 64 }, "bf16", { transforms = xf }),
                         mgpu.SMEM({ K, 64 }, "bf16", { transforms = xf }), mgpu.Barrier{ num_barriers = 3 } },
      body = function(x, a, b0, b1, c, as, b0s, b1s, bars)
        mgpu.copy_gmem_to_smem(a, as, bars:at(0))
        mgpu.copy_gmem_to_smem(b0, b0s, bars:at(1))
        mgpu.copy_gmem_to_smem(b1, b1s, bars:at(2))
        for i = 0, 2 do mgpu.barrier_wait(bars:at(i)) end
        mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc:at(mgpu.all, mgpu.ds(0, 64)), as, b0s)
          mgpu.wgmma(acc:at(mgpu.all, mgpu.ds(64, 64)), as, b1s)
          mgpu.wgmma_wait(0)
          for r = 0, M - 64, 64 do
            for h = 0, 64, 64 do
              local rows, cols = mgpu.ds(r, 64), mgpu.ds(h, 64)
              c:at(rows, cols):store(acc:at(rows, cols):load())
            end
          end
        end, mgpu.ACC.init(x:load()))
      end,
    }
    local x = mgpu.random.normal({ M, 128 }, "f32")
    local a = mgpu.random.normal({ M, K }, "bf16", nil, 0, 1)
    local b0 = mgpu.random.normal({ K, 64 }, "bf16", nil, 0, 1)
    local b1 = mgpu.random.normal({ K, 64 }, "bf16", nil, 0, 1)
    local r0 = matmul_tab(a:to_table(), b0:to_table(), M, 64, K)
    local r1 = matmul_tab(a:to_table(), b1:to_table(), M, 64, K)
    local xt, ref = x:to_table(), {}
    for i = 0, M - 1 do for j = 0, 127 do
      ref[i * 128 + j + 1] = xt[i * 128 + j + 1] + (j < 64 and r0[i * 64 + j + 1] or r1[i * 64 + j - 64 + 1])
    end end
    return compare(mgpu, k(x, a, b0, b1), ref), 1e-5
  end)
end
acc_case("init-and-column-slices-64x128", 64)
acc_case("init-and-slices-128x128", 128)

-- copy_gmem_to_smem with oob = "undefined" / "promise_in_bounds" on copies that are in bounds
for _, oob in ipairs({ "undefined", "promise_in_bounds" }) do
  add("copy/oob-" .. oob, function(mgpu)
    local k = mgpu.kernel{
      name = "copy_oob", grid = { 4 }, out_shape = mgpu.shape({ 256, 32 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 64, 32 }, "f32"), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        local rows = mgpu.ds(mgpu.program_id(0) * 64, 64)
        mgpu.copy_gmem_to_smem(x:at(rows, mgpu.all), s, bar, { oob = oob })
        mgpu.barrier_wait(bar)
        o:at(rows, mgpu.all):store(s:load() + 1)
      end,
    }
    local x = mgpu.random.normal({ 256, 32 }, "f32")
    local ref = {}
    for i, v in ipairs(x:to_table()) do ref[i] = v + 1 end
    return compare(mgpu, k(x), ref), 1e-7
  end)
end

-- oob = "undefined" past the end: the plain bulk copy stops at the source's last row; the rows
-- that exist arrive (rows past 200 are not compared: their contents are undefined)
add("copy/oob-undefined-ragged", function(mgpu)
  local k = mgpu.kernel{
    name = "copy_oob_ragged", grid = { 4 }, out_shape = mgpu.shape({ 256, 32 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 64, 32 }, "f32"), mgpu.Barrier{} },
    body = function(x, o, s, bar)
      local rows = mgpu.ds(mgpu.program_id(0) * 64, 64)
      mgpu.copy_gmem_to_smem(x:at(rows, mgpu.all), s, bar, { oob = "undefined" })
      mgpu.barrier_wait(bar)
      o:at(rows, mgpu.all):store(s:load() * 2)
    end,
  }
  local x = mgpu.random.normal({ 200, 32 }, "f32")
  local got, want = k(x):to_table(), x:to_table()
  local err = 0
  for i = 1, 200 * 32 do err = math.max(err, math.abs(got[i] - 2 * want[i]) / math.max(math.abs(want[i]), 1e-30)) end
  return err, 1e-7
end)

add("setmaxnreg-roles", function(mgpu)
  -- warp specialisation's register split: warpgroup 0 gives registers back, warpgroup 1 takes them
  local k = mgpu.kernel{
    name = "maxnreg", grid = { 2 }, num_threads = 2, thread_name = "wg", out_shape = mgpu.shape({ 2, 1024 }, "f32"),
    body = function(x, o)
      local b, wg = mgpu.program_id(0), mgpu.axis_index("wg")
      mgpu.cond(mgpu.eq(wg, 0), function() mgpu.set_max_registers(40, { action = "decrease" }) end,
                function()
                  mgpu.set_max_registers(232, { action = "increase" })
                  o:at(b):store(x:at(b):load():exp())
                end)
    end,
  }
  local x = mgpu.random.normal({ 2, 1024 }, "f32")
  local ref = {}
  for i, v in ipairs(x:to_table()) do ref[i] = math.exp(v) end
  return compare(mgpu, k(x), round(mgpu, ref, "f32")), 1e-7
end)

add("atomics/claims-and-rmw", function(mgpu)
  -- 64 blocks x 2 warpgroups each claim one ticket: every ticket 0..127 exactly once; max, cas, exchange, xor
  local k = mgpu.kernel{
    name = "atomics", grid = { 64 }, num_threads = 2, thread_name = "wg",
    out_shape = { mgpu.shape({ 5 }, "i32"), mgpu.shape({ 128 }, "i32"), mgpu.shape({ 1 }, "f32") },
    body = function(c, seen, fsum)
      local b, wg = mgpu.program_id(0), mgpu.axis_index("wg")
      local t = mgpu.atomic_add(c:at(0), 1)
      mgpu.atomic_add(seen:at(t), 1, { sem = "relaxed" })
      mgpu.atomic_max(c:at(1), b * 2 + wg, { sem = "relaxed" })
      mgpu.atomic_cas(c:at(2), 0, 7)
      mgpu.atomic_exchange(c:at(3), 5, { scope = "sys" })
      mgpu.atomic_xor(c:at(4), mgpu.const(1, "i32"))
      mgpu.atomic_add(fsum:at(0), 0.5)
    end,
  }
  local c, seen, fsum = mgpu.zeros({ 5 }, "i32"), mgpu.zeros({ 128 }, "i32"), mgpu.zeros({ 1 }, "f32")
  k:call_into({ c, seen, fsum })
  local want = { 128, 127, 7, 5, 0 }
  local bad = 0
  for i, v in ipairs(c:to_table()) do if v ~= want[i] then bad = bad + 1 end end
  for _, v in ipairs(seen:to_table()) do if v ~= 1 then bad = bad + 1 end end
  if fsum:get(1) ~= 64 then bad = bad + 1 end
  return bad, 0
end)

add("fori/unroll", function(mgpu)
  -- acc = acc * 0.5 + i over [0, 11) unrolled by 3 (a loop of 3 groups, 2 steps traced after), fully unrolled
  -- over [0, 4), and s = s + i * i over [1, n) with n read on the device, unrolled by 4 (groups, then the rest)
  local k = mgpu.kernel{
    name = "fori_unroll", grid = { 1 }, out_shape = { mgpu.shape({ 512 }, "f32"), mgpu.shape({ 1 }, "i32") },
    body = function(x, nref, o, c)
      local function step(i, acc) local nxt = acc * 0.5 + i:astype("f32"); return nxt end
      local acc = mgpu.fori(0, 11, step, x:load(), { unroll = 3 })
      acc = mgpu.fori(0, 4, step, acc, { unroll = true })
      o:store(acc)
      c:at(0):store(mgpu.fori(1, nref:at(0):load(), function(i, s) local t = s + i * i; return t end, 0, { unroll = 4 }))
    end,
  }
  local x = mgpu.random.uniform({ 512 }, "f32")
  local o, c = k(x, mgpu.array({ 10 }, "i32"))
  local ref = {}
  for i, v in ipairs(x:to_table()) do
    for s = 0, 10 do v = v * 0.5 + s end
    for s = 0, 3 do v = v * 0.5 + s end
    ref[i] = v
  end
  local bad = c:get(1) == 285 and 0 or 1
  return compare(mgpu, o, ref) + bad, 1e-6
end)

add("debug_print/scalars-and-array", function(mgpu)
  -- prints 1 + 4 lines per block (the format is checked by spec/debug_print_spec.lua); the kernel's result must not change
  local k = mgpu.kernel{
    name = "debug_print", grid = { 2 }, out_shape = mgpu.shape({ 2, 4 }, "f32"),
    body = function(x, o)
      local b = mgpu.program_id(0)
      local v = x:at(b):load()
      mgpu.debug_print("debug_print case: block {} of {}, {} {}", b, mgpu.num_programs(0), mgpu.const(-1, "i64"), mgpu.const(0.25, "bf16"))
      mgpu.when(mgpu.eq(b, 1), function() mgpu.debug_print("debug_print case: v{}", v) end)
      o:at(b):store(v * 2)
    end,
  }
  local x = mgpu.random.uniform({ 2, 4 }, "f32")
  local ref = {}
  for i, v in ipairs(x:to_table()) do ref[i] = 2 * v end
  return compare(mgpu, k(x), ref), 0
end)

add("single_warp/tma-then-all", function(mgpu)
  -- the first warp loads and waits; all four read after the region (its closing barrier)
  local k = mgpu.kernel{
    name = "sw_tma", grid = { 3 }, out_shape = mgpu.shape({ 3, 64, 64 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 64, 64 }, "f32"), mgpu.Barrier{} },
    body = function(x, o, s, bar)
      local b = mgpu.program_id(0)
      mgpu.single_warp(function()
        mgpu.copy_gmem_to_smem(x:at(b), s, bar)
        mgpu.barrier_wait(bar)
      end)
      o:at(b):store(s:load() * 2.0)
    end,
  }
  local x = mgpu.random.normal({ 3, 64, 64 }, "f32")
  local ref = {}
  for i, v in ipairs(x:to_table()) do ref[i] = 2 * v end
  return compare(mgpu, k(x), ref), 0
end)

add("pipeline/ws-single-warp-producer", function(mgpu)
  -- emit_pipeline_warp_specialized with memory_warps = 1: two compute warpgroups sum 6 blocks
  local steps, rows, cols = 6, 128, 64
  local k = mgpu.kernel{
    name = "ws_sw", out_shape = mgpu.shape({ rows, cols }, "f32"), num_threads = 3, thread_name = "wg",
    body = function(x, o)
      local mine = mgpu.ds(mgpu.axis_index("wg") * 64, 64)
      mgpu.emit_pipeline_warp_specialized(function(_, xs, acc) return acc + xs:at(mine, mgpu.all):load() end, {
        grid = { steps }, memory_registers = 40, num_compute_wgs = 2, wg_axis = "wg", max_concurrent_steps = 3,
        memory_warps = 1, in_specs = { mgpu.BlockSpec{ { rows, cols }, function(t) return t, 0 end } },
        compute_context = function(run) o:at(mine, mgpu.all):store(run(mgpu.broadcast(0.0, { 64, cols }))) end,
      })(x)
    end,
  }
  local x = mgpu.random.normal({ steps * rows, cols }, "f32")
  local xt, ref = x:to_table(), {}
  for i = 1, rows * cols do
    local sum = 0
    for t = 0, steps - 1 do sum = sum + xt[t * rows * cols + i] end
    ref[i] = sum
  end
  return compare(mgpu, k(x), ref), 1e-6
end)

return cases
