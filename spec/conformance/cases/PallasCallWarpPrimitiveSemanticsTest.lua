-- The tests of JAX's PallasCallWarpPrimitiveSemanticsTest (tests/pallas/mosaic_gpu_test.py):
-- code run per warp with plgpu.warp_map. mgpu has no warp_map; its mgpu.single_warp runs a
-- function on the warpgroup's first warp, which is warp_map with pl.when(warp_id == 0), so the
-- tests that only use warp 0 are written with it and the others diverge.
local C = dofile("spec/conformance/support/conf.lua")
local mgpu = C.mgpu
local ds = mgpu.ds

return function(cls)
  local test, diverge = cls.test, cls.diverge
  local function warp_map_missing(name, fn)
    diverge(name, "new-warp_map", "mgpu has no warp_map (code per warp with its warp id)", "warp_map", fn)
  end

  -- y[0] = ones from warp 1, y[1] = threes from warp 3, each through a copy from SMEM.
  local function axis_index_kernel(map)
    return cls.kernel{ out_shape = mgpu.shape({ 2, 128 }, "i32"), body = function(y)
      mgpu.run_scoped(function(ones, threes)
        ones:store(mgpu.broadcast(1, { 1, 128 }, "i32"))
        threes:store(mgpu.broadcast(3, { 1, 128 }, "i32"))
        mgpu.commit_smem()
        map(function(warp_id)
          mgpu.when(mgpu.eq(warp_id, 1), function()
            mgpu.async_prefetch(y:at(ds(1, 1)))
            mgpu.copy_smem_to_gmem(ones, y:at(ds(0, 1)))
          end)
          mgpu.when(mgpu.eq(warp_id, 3), function() mgpu.copy_smem_to_gmem(threes, y:at(ds(1, 1))) end)
        end)
        mgpu.wait_smem_to_gmem(0)
      end, mgpu.SMEM({ 1, 128 }, "i32"), mgpu.SMEM({ 1, 128 }, "i32"))
    end }
  end
  local function ones_threes()
    return C.map(mgpu.zeros({ 256 }, "i32"), function(_, i) return i <= 128 and 1 or 3 end)
  end

  warp_map_missing("test_axis_index", function()
    C.equal(axis_index_kernel(function(f) mgpu.warp_map(f) end)(), ones_threes())
  end)

  warp_map_missing("test_axis_index_mpmd_map", function()
    C.equal(axis_index_kernel(function(f) mgpu.warp_map(f) end)(), ones_threes())
  end)

  warp_map_missing("test_axis_index_multi_warpgroup", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 8 }, "i32"), num_threads = 2, thread_name = "wg", body = function(o)
      local wg = mgpu.axis_index("wg")
      mgpu.warp_map(function(warp_id) o:at(wg * 4 + warp_id):store(warp_id) end)
    end }
    C.equal(k(), { 0, 1, 2, 3, 0, 1, 2, 3 })
  end)

  warp_map_missing("test_scalar_load", function()
    local k = cls.kernel{ out_shape = mgpu.shape({}, "i32"), body = function(x, y)
      mgpu.warp_map(function(warp_id) mgpu.when(mgpu.eq(warp_id, 1), function() y:store(x:load()) end) end)
    end }
    C.equal(k(mgpu.full({}, 4, "i32")), { 4 })
  end)

  warp_map_missing("test_non_scalar_load_raises", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2 }, "i32"), body = function(x, y)
      mgpu.warp_map(function(warp_id) mgpu.when(mgpu.eq(warp_id, 1), function() y:store(x:load()) end) end)
    end }
    local err = C.err_of(k, mgpu.full({ 2 }, 1, "i32"))
    assert(err:find("scalar"), err)
  end)

  local function tdiv(a, b) local q = a / b; return q >= 0 and math.floor(q) or -math.floor(-q) end
  local ops = {
    { "add", function(x, y) return x + y end, function(a, b) return a + b end },
    { "sub", function(x, y) return x - y end, function(a, b) return a - b end },
    { "mul", function(x, y) return x * y end, function(a, b) return a * b end },
    { "div", mgpu.div, tdiv },
    { "rem", mgpu.rem, function(a, b) return a - tdiv(a, b) * b end },
    { "bitwise_and", mgpu.bitwise_and, function(a, b) return C.bitop(a, b, function(x, y) return x * y end) end },
    { "bitwise_or", mgpu.bitwise_or, function(a, b) return C.bitop(a, b, function(x, y) return math.max(x, y) end) end },
    { "bitwise_xor", mgpu.bitwise_xor, function(a, b) return C.bitop(a, b, function(x, y) return (x + y) % 2 end) end },
    { "max", mgpu.max, math.max }, { "min", mgpu.min, math.min },
    { "gt", mgpu.gt, function(a, b) return a > b and 1 or 0 end }, { "lt", mgpu.lt, function(a, b) return a < b and 1 or 0 end },
    { "ge", mgpu.ge, function(a, b) return a >= b and 1 or 0 end }, { "le", mgpu.le, function(a, b) return a <= b and 1 or 0 end },
    { "eq", mgpu.eq, function(a, b) return a == b and 1 or 0 end }, { "ne", mgpu.ne, function(a, b) return a ~= b and 1 or 0 end },
  }
  for _, op in ipairs(ops) do
    warp_map_missing("test_scalar_binary_op(op=" .. op[1] .. ")", function()
      local k = cls.kernel{ out_shape = mgpu.shape({}, "i32"), body = function(y)
        mgpu.warp_map(function(warp_id)
          mgpu.when(mgpu.eq(warp_id, 1), function()
            y:store(op[2](mgpu.const(1234, "i32"), mgpu.const(6543, "i32")):astype("i32"))
          end)
        end)
      end }
      C.equal(k(), { op[3](1234, 6543) })
    end)
  end

  warp_map_missing("test_errors_when_closing_over_array", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 32, 32 }, "f32"), scratch_shapes = { mgpu.SMEM({ 32, 32 }, "f32") },
      body = function(o, s)
        local arr = mgpu.broadcast(1, { 32, 32 }, "f32")
        mgpu.warp_map(function() s:store(arr + 1) end)
        mgpu.commit_smem()
        mgpu.copy_smem_to_gmem(s, o)
        mgpu.wait_smem_to_gmem(0)
      end }
    local err = C.err_of(k)
    assert(err:find("close over"), err)
  end)

  -- force_while: the loop's bounds are traced values.
  for _, force in ipairs({ true, false }) do
    test("test_single_warp_loop(force_while=" .. tostring(force) .. ")", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 10, 128 }, "i32"), body = function(y)
        mgpu.run_scoped(function(s)
          for i = 0, 9 do s:at(i):store(mgpu.broadcast(i, { 128 }, "i32")) end
          mgpu.commit_smem()
          mgpu.single_warp(function()
            local lo, hi = 0, 10
            if force then lo, hi = mgpu.const(0, "i32"), mgpu.const(10, "i32") end
            mgpu.fori(lo, hi, function(i) mgpu.copy_smem_to_gmem(s:at(ds(i, 1)), y:at(ds(i, 1))) end)
          end)
          mgpu.wait_smem_to_gmem(0)
        end, mgpu.SMEM({ 10, 128 }, "i32"))
      end }
      C.equal(k(), C.map(mgpu.zeros({ 1280 }, "i32"), function(_, i) return math.floor((i - 1) / 128) end))
    end)
  end

  diverge("test_nd_loop_under_warp", "new-warp-copy-wait", "wait_smem_to_gmem refused in one warp",
          "cannot run inside single_warp", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2, 32 }, "i32"), grid = { 2 }, grid_names = { "sm" },
      scratch_shapes = { mgpu.SMEM({ 32 }, "i32", { transforms = { C.T.swizzle(128) } }), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        mgpu.copy_gmem_to_smem(x, s, bar)
        mgpu.barrier_wait(bar)
        mgpu.commit_smem()
        mgpu.single_warp(function()
          mgpu.nd_loop({ 2 }, { collective_axes = { "sm" } }, function(info)
            mgpu.copy_smem_to_gmem(s, o:at(info.index[1]))
            mgpu.wait_smem_to_gmem(0)
          end)
        end)
      end }
    local x = C.uniform({ 32 }, "i32", -1000, 1000)
    C.equal(k(x), C.concat(x, x))
  end)

  warp_map_missing("test_debug_print", function()
    local out, err = C.run_script([[
      local mgpu = require "mgpu"
      local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "i32"), body = function(r)
        r:store(r:load())
        mgpu.warp_map(function(warp_id) mgpu.debug_print("warp: {}", warp_id) end)
      end }
      k()]])
    assert(out:find("warp: 3"), "the script printed: " .. out .. err)
  end)

  for _, in_warp in ipairs({ false, true }) do
    warp_map_missing("test_copy_gmem_to_smem_from_different_warps(wait_smem_to_gmem_in_warp=" .. tostring(in_warp) .. ")", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 32, 32 }, "f32"), body = function(x, y)
        mgpu.run_scoped({ smem = mgpu.SMEM({ 32, 32 }, "f32"), bar = mgpu.Barrier{} }, function(s)
          mgpu.warp_map(function(warp_id)
            mgpu.when(mgpu.eq(warp_id, 0), function() mgpu.copy_gmem_to_smem(x:at(ds(32, 32)), s.smem, s.bar) end)
            mgpu.when(mgpu.eq(warp_id, 1), function()
              mgpu.barrier_wait(s.bar)
              mgpu.copy_smem_to_gmem(s.smem, y)
              if in_warp then mgpu.wait_smem_to_gmem(0) end
            end)
          end)
          if not in_warp then mgpu.wait_smem_to_gmem(0) end
        end)
      end }
      local x = C.uniform({ 64, 32 })
      C.equal(k(x), { table.unpack(C.flat(x), 32 * 32 + 1, 64 * 32) })
    end)
  end

  diverge("test_warp_specialized_transpose", "new-warp-copy-wait", "wait_smem_to_gmem refused in one warp",
          "cannot run inside single_warp", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 4, 2, 64 }, "f32"), scratch_shapes = { mgpu.SMEM({ 2, 4, 64 }, "f32") },
      body = function(x, o, s)
        s:store(x:load())
        mgpu.single_warp(function()
          mgpu.copy_smem_to_gmem(mgpu.transpose_ref(s, { 1, 0, 2 }), o)
          mgpu.wait_smem_to_gmem(0)
        end)
      end }
    local x = C.uniform({ 2, 4, 64 })
    local hx, want = C.flat(x), {}
    for a = 0, 3 do for b = 0, 1 do for c = 1, 64 do want[#want + 1] = hx[(b * 4 + a) * 64 + c] end end end
    C.equal(k(x), want)
  end)

  diverge("test_warp_specialized_smem_slice", "new-warp-copy-wait", "wait_smem_to_gmem refused in one warp",
          "cannot run inside single_warp", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2, 64, 128 }, "f32"), scratch_shapes = { mgpu.SMEM({ 2, 64, 128 }, "f32") },
      body = function(x, o, s)
        s:store(x:load())
        mgpu.single_warp(function()
          mgpu.copy_smem_to_gmem(s:at(0), o:at(0))
          mgpu.copy_smem_to_gmem(s:at(1), o:at(1))
          mgpu.wait_smem_to_gmem(0)
        end)
      end }
    local x = C.uniform({ 2, 64, 128 })
    C.equal(k(x), C.flat(x))
  end)
end
