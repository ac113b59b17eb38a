-- The tests of JAX's PipelineTest (tests/pallas/mosaic_gpu_test.py): emit_pipeline over
-- grids of any shape, carries, squeezed and Element dims, and a hand-written pipeline.
local assert = require "luassert"
local C = dofile("spec/conformance/support/conf.lua")
local mgpu, T = C.mgpu, C.T
local ds = mgpu.ds

-- Random integers in [lo, hi) stored in `dtype`.
local function ints(shape, dtype, lo, hi) return C.uniform(shape, "i32", lo, hi):copy(dtype) end
local function plus(x, d) return C.map(x, function(v) return v + d end) end

return function(cls)
  local test, diverge = cls.test, cls.diverge
  local wg = cls.semantics == "Warpgroup"

  test("test_pipeline_mode", function()
    local err = C.err_of(function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 64 * 256 }, "f32"), grid = 64,
        in_specs = { mgpu.BlockSpec{ { 256 }, function(i) return i end, pipeline_mode = "Buffered(2)" },
                     mgpu.BlockSpec{ { 256 }, function(i) return i end, pipeline_mode = "Buffered(1)" } },
        out_specs = mgpu.BlockSpec{ { 256 }, function(i) return i end },
        body = function(x, y, o) o:store(x:load() + y:load()) end }
      k(C.normal({ 64 * 256 }), C.normal({ 64 * 256 }))
    end)
    assert.matches("PipelineTest%.lua:%d+: BlockSpec: unknown option 'pipeline_mode'", err)
  end)

  test("test_manual", function()
    local depth, steps = 2, 4
    local k = cls.kernel{ out_shape = mgpu.shape({ 128, 64 }, "f32"), grid = { 4, 1 }, grid_names = { "x", "y" },
      body = function(xg, og)
        mgpu.run_scoped(function(xs, os, bar)
          local rows = ds(mgpu.axis_index("x") * 32, 32)
          for slot = 0, math.min(depth, steps) - 1 do
            mgpu.copy_gmem_to_smem(xg:at(rows, ds(slot * 16, 16)), xs:at(slot), bar:at(slot))
          end
          mgpu.fori(0, steps, function(step)
            local slot = step % depth
            mgpu.barrier_wait(bar:at(slot))
            mgpu.wait_smem_to_gmem(depth - 1)
            os:at(slot):store(xs:at(slot):load() + 1.0)
            mgpu.commit_smem()
            mgpu.copy_smem_to_gmem(os:at(slot), og:at(rows, ds(step * 16, 16)))
            local fetch = step + depth
            mgpu.when(mgpu.lt(fetch, steps), function()
              mgpu.copy_gmem_to_smem(xg:at(rows, ds(fetch * 16, 16)), xs:at(slot), bar:at(slot))
            end)
          end)
          mgpu.wait_smem_to_gmem(0)
        end, mgpu.SMEM({ depth, 32, 16 }, "f32"), mgpu.SMEM({ depth, 32, 16 }, "f32"), mgpu.Barrier{ num_barriers = depth })
      end }
    local x = ints({ 128, 64 }, "f32", -1000, 1000)
    C.equal(k(x), plus(x, 1))
  end)

  local emit_transforms = { { "()", {} }, { "(TilingTransform((8, 32)), SwizzleTransform(128))", { T.tiling{ 8, 32 }, T.swizzle(128) } } }
  for _, tr in ipairs(emit_transforms) do
    for _, repeats in ipairs({ 1, 10 }) do
      test(string.format("test_emit(transforms=%s, repeats=%d)", tr[1], repeats), function()
        local k = cls.kernel{ out_shape = mgpu.shape({ 64, 256 }, "f32"), body = function(x, o)
          for _ = 1, repeats do
            mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load() + 1.0) end, {
              in_specs = { mgpu.BlockSpec{ { 64, 64 }, function(i) return 0, i end, transforms = tr[2] } },
              out_specs = { mgpu.BlockSpec{ { 64, 64 }, function(i) return 0, i end, transforms = tr[2] } },
              grid = { 4 }, max_concurrent_steps = 2 })(x, o)
          end
        end }
        local x = ints({ 64, 256 }, "f32", -1000, 1000)
        C.equal(k(x), plus(x, 1))
      end)
    end
  end

  test("test_nested_emit", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 32, 64 }, "f32"), body = function(x, o)
      mgpu.emit_pipeline(function(_, xg, og)
        mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load() + 1.0) end, {
          in_specs = { mgpu.BlockSpec{ { 32, 16 }, function(i) return 0, i end } },
          out_specs = { mgpu.BlockSpec{ { 32, 16 }, function(i) return 0, i end } },
          grid = { 4 }, max_concurrent_steps = 2 })(xg, og)
      end, { in_specs = { mgpu.BlockSpec{ memory_space = mgpu.GMEM } }, out_specs = { mgpu.BlockSpec{ memory_space = mgpu.GMEM } },
             grid = {} })(x, o)
    end }
    local x = ints({ 32, 64 }, "f32", -1000, 1000)
    C.equal(k(x), plus(x, 1))
  end)

  test("test_emit_with_grid_invariant_output", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 32, 64 }, "f32"), body = function(x, o)
      mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load() + 1.0) end, {
        in_specs = { mgpu.BlockSpec{ { 32, 16 }, function(i) return 0, i end } },
        out_specs = { mgpu.BlockSpec{ { 32, 16 }, function(_) return 0, 0 end } },
        grid = { 4 }, max_concurrent_steps = 2 })(x, o)
    end }
    local x = ints({ 32, 64 }, "f32", -1000, 1000)
    local got, hx = C.flat(k(x)), C.flat(x)
    local g, w = {}, {}
    for r = 0, 31 do
      for c = 1, 16 do g[#g + 1], w[#w + 1] = got[r * 64 + c], hx[r * 64 + 48 + c] + 1 end
    end
    C.equal(g, w, "out[:, :16]")
  end)

  for _, grid in ipairs({ { 0, 2 }, { 2, -1 } }) do
    test(string.format("test_emit_with_empty_grid(grid=(%d, %d))", grid[1], grid[2]), function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 256, 256 }, "f32"), body = function(o)
        mgpu.emit_pipeline(function(_, os) os:store(mgpu.broadcast(0, { 128, 128 }, "f32")) end, {
          out_specs = { mgpu.BlockSpec{ { 128, 128 }, function(i, j) return i, j end } }, grid = grid })(o)
      end }
      assert.matches("PipelineTest%.lua:%d+: emit_pipeline grid%[" .. (grid[1] == 0 and "1%] must be at least 1, got 0" or
                     "2%] must be at least 1, got %-1"), C.err_of(k))
    end)
  end

  test("test_emit_with_no_output", function()
    local m, n = 16, 128
    local k = cls.kernel{ out_shape = mgpu.shape({ 1, n }, "f32"), body = function(x, o)
      local acc = mgpu.run_scoped(function(a)
        a:store(mgpu.broadcast(0, { 1, n }, "f32"))
        mgpu.emit_pipeline(function(_, xs) a:store(a:load() + xs:load()) end, {
          in_specs = { mgpu.BlockSpec{ { 1, n }, function(i) return i, 0 end, delay_release = 1 } },
          grid = { m }, max_concurrent_steps = 2 })(x)
        return a:load()
      end, mgpu.SMEM({ 1, n }, "f32"))
      o:store(acc)
    end }
    local x = C.uniform({ m, n })
    local hx, want = C.flat(x), {}
    for c = 1, n do
      want[c] = 0
      for r = 0, m - 1 do want[c] = want[c] + hx[r * n + c] end
    end
    C.close(k(x), want, 1e-6)
  end)

  if not wg then      -- JAX skips it under Warpgroup semantics
    for _, depth in ipairs({ 2, 3, 4 }) do
      diverge("test_emit_in_specs_only(max_concurrent_steps=" .. depth .. ")", "new-blockspec-oob",
              "BlockSpec has no oob_fill_mode", "oob_fill_mode", function()
        local m, n = 16, 128
        local k = cls.kernel{ out_shape = mgpu.shape({ 1, n }, "f32"), scratch_shapes = { mgpu.SMEM({ 1, n }, "f32") },
          body = function(x, o, acc)
            acc:store(mgpu.broadcast(0, { 1, n }, "f32"))
            mgpu.emit_pipeline(function(_, xs) acc:store(acc:load() + xs:load()) end, {
              in_specs = { mgpu.BlockSpec{ { 1, n }, function(i) return i, 0 end, oob_fill_mode = "promise_in_bounds" } },
              grid = { m }, max_concurrent_steps = depth })(x)
            o:store(acc:load())
          end }
        local x = C.uniform({ m, n })
        local hx, want = C.flat(x), {}
        for c = 1, n do
          want[c] = 0
          for r = 0, m - 1 do want[c] = want[c] + hx[r * n + c] end
        end
        C.close(k(x), want, 1e-6)
      end)
    end
  end

  diverge("test_pipeline_oob_mode", "new-blockspec-oob", "BlockSpec has no oob_fill_mode", "oob_fill_mode", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 512 }, "i8"), body = function(x, o)
      mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load()) end, {
        grid = { 1 }, in_specs = { mgpu.BlockSpec{ { 512 }, function(i) return i end, oob_fill_mode = "undefined" } },
        out_specs = { mgpu.BlockSpec{ { 512 }, function(i) return i end } }, max_concurrent_steps = 1 })(x, o)
    end }
    local x = C.uniform({ 512 }, "i8", -128, 128)
    C.equal(k(x), C.flat(x))
  end)

  test("test_emit_with_parallel_grid", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 4 * 32, 5 * 16 }, "f32"), grid = { 4 }, grid_names = { "x" }, body = function(x, o)
      local pid = mgpu.axis_index("x")
      mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load() + 1.0) end, {
        in_specs = { mgpu.BlockSpec{ { 32, 16 }, function(i) return pid, i end } },
        out_specs = { mgpu.BlockSpec{ { 32, 16 }, function(i) return pid, i end } },
        grid = { 5 }, max_concurrent_steps = 2 })(x, o)
    end }
    local x = ints({ 128, 80 }, "f32", -1000, 1000)
    C.equal(k(x), plus(x, 1))
  end)

  test("test_emit_with_dynamic_grid_smaller_than_concurrent_steps", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "i32"), body = function(nblocks, x, o)
      for _ = 1, 2 do
        mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load()) end, {
          grid = { nblocks }, in_specs = { mgpu.BlockSpec{ { 128 }, function(i) return i end } },
          out_specs = { mgpu.BlockSpec{ { 128 }, function(i) return i end } }, max_concurrent_steps = 2 })(x, o)
      end
    end }
    k(0, C.uniform({ 128 }, "i32", -128, 128))
  end)

  -- static=True passes the grid as traced values (jnp.asarray), as JAX's test does.
  for _, static in ipairs({ false, true }) do
    for _, short in ipairs({ false, true }) do
      test(string.format("test_emit_with_2d_grid(static=%s, short=%s)", tostring(static), tostring(short)), function()
        local n1, n2 = 4, 5
        if short then n1, n2 = 1, 1 end
        local k = cls.kernel{ out_shape = mgpu.shape({ 32, n1 * 16, n2 * 8 }, "f32"), body = function(x, o)
          local grid = { n1, n2 }
          if static then grid = { mgpu.const(n1, "i32"), mgpu.const(n2, "i32") } end
          mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load() + 1.0) end, {
            in_specs = { mgpu.BlockSpec{ { 32, 16, 8 }, function(i, j) return 0, i, j end } },
            out_specs = { mgpu.BlockSpec{ { 32, 16, 8 }, function(i, j) return 0, i, j end } },
            grid = grid, max_concurrent_steps = 2 })(x, o)
        end }
        local x = ints({ 32, n1 * 16, n2 * 8 }, "f32", -1000, 1000)
        C.equal(k(x), plus(x, 1))
      end)
    end
  end

  test("test_emit_with_carry", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 64, 256 }, "i32"), body = function(o)
      mgpu.emit_pipeline(function(_, os, carry)
        os:store(mgpu.broadcast(carry, { 64, 64 }, "i32"))
        return carry + 1
      end, { out_specs = { mgpu.BlockSpec{ { 64, 64 }, function(i) return 0, i end } }, grid = { 4 }, max_concurrent_steps = 2,
             init_carry = mgpu.const(0, "i32") })(o)
    end }
    C.equal(k(), C.map(mgpu.zeros({ 64 * 256 }, "i32"), function(_, i) return math.floor(((i - 1) % 256) / 64) end))
  end)

  for _, sq in ipairs({ { "Squeezed()", mgpu.squeezed }, { "None", nil } }) do
    test("test_emit_with_squeezed_dim(squeezed_dim=" .. sq[1] .. ")", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 16, 256 }, "i32"), body = function(x, o)
        mgpu.emit_pipeline(function(_, xs, os)
          assert.are.same({ 256 }, xs.shape)
          assert.are.same({ 256 }, os.shape)
          os:store(xs:load() + 1)
        end, { in_specs = { mgpu.BlockSpec{ { sq[2], 256 }, function(i) return i, 0 end } },
               out_specs = { mgpu.BlockSpec{ { sq[2], 256 }, function(i) return i, 0 end } },
               grid = { 16 }, max_concurrent_steps = 2 })(x, o)
      end }
      local x = C.uniform({ 16, 256 }, "i32", -1000, 1000)
      C.equal(k(x), plus(x, 1))
    end)
  end

  -- JAX's kernel updates one GMEM array in place (input and output alike): call_into with the input.
  test("test_emit_with_element_dim", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 20, 256 }, "i32"), body = function(x, o)
      local function imap(i) return 10 * i + 1, 0 end
      mgpu.emit_pipeline(function(_, xs, os)
        assert.are.same({ 8, 256 }, xs.shape)
        assert.are.same({ 8, 256 }, os.shape)
        os:store(xs:load() + 1)
      end, { in_specs = { mgpu.BlockSpec{ { mgpu.Element(8), 256 }, imap } },
             out_specs = { mgpu.BlockSpec{ { mgpu.Element(8), 256 }, imap } }, grid = { 2 }, max_concurrent_steps = 2 })(x, o)
    end }
    local x = C.uniform({ 20, 256 }, "i32", -1000, 1000)
    local want = C.map(x, function(v, i)
      local row = math.floor((i - 1) / 256)
      return (row - 1) % 10 < 8 and v + 1 or v
    end)
    C.equal(k:call_into(x, x), want)
  end)
end
