-- Calling a kernel with the wrong arguments: too many or too few, nil in the
-- middle, a number where the body wants a ref, host arrays and other
-- values.  Each is an error at the calling line naming what was expected.
local mgpu = require "mgpu"

local err_of = dofile("spec/support/util.lua").err_of

local function line_of(err) return tonumber(tostring(err):match("calls_spec.lua:(%d+):")) end

describe("kernel call arity", function()
  local add = mgpu.kernel{ name = "add", out_shape = mgpu.shape({ 128 }, "f32"),
    body = function(x, y, o) o:store(x:load() + y:load()) end }
  local x = mgpu.random.normal(128)

  it("names the expected and the given count for too few arrays", function()
    local err = err_of(add, x)
    assert.matches("^[^\n]*calls_spec.lua:%d+: kernel 'add' takes 2 inputs, got 1 argument " ..
                   "%(its body has 3 parameters: 2 inputs, 1 output%)", err)
    assert.matches("kernel 'add' takes 2 inputs, got 0 arguments", err_of(add))
  end)

  it("names the expected and the given count for too many arrays", function()
    assert.matches("calls_spec.lua:%d+: kernel 'add' takes 2 inputs, got 3 arguments", err_of(add, x, x, x))
  end)

  it("reports at the calling line", function()
    local ok, err = pcall(function() return add(x) end)
    assert.is_false(ok)
    assert.are.equal(debug.getinfo(1, "l").currentline - 2, line_of(err))
  end)

  it("counts scratch refs and out_shape functions", function()
    local k = mgpu.kernel{ name = "scaled", out_shape = function(a) return mgpu.shape(a.shape, a.dtype) end,
      scratch_shapes = { mgpu.SMEM({ 128 }, "f32") },
      body = function(a, o, s) s:store(a:load()); o:store(s:load()) end }
    assert.matches("kernel 'scaled' takes 1 input, got 2 arguments %(its body has 3 parameters: 1 input, 1 output, 1 scratch ref%)",
                   err_of(k, x, x))
    assert.matches("calls_spec.lua:%d+: kernel 'scaled': out_shape takes 1 input, got 0 arguments", err_of(k))
    assert.are.equal(128, #k(x):to_table())
  end)

  it("also checks k:call_into and k:lower", function()
    assert.matches("kernel 'add' takes 2 inputs, got 1 argument", err_of(add.call_into, add, mgpu.zeros(128), x))
    assert.matches("kernel 'add' takes 2 inputs, got 3 arguments", err_of(add.lower, add, x, x, x))
  end)

  it("leaves variadic bodies and bodies without parameters alone", function()
    local v = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), body = function(...)
      local refs = { ... }
      refs[#refs]:store(refs[1]:load())
    end }
    assert.are.equal(128, #v(x, x):to_table())
    local none = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), body = function() end }
    none(x, x)
  end)
end)

describe("kernel call argument types", function()
  local add = mgpu.kernel{ name = "add", out_shape = mgpu.shape({ 128 }, "f32"),
    body = function(x, y, o) o:store(x:load() + y:load()) end }
  local x = mgpu.random.normal(128)

  it("refuses nil in the middle and ignores trailing nils", function()
    assert.matches("calls_spec.lua:%d+: kernel 'add': argument 2 of 3 is nil %(the kernel takes 2 inputs%)",
                   err_of(add, x, nil, x))
    assert.are.equal(128, #add(x, x, nil):to_table())
  end)

  it("names a number passed where the body wants a ref", function()
    local err = err_of(add, x, 3)
    assert.matches("calls_spec.lua:%d+: kernel 'add': argument 2 was passed a number, so the body gets a scalar there, " ..
                   "not a ref %(no method 'load'%)", err)
  end)

  it("refuses host arrays, strings, tables and kernels", function()
    assert.matches("calls_spec.lua:%d+: kernel 'add': argument 1 must be an mgpu array or a number, got a host array " ..
                   "%(mgpu.host%); make a device array with h:to_device%(dtype%)", err_of(add, mgpu.host.from(x), x))
    assert.matches("argument 2 must be an mgpu array or a number, got string", err_of(add, x, "y"))
    assert.matches("argument 2 must be an mgpu array or a number, got table", err_of(add, x, {}))
    assert.matches("argument 1 must be an mgpu array or a number, got a kernel", err_of(add, add, x))
  end)
end)

describe("repeated calls", function()
  local calls = 0
  local k = mgpu.kernel{ name = "twice",
    grid = function(a) calls = calls + 1; return { 1 } end,
    out_shape = function(a) return mgpu.shape(a.shape, a.dtype) end,
    body = function(a, o) o:store(a:load() * 2) end }

  it("run the grid and out_shape functions once for like arrays, again for other shapes and dtypes", function()
    local x, y = mgpu.random.normal(64), mgpu.random.normal(64)
    local out = mgpu.empty(64)
    calls = 0
    for _ = 1, 3 do k:call_into(out, x) end
    assert.are.equal(1, calls)
    local hx, ho = x:to_table(), out:to_table()
    for i = 1, 64 do assert.are.equal(hx[i] * 2, ho[i]) end
    for _ = 1, 2 do k:call_into(out, y); k:call_into(out, x) end   -- other arrays, same shape: the same kernel
    k:call_into(out, y)
    assert.are.equal(1, calls)
    local hy = y:to_table()
    ho = out:to_table()
    for i = 1, 64 do assert.are.equal(hy[i] * 2, ho[i]) end   -- the new data
    assert.are.equal(128, #k(mgpu.random.normal(128)):to_table())   -- another shape: another kernel
    assert.are.equal(2, calls)
    local h = k(mgpu.random.normal(64, "bf16"))                    -- another dtype
    assert.are.equal(3, calls)
    assert.are.equal("bf16", h.dtype)
  end)

  it("run the grid function again when a number argument changes", function()
    local n = 0
    local scaled = mgpu.kernel{ name = "scaled",
      grid = function(a, s) n = n + 1; return { s } end,
      out_shape = function(a) return mgpu.shape(a.shape, a.dtype) end,
      body = function(a, s, o)   -- (block 0 writes: the others would race with it)
        mgpu.when(mgpu.eq(mgpu.program_id(0), 0), function() o:store(a:load() * mgpu.astype(s, "f32")) end)
      end }
    local x, out = mgpu.random.normal(64), mgpu.empty(64)
    scaled:call_into(out, x, 1); scaled:call_into(out, x, 1)
    assert.are.equal(1, n)
    scaled:call_into(out, x, 2)
    assert.are.equal(2, n)
    local hx, ho = x:to_table(), out:to_table()
    for i = 1, 64 do assert.are.equal(hx[i] * 2, ho[i]) end
  end)

  it("do not keep the last call's arrays alive", function()
    local seen = setmetatable({}, { __mode = "k" })
    do
      local x = mgpu.random.normal(64)
      seen[x] = true
      k(x)
    end
    collectgarbage(); collectgarbage()
    assert.is_nil(next(seen))
  end)
end)
