-- Device arrays and host reference arrays.
local mgpu = require "mgpu"
local util = dofile("spec/support/util.lua")

describe("arrays", function()
  it("are created from tables, constants, iota and random fills", function()
    local a = mgpu.from_table({ 1, 2, 3, 4, 5, 6 }, "f32", { 2, 3 })
    assert.are.same({ 2, 3 }, a.shape)
    assert.are.equal("f32", a.dtype)
    assert.are.same({ 1, 2, 3, 4, 5, 6 }, a:to_table())
    assert.are.equal(6, a:get(2, 3))
    assert.are.equal(4, a:get(4))
    assert.are.same({ 7, 7, 7 }, mgpu.full(3, 7, "i32"):to_table())
    assert.are.same({ 0, 0 }, mgpu.zeros({ 2 }, "bf16"):to_table())
    assert.are.same({ 10, 12, 14 }, mgpu.iota(3, "i32", 10, 2):to_table())
    assert.are.same({ { 1, 2 } }, { mgpu.array({ { 1, 2 } }):to_table() })
    assert.are.same({ 2, 1 }, mgpu.array({ { 1 }, { 2 } }).shape)
  end)

  it("draw reproducible random numbers from a seed and fresh ones without", function()
    local a = mgpu.random.normal(1000, "f32", 42):to_table()
    local b = mgpu.random.normal(1000, "f32", 42):to_table()
    local c = mgpu.random.normal(1000, "f32"):to_table()
    local d = mgpu.random.normal(1000, "f32"):to_table()
    assert.are.same(a, b)
    local same = 0
    for i = 1, 1000 do if c[i] == d[i] then same = same + 1 end end
    assert.is_true(same < 10)
    local u = mgpu.random.uniform(1000, "bf16", nil, 2, 3):to_table()
    for i = 1, 1000 do assert.is_true(u[i] >= 2 and u[i] <= 3) end
  end)

  it("copy, convert and reshape", function()
    local a = mgpu.from_table({ 1.25, -2.5, 1e6 }, "f32")
    assert.are.same({ 1.25, -2.5, 1e6 }, a:copy():to_table())
    assert.are.same({ 1, -2, 1e6 }, mgpu.from_table({ 1, -2, 1e6 }, "f32"):copy("i32"):to_table())
    assert.matches("arrays_spec.lua:%d+: copy: element 1 is 1.25, not an integer %(i32 holds integers from",
                   util.err_of(a.copy, a, "i32"))   -- (once truncated to 1)
    assert.are.same({ 1.25, -2.5, 65504 * 0 + 999424 }, a:copy("bf16"):to_table())
    assert.are.same({ 3, 1 }, a:reshape({ 3, 1 }).shape)
  end)

  it("copy a band of rows, checked against the whole array's", function()
    local x = mgpu.random.normal({ 10, 3, 4 }, "bf16")
    local r = x:rows(2, 5)
    assert.are.same({ 5, 3, 4 }, r.shape)
    assert.equal("bf16", r.dtype)
    assert.equal(0, mgpu.host.relerr(mgpu.host.from(r), mgpu.host.from(x):rows(2, 5)))
    assert.are.same({ 4, 5 }, mgpu.iota({ 6 }, "i32"):rows(4, 2):to_table())
    assert.are.same({ 0, 3, 4 }, x:rows(10, 0).shape)
    assert.matches("arrays_spec.lua:%d+: rows: rows %[8, 11%) are out of range for shape %[10,3,4%]",
                   util.err_of(x.rows, x, 8, 3))
    assert.matches("rows: rows %[%-1, 2%) are out of range", util.err_of(x.rows, x, -1, 3))
    assert.matches("rows: start must be an integer, got 1.5", util.err_of(x.rows, x, 1.5, 3))
    assert.matches("rows: rows %[0, 1%) are out of range for shape %[%]",
                   util.err_of(x.rows, mgpu.zeros({}, "f32"), 0, 1))
    assert.matches("rows: call it as array:rows%(start, size%)", util.err_of(x.rows, 3, 0, 1))
  end)

  it("read u64 values from 2^63 up back as floats, smaller ones as integers", function()
    local small = mgpu.full(2, 5, "u64"):to_table()
    if math.type then assert.are.equal("integer", math.type(small[1])) end   -- Lua 5.4 (LuaJIT has no integers)
    assert.are.equal(5, small[1])
    assert.are.equal(2.0 ^ 63, tonumber(mgpu.full(1, 2 ^ 63, "u64"):get(1)))   -- (LuaJIT: a uint64_t)
  end)

  it("refuse values an integer dtype cannot hold, naming the element and the value", function()
    local cases = {   -- they once saturated or truncated silently
      { function() return mgpu.full(2, 1 / 0, "u64") end, "full: value inf is out of range %(u64 holds integers from 0 to 2%^64 %- 1%)" },
      { function() return mgpu.full(2, 1e10, "i32") end, "full: value 10000000000 is out of range %(i32" },
      { function() return mgpu.from_table({ 1, 2.7 }, "i32") end, "from_table: element t%[2%] is 2%.7, not an integer %(i32" },
      { function() return mgpu.from_table({ { 0 / 0 } }, "i8") end, "from_table: element t%[1%]%[1%] is nan, not an integer" },
      { function() return mgpu.from_table({ 1e300 }, "i64") end, "from_table: element t%[1%] is 1e%+300, out of range %(i64" },
      { function() return mgpu.from_table({ -1 }, "u32") end, "from_table: element t%[1%] is %-1, out of range %(u32 holds integers from 0 to 4294967295%)" },
      { function() return mgpu.iota(3, "i32", 0.5) end, "iota: start 0%.5 is not an integer" },
      { function() return mgpu.random.uniform(4, "u8", 1, -1, 3) end, "random%.uniform: low bound %-1 is out of range %(u8" },
    }
    for _, c in ipairs(cases) do assert.matches("arrays_spec.lua:%d+: " .. c[2], util.err_of(c[1])) end
    -- floats narrow instead (documented): f32 overflows to inf, f8e4m3 saturates at 448
    assert.are.equal(math.huge, mgpu.full(1, 1e300, "f32"):get(1))
    assert.are.equal(448, mgpu.full(1, 1000, "f8e4m3"):get(1))
    assert.are.equal(-57344, mgpu.full(1, -1e9, "f8e5m2"):get(1))
  end)

  -- An exact 64-bit integer hi * 2^32 + lo: a Lua 5.4 integer, an int64_t cdata under LuaJIT.
  local function I(hi, lo)
    if rawget(_G, "jit") then return require("ffi").new("int64_t", hi) * 4294967296 + lo end
    return hi * 4294967296 + lo
  end

  it("carry 64-bit integers exactly through from_table, to_table, get and kernel scalars", function()
    local vals = { I(2097152, 1), I(2147483647, 4294967295), I(-2147483648, 0), I(-2097153, 4294967295), 7 }
    local a = mgpu.from_table(vals, "i64")     -- 2^53 + 1, math.maxinteger, math.mininteger, -(2^53 + 1), 7
    local back = a:to_table()
    for i = 1, #vals do
      assert.is_true(back[i] == vals[i], "element " .. i .. ": " .. tostring(back[i]) .. " ~= " .. tostring(vals[i]))
      if math.type then assert.are.equal("integer", math.type(back[i])) end
    end
    assert.is_true(a:get(1) == vals[1] and a:get(2) == vals[2], tostring(a:get(1)))
    local u = mgpu.from_table({ vals[1], vals[2], 2 ^ 63, 2 ^ 64 - 2 ^ 11 }, "u64"):to_table()
    assert.is_true(u[1] == vals[1] and u[2] == vals[2], tostring(u[1]))
    assert.are.equal(2 ^ 63, u[3]); assert.are.equal(2 ^ 64 - 2 ^ 11, u[4])   -- from 2^63 up: floats
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 1 }, "i64"), body = function(s, o) o:at(0):store(s) end }
    for i = 1, 4 do
      local got = k(mgpu.scalar(vals[i], "i64")):get(1)
      assert.is_true(got == vals[i], "scalar " .. i .. ": " .. tostring(got) .. " ~= " .. tostring(vals[i]))
    end
  end)

  it("report bad arguments at the caller's line", function()
    local ok, err = pcall(mgpu.zeros, { 2, 2.5 })
    assert.is_false(ok)
    assert.matches("arrays_spec.lua:%d+: zeros shape%[2%] must be an integer, got 2.5", err)
    ok, err = pcall(mgpu.zeros, 4, "f33")
    assert.matches("zeros: unknown dtype f33", err)
    ok, err = pcall(mgpu.from_table, { 1, 2, 3 }, "f32", { 2, 2 })
    assert.matches("3 values do not fill shape %[2,2%]", err)
    ok, err = pcall(function() return mgpu.iota(4):get(5) end)
    assert.matches("out of range", err)
  end)
end)

describe("DLPack", function()
  it("round-trips an array without copying", function()
    local a = mgpu.from_table({ 1, 2, 3, 4, 5, 6 }, "bf16", { 3, 2 })
    local b = mgpu.from_dlpack(a:to_dlpack())
    assert.are.same({ 3, 2 }, b.shape)
    assert.are.equal("bf16", b.dtype)
    assert.are.same({ 1, 2, 3, 4, 5, 6 }, b:to_table())
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 6 }, "bf16"),
      body = function(x, o) o:store(x:load() * 2) end }
    k:call_into(b:reshape({ 6 }), mgpu.from_table({ 7, 7, 7, 7, 7, 7 }, "bf16"))
    assert.are.same({ 14, 14, 14, 14, 14, 14 }, a:to_table())   -- written through the shared memory
  end)

  it("frees an export no consumer took, not one an import holds", function()
    local a = mgpu.iota(4, "f32")
    mgpu.dlpack_free(a:to_dlpack())
    local t = a:to_dlpack()
    local b = mgpu.from_dlpack(t)
    local ok, err = pcall(mgpu.dlpack_free, t)
    assert.is_false(ok)
    assert.matches("an import holds this tensor", err, 1, true)
    assert.are.same({ 0, 1, 2, 3 }, b:to_table())
    ok, err = pcall(mgpu.dlpack_free, 3)
    assert.is_false(ok)
    assert.matches("arrays_spec.lua:%d+: dlpack_free: expected a DLPack tensor %(a DLManagedTensor pointer%), got number", err)
  end)

  it("refuses what is not a tensor pointer, and a tensor imported already", function()
    local ok, err = pcall(mgpu.from_dlpack, io.stdout)
    assert.is_false(ok)
    assert.matches("arrays_spec.lua:%d+: from_dlpack: expected a DLPack tensor %(a DLManagedTensor pointer%), got [%w%*]+$", err)
    local a = mgpu.iota(4, "f32")
    local t = a:to_dlpack()
    local b = mgpu.from_dlpack(t)
    ok, err = pcall(mgpu.from_dlpack, t)                 -- would run the deleter twice
    assert.is_false(ok)
    assert.matches("arrays_spec.lua:%d+: from_dlpack: the tensor is imported already", err)
    assert.are.same({ 0, 1, 2, 3 }, b:to_table())
    b = nil
    collectgarbage(); collectgarbage()                   -- releases the import: its deleter runs once
    assert.are.same({ 0, 1, 2, 3 }, mgpu.from_dlpack(a:to_dlpack()):to_table())
  end)
end)

describe("host arrays", function()
  local H = mgpu.host
  it("compute references with broadcasting and reductions", function()
    local x = H.from_table({ 1, 2, 3, 4, 5, 6 }, { 2, 3 })
    local m = x:amax(-1, true)
    assert.are.same({ 3, 6 }, m:to_table())
    assert.are.same({ -2, -1, 0, -2, -1, 0 }, (x - m):to_table())
    assert.are.same({ 6, 15 }, x:sum():to_table())
    assert.are.same({ 2.5, 3.5, 4.5 }, x:mean(0):to_table())
    assert.are.same({ 12, 15, 18, 21, 24, 27 }, ((x + 3) * 3):to_table())
    local y = H.from_table({ 1, 0, 0, 1, 1, 1 }, { 3, 2 })
    assert.are.same({ 4, 5, 10, 11 }, H.matmul(x, y):to_table())
    assert.are.same({ 4, 5, 6 }, x:rows(1, 1):to_table())
    assert.are.same({ 1, 1.5 }, H.from_table({ 1.0001, 1.5 }):round("bf16"):to_table())
  end)
  it("measure relative error against device arrays", function()
    local a = mgpu.from_table({ 3, 4 }, "f32")
    assert.are.equal(0, H.relerr(a, H.from_table({ 3, 4 })))
    assert.is_true(math.abs(H.relerr(a, H.from_table({ 3, 5 })) - 1 / math.sqrt(34)) < 1e-12)
  end)
end)

describe("array constructors inside a kernel body", function()
  it("give traced arrays: a zeros fori carry, full, iota and empty", function()
    local k = mgpu.kernel{
      out_shape = { mgpu.shape({ 256 }, "f32"), mgpu.shape({ 4, 64 }, "f32"), mgpu.shape({ 256 }, "i32"), mgpu.shape({ 128 }, "f32") },
      body = function(x, o, p, q, e)
        o:store(mgpu.fori(0, 3, function(_, a) return a + x:load() end, mgpu.zeros({ 256 }, "f32")))
        p:store(mgpu.full({ 4, 64 }, 2.5) + mgpu.iota({ 4, 64 }, "f32", 1, 2))
        q:store(mgpu.iota(256, "i32"))
        e:store(mgpu.empty({ 128 }) + mgpu.full({ 128 }, x:at(mgpu.ds(0, 1)):load():sum(), "f32"))
      end }
    local x = mgpu.random.normal({ 256 }, "f32")
    local o, p, q, e = k(x)
    local xt = x:to_table()
    for i = 1, 256 do assert.is_true(math.abs(o:get(i) - 3 * xt[i]) < 1e-5) end
    local pt = p:to_table()
    for i = 1, 256 do assert.are.equal(2.5 + 1 + 2 * (i - 1), pt[i]) end
    for i = 1, 256 do assert.are.equal(i - 1, q:get(i)) end
    for i = 1, 128 do assert.is_true(math.abs(e:get(i) - xt[1]) < 1e-6) end
  end)

  it("still make device arrays outside a kernel body", function()
    assert.is_true(mgpu.is_array(mgpu.zeros({ 4 }, "f32")))
    assert.are.same({ 0, 1, 2, 3 }, mgpu.iota(4, "i32"):to_table())
  end)
end)
