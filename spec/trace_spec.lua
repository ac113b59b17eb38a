-- Tracing: user mistakes are reported with the line of the user's code,
-- and kernels are traced once per argument signature.
local mgpu = require "mgpu"

-- Returns the error message of fn, which must fail.
local err_of = dofile("spec/support/util.lua").err_of

describe("tracing", function()
  it("caches one trace per signature", function()
    local traces = 0
    local k = mgpu.kernel{
      grid = { 1 }, out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
      body = function(x, o) traces = traces + 1; o:store(x:load() * 2) end,
    }
    k(mgpu.iota(256)); k(mgpu.iota(256)); k(mgpu.iota(256, "i32"))
    assert.are.equal(2, traces)
    local low = k:lower(mgpu.iota(256))
    assert.matches("kernel kernel%(%%1: &gmem f32%[256%] in", low.ir)
    assert.matches(".target sm_90a", low.ptx)
  end)

  it("names the line of a shape mismatch", function()
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
      body = function(x, y, o) o:store(x:load() + y:load()) end }
    local err = err_of(k, mgpu.zeros(128), mgpu.zeros(256))
    assert.matches("trace_spec.lua:%d+: add: shapes f32%[128%] and f32%[256%] do not match", err)
  end)

  it("names the line of a dtype mismatch", function()
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
      body = function(x, o) o:store(x:load()) end }
    local err = err_of(k, mgpu.zeros(128, "bf16"))
    assert.matches("trace_spec.lua:%d+: store: dtypes f32 and bf16 do not match %(use astype to convert%)", err)
  end)

  it("rejects too many indices", function()
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "f32"),
      body = function(x, o) o:store(x:at(0, 1, 2):load()) end }
    local err = err_of(k, mgpu.zeros({ 4, 4 }))
    assert.matches("trace_spec.lua:%d+: too many indices: ref of rank 2 indexed with 3", err)
  end)

  it("rejects non-integer shapes, grids and slices", function()
    assert.matches("shape%[1%] must be an integer, got 4.5", err_of(mgpu.shape, { 4.5 }, "f32"))
    local k = mgpu.kernel{ grid = { 2.5 }, out_shape = mgpu.shape({ 4 }, "f32"), body = function() end }
    assert.matches("trace_spec.lua:%d+: grid%[1%] must be an integer, got 2.5", err_of(k))
    local k2 = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "f32"),
      body = function(o) o:at(mgpu.ds(0, 1.5)):store(0) end }
    assert.matches("ds size must be an integer, got 1.5", err_of(k2))
    assert.matches("num_threads", err_of(mgpu.kernel, { num_threads = 9, out_shape = mgpu.shape(4), body = print }))
    assert.matches("unknown option 'grd'", err_of(mgpu.kernel, { grd = 1, out_shape = mgpu.shape(4), body = print }))
  end)

  it("rejects comparisons written with operators and values used outside their loop", function()
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
      body = function(x, o) local v = x:load(); if v < 0 then o:store(v) end end }
    -- Lua 5.4 calls __lt (which explains); Lua 5.1/LuaJIT refuses a table-number comparison itself
    local msg = err_of(k, mgpu.zeros(128))
    assert.is_truthy(msg:match("trace_spec.lua:%d+: use mgpu.lt%(a, b%)") or msg:match("trace_spec.lua:%d+: attempt to compare"), msg)
    local k2 = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
      body = function(x, o)
        local leaked
        mgpu.fori(0, 4, function(i) leaked = x:load() * 2 end)
        o:store(leaked)
      end }
    assert.matches("trace_spec.lua:%d+: store: value %%%d+ was defined inside a loop or branch that has ended",
                   err_of(k2, mgpu.zeros(128)))
  end)

  it("checks while_loop's functions and carried values", function()
    local function run(cond, body, ...)
      local inits = table.pack(...)
      return err_of(mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "i32"),
        body = function(o) mgpu.while_loop(cond, body, table.unpack(inits, 1, inits.n)) end })
    end
    local lt = function(n) return mgpu.lt(n, 3) end
    assert.matches("trace_spec.lua:%d+: while_loop: the first argument %(cond_fn%) must be a function", run(nil, lt, 0))
    assert.matches("trace_spec.lua:%d+: while_loop: cond_fn returned a Lua boolean", run(function() return true end, lt, 0))
    assert.matches("trace_spec.lua:%d+: while_loop: the condition must return one pred scalar %(a comparison result%), got 1 value: i32",
                   run(function(n) return n + 1 end, function(n) return n end, 0))
    assert.matches("trace_spec.lua:%d+: while_loop: body_fn returned 2 values but 1 are carried",
                   run(lt, function(n) return n, n end, 0))
    assert.matches("trace_spec.lua:%d+: loop body: yielded f32 as value 1, which must match i32",
                   run(lt, function(n) return n:astype("f32") end, 0))
    local leaked = err_of(mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "i32"), body = function(o)
      local inner
      mgpu.while_loop(function(n) inner = n * 2; return mgpu.lt(n, 3) end, function(n) return n + 1 end, 0)
      o:at(0):store(inner)
    end })
    assert.matches("trace_spec.lua:%d+: store: value %%%d+ was defined inside a loop or branch that has ended", leaked)
  end)

  it("reports unknown axis names and axes", function()
    local k = mgpu.kernel{ grid = { 2 }, grid_names = { "x" }, out_shape = mgpu.shape({ 4 }, "f32"),
      body = function(o) mgpu.axis_index("y") end }
    assert.matches("unknown axis name 'y' %(grid axes: x; cluster axes: none; thread axis: none%)", err_of(k))
    local k2 = mgpu.kernel{ grid = { 2 }, out_shape = mgpu.shape({ 4 }, "f32"),
      body = function(o) mgpu.program_id(1) end }
    assert.matches("program_id: axis 1 is out of range for a grid of rank 1", err_of(k2))
  end)

  it("checks arguments at call time", function()
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "f32"), body = function(x, o) end }
    assert.matches("argument 1 must be an mgpu array or a number, got string", err_of(k, "3"))
    assert.matches("only available while a kernel body is being traced", err_of(mgpu.program_id, 0))
  end)

  it("writes into existing outputs with call_into", function()
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
      body = function(x, o) o:store(x:load() + 1) end }
    local out = mgpu.zeros(128)
    k:call_into(out, mgpu.iota(128))
    assert.are.equal(128, out:get(128))
    assert.matches("output 1 must be a f32%[128%] array", err_of(k.call_into, k, mgpu.zeros(64), mgpu.iota(128)))
  end)
end)
