-- The tests of JAX's ExamplesTest and ExamplesSm90ATest (tests/pallas/mosaic_gpu_test.py):
-- the stages of the Mosaic GPU tutorial, an elementwise add grown into a pipelined wgmma.
local C = dofile("spec/conformance/support/conf.lua")
local mgpu, T = C.mgpu, C.T
local ds = mgpu.ds

local function twice(x) return C.round(C.map(x, function(v) return 2 * v end), "f16") end

return function(cls, sm90a)
  local test = cls.test
  local function f16_input() return C.uniform({ 128, 128 }, "i32", -1000, 1000):copy("f16") end

  if sm90a then
    test("test_stage6", function()
      local xf = { T.tiling{ 8, 32 }, T.swizzle(64) }
      local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f16"), grid = { 2, 2 }, grid_names = { "m", "n" }, body = function(l, r, o)
        local m, n = mgpu.axis_index("m"), mgpu.axis_index("n")
        mgpu.emit_pipeline(function(idx, ls, rs, os)
          local acc = mgpu.run_scoped(function(a)
            mgpu.wgmma(a, ls, rs)
            return a:load()
          end, mgpu.ACC({ 64, 64 }, "f16"))
          mgpu.cond(mgpu.eq(idx[1], 0), function() os:store(acc) end, function() os:store(os:load() + acc) end)
        end, { grid = { 128 / 32 },
               in_specs = { mgpu.BlockSpec{ { 64, 32 }, function(kk) return m, kk end, transforms = xf },
                            mgpu.BlockSpec{ { 32, 64 }, function(kk) return kk, n end, transforms = xf } },
               out_specs = { mgpu.BlockSpec{ { 64, 64 }, function(_) return m, n end, transforms = xf } } })(l, r, o)
      end }
      local x = C.uniform({ 128, 128 }, "f16")
      local want = mgpu.host.matmul(mgpu.host.from(x), mgpu.host.from(x)):to_table()
      C.close(k(x, x), want, 2e-3)
    end)
    return
  end

  test("test_stage0", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f16"), body = function(l, r, o) o:store(l:load() + r:load()) end }
    local x = f16_input()
    C.equal(k(x, x), twice(x))
  end)

  test("test_stage1", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f16"), grid = { 2 }, grid_names = { "rows" }, body = function(l, r, o)
      local s = ds(mgpu.axis_index("rows") * 64, 64)
      o:at(s):store(l:at(s):load() + r:at(s):load())
    end }
    local x = f16_input()
    C.equal(k(x, x), twice(x))
  end)

  test("test_stage3", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f16"), grid = { 2 }, grid_names = { "rows" },
      scratch_shapes = { mgpu.SMEM({ 64, 128 }, "f16"), mgpu.SMEM({ 64, 128 }, "f16"), mgpu.SMEM({ 64, 128 }, "f16"),
                         mgpu.Barrier{ num_arrivals = 2 } },
      body = function(l, r, o, ls, rs, os, bar)
        local s = ds(mgpu.axis_index("rows") * 64, 64)
        mgpu.copy_gmem_to_smem(l:at(s), ls, bar)
        mgpu.copy_gmem_to_smem(r:at(s), rs, bar)
        mgpu.barrier_wait(bar)
        os:store(ls:load() + rs:load())
        mgpu.commit_smem()
        mgpu.copy_smem_to_gmem(os, o:at(s))
        mgpu.wait_smem_to_gmem(0)
      end }
    local x = f16_input()
    C.equal(k(x, x), twice(x))
  end)

  for _, stage in ipairs({ 4, 5 }) do
    test("test_stage" .. stage, function()
      local xf = stage == 5 and { T.tiling{ 8, 32 }, T.swizzle(64) } or nil
      local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f16"), grid = { 2 }, grid_names = { "rows" }, body = function(l, r, o)
        local row = mgpu.axis_index("rows")
        local block = mgpu.BlockSpec{ { 64, 32 }, function(c) return row, c end, transforms = xf }
        mgpu.emit_pipeline(function(_, ls, rs, os) os:store(ls:load() + rs:load()) end, {
          grid = { l.shape[2] / 32 }, in_specs = { block, block }, out_specs = { block } })(l, r, o)
      end }
      local x = f16_input()
      C.equal(k(x, x), twice(x))
    end)
  end
end
