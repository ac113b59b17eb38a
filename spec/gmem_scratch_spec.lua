-- mgpu.GMEM(shape, dtype) in scratch_shapes: a GMEM array the kernel keeps
-- between launches (zero at the first), passed to the body like SMEM
-- scratch; it belongs in scratch_shapes only.
local mgpu = require "mgpu"
local err_of = dofile("spec/support/util.lua").err_of

describe("GMEM scratch", function()
  it("starts at zero and keeps what the last launch left", function()
    local k = mgpu.kernel{
      name = "counting", grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
      scratch_shapes = { mgpu.GMEM({ 128 }, "f32") },
      body = function(x, o, acc)
        local v = acc:load() + x:load()
        acc:store(v)
        o:store(v)
      end,
    }
    local x = mgpu.random.uniform({ 128 }, "f32", 1)
    local first = k(x)
    local second = k(x)
    assert.are.equal(x:get(7), first:get(7))
    assert.are.equal(x:get(7) * 2, second:get(7))
  end)

  it("works in named scratch next to SMEM", function()
    local k = mgpu.kernel{
      name = "named_gmem", grid = { 1 }, out_shape = mgpu.shape({ 64 }, "i32"),
      scratch_shapes = { g = mgpu.GMEM({ 64 }, "i32"), s = mgpu.SMEM({ 64 }, "i32") },
      body = function(x, o, sc)
        sc.g:store(x:load() + 1)
        o:store(sc.g:load())
      end,
    }
    local x = mgpu.zeros({ 64 }, "i32")
    assert.are.equal(1, k(x):get(5))
  end)

  it("refuses run_scoped and a bad dtype", function()
    local k = mgpu.kernel{
      name = "scoped_gmem", grid = { 1 }, out_shape = mgpu.shape({ 64 }, "f32"),
      body = function(x, o)
        mgpu.run_scoped(function(g) o:store(g:load()) end, mgpu.GMEM({ 64 }, "f32"))
      end,
    }
    assert.matches("GMEM%(shape, dtype%) scratch goes in the kernel's scratch_shapes",
                   err_of(k, mgpu.zeros({ 64 }, "f32")))
    assert.matches("GMEM", select(2, pcall(mgpu.GMEM, { 4 }, "f33")))
  end)
end)
