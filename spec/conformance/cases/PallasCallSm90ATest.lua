-- The tests of JAX's PallasCallSm90ATest (tests/pallas/mosaic_gpu_test.py): wgmma in its
-- operand forms, accumulators, and the WGMMA row/column layouts. test_realistic_matmul runs
-- a 1x2x2 grid of tiles instead of JAX's 132x4x10 (README).
local assert = require "luassert"
local C = dofile("spec/conformance/support/conf.lua")
local mgpu, T, L = C.mgpu, C.T, C.L
local ds, all = mgpu.ds, mgpu.all

local function default_transforms(dtype, swizzle)
  swizzle = swizzle or 128
  local bits = ({ f32 = 32, f16 = 16, bf16 = 16, i8 = 8, u8 = 8, f8e4m3 = 8, f8e5m2 = 8 })[dtype]
  return { T.tiling{ 8, 8 * swizzle / bits }, T.swizzle(swizzle) }
end

-- The transpose of a flat (r, c) table.
local function transpose(t, r, c)
  local o = {}
  for i = 0, r - 1 do for j = 0, c - 1 do o[j * r + i + 1] = t[i * c + j + 1] end end
  return o
end

-- a (m, k) @ b (k, n) in double precision (mgpu.host), from flat row-major tables;
-- bt: b is given as (n, k).
local function matmul(a, b, m, k, n, bt)
  if bt then b = transpose(b, n, k) end
  return mgpu.host.matmul(mgpu.host.from_table(a, { m, k }), mgpu.host.from_table(b, { k, n })):to_table()
end


return function(cls)
  local test, diverge, check = cls.test, cls.diverge, cls.check

  for _, force in ipairs({ false, true }) do
    test("test_fori_loop_accumulator(force_while=" .. tostring(force) .. ")", function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 64 }, "f16"),
        in_specs = { mgpu.BlockSpec{ { 64, 64 }, transforms = default_transforms("f16") } },
        out_specs = mgpu.BlockSpec{ { 64, 64 } },
        body = function(i, o)
          o:store(mgpu.run_scoped(function(acc)
            local lo, hi = 0, 4
            if force then lo, hi = mgpu.const(0, "i32"), mgpu.const(4, "i32") end
            return mgpu.fori(lo, hi, function(_, v) return v + acc:load() end, acc:load())
          end, mgpu.ACC.init(i:load())))
        end }
      local x = C.uniform({ 64, 64 }, "i32", -8, 8):copy("f16")
      C.equal(k(x), C.map(x, function(v) return 5 * v end))
    end)
  end

  for _, lt in ipairs({ false, true }) do
    for _, rt in ipairs({ false, true }) do
      test(string.format("test_realistic_matmul(lhs_transpose=%s, rhs_transpose=%s)", tostring(lt), tostring(rt)), function()
        local gm, gn, gk, tile, tk = 1, 2, 2, 128, 64
        local m, n, kk = gm * tile, gn * tile, gk * tk
        local xf = default_transforms("f16")
        local lhs = lt and mgpu.BlockSpec{ { tk, tile }, function(i, _, l) return l, i end, delay_release = 1, transforms = xf }
                       or mgpu.BlockSpec{ { tile, tk }, function(i, _, l) return i, l end, delay_release = 1, transforms = xf }
        local rhs = rt and mgpu.BlockSpec{ { tile, tk }, function(_, j, l) return j, l end, delay_release = 1, transforms = xf }
                       or mgpu.BlockSpec{ { tk, tile }, function(_, j, l) return l, j end, delay_release = 1, transforms = xf }
        local k = cls.pallas_call{ out_shape = mgpu.shape({ m, n }, "f16"), grid = { gm, gn, gk },
          in_specs = { lhs, rhs }, out_specs = mgpu.BlockSpec{ { tile, tile }, function(i, j, _) return i, j end, transforms = xf },
          scratch_shapes = { mgpu.ACC({ tile, tile }, "f32") },
          compiler_params = { dimension_semantics = { "parallel", "parallel", "sequential" }, max_concurrent_steps = 2 },
          body = function(a, b, o, acc)
            if lt then a = mgpu.transpose_ref(a, { 1, 0 }) end
            if rt then b = mgpu.transpose_ref(b, { 1, 0 }) end
            assert.are.same({ tile, tk }, a.shape)
            assert.are.same({ tk, tile }, b.shape)
            mgpu.wgmma(acc, a, b)
            mgpu.when(mgpu.eq(mgpu.program_id(2), gk - 1), function() o:store(acc:load():astype("f16")) end)
            mgpu.wgmma_wait(1)
          end }
        local a = C.uniform(lt and { kk, m } or { m, kk }, "f16")
        local b = C.uniform(rt and { n, kk } or { kk, n }, "f16")
        local ha, hb = C.flat(a), C.flat(b)
        if lt then ha = transpose(ha, kk, m) end
        C.close(k(a, b), C.round(matmul(ha, hb, m, kk, n, rt), "f16"), 1e-3, 0)
      end)
    end
  end

  test("test_wgmma_fence_ptx", function()
    local xf = default_transforms("f16")
    local k = cls.kernel{ out_shape = mgpu.shape({ 64, 64 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 64, 64 }, "f16", { transforms = xf }), mgpu.SMEM({ 64, 64 }, "f16", { transforms = xf }) },
      body = function(o, a, b)
        o:store(mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc, a, b)
          return acc:load()
        end, mgpu.ACC({ 64, 64 }, "f32")))
      end }
    local _, n = k:lower().ptx:gsub("wgmma%.fence%.sync%.aligned", "")
    assert.are.equal(1, n)
  end)

  for _, dtype in ipairs({ "f16", "f32" }) do
    test("test_wgmma(dtype=" .. dtype .. ")", function()
      local rt = dtype == "f32"          -- 32-bit operands are K-major: B is given as (N, K)
      local bshape = rt and { 192, 128 } or { 128, 192 }
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 192 }, "f32"), grid = { 1, 1 },
        in_specs = { mgpu.BlockSpec{ { 64, 128 }, function(i, j) return i, j end, transforms = default_transforms(dtype) },
                     mgpu.BlockSpec{ bshape, function(i, j) return i, j end, transforms = default_transforms(dtype) } },
        out_specs = mgpu.BlockSpec{ { 64, 192 }, function(i, j) return i, j end },
        body = function(a, b, o)
          if rt then b = mgpu.transpose_ref(b, { 1, 0 }) end
          o:store(mgpu.run_scoped(function(acc)
            mgpu.wgmma(acc, a, b)
            return acc:load()
          end, mgpu.ACC({ 64, 192 }, "f32")))
        end }
      local a, b = C.uniform({ 64, 128 }, dtype), C.uniform(bshape, dtype)
      C.close(k(a, b), matmul(C.flat(a), C.flat(b), 64, 128, 192, rt), 1e-3)
    end)
  end

  for _, dtype in ipairs({ "i8", "u8" }) do
    test("test_wgmma_integer(dtype=" .. dtype .. ")", function()
      local xf = default_transforms(dtype)
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 64 }, "i32"), grid = { 1, 1 },
        in_specs = { mgpu.BlockSpec{ { 64, 128 }, function(i, j) return i, j end, transforms = xf },
                     mgpu.BlockSpec{ { 64, 128 }, function(i, j) return i, j end, transforms = xf } },
        out_specs = mgpu.BlockSpec{ { 64, 64 }, function(i, j) return i, j end },
        body = function(a, b, o)
          o:store(mgpu.run_scoped(function(acc)
            mgpu.wgmma(acc, a, mgpu.transpose_ref(b, { 1, 0 }))
            return acc:load()
          end, mgpu.ACC({ 64, 64 }, "i32")))
        end }
      local lo = dtype == "i8" and -7 or 0
      local a, b = C.uniform({ 64, 128 }, dtype, lo, 8), C.uniform({ 64, 128 }, dtype, lo, 8)
      C.equal(k(a, b), matmul(C.flat(a), C.flat(b), 64, 128, 64, true))
    end)
  end

  for _, pr in ipairs({ { "f8e4m3", "f8e5m2" }, { "f8e5m2", "f8e4m3" } }) do
    test(string.format("test_wgmma_mixed_fp8(lhs_dtype=%s, rhs_dtype=%s)", pr[1], pr[2]), function()
      local xf = default_transforms(pr[1])
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 64 }, "f32"), grid = { 1, 1 },
        in_specs = { mgpu.BlockSpec{ { 64, 128 }, function(i, j) return i, j end, transforms = xf },
                     mgpu.BlockSpec{ { 64, 128 }, function(i, j) return i, j end, transforms = xf } },
        out_specs = mgpu.BlockSpec{ { 64, 64 }, function(i, j) return i, j end },
        body = function(a, b, o)
          o:store(mgpu.run_scoped(function(acc)
            mgpu.wgmma(acc, a, mgpu.transpose_ref(b, { 1, 0 }))
            return acc:load()
          end, mgpu.ACC({ 64, 64 }, "f32")))
        end }
      local a = C.uniform({ 64, 128 }, "i32", -8, 8):copy(pr[1])
      local b = C.uniform({ 64, 128 }, "i32", -8, 8):copy(pr[2])
      C.equal(k(a, b), matmul(C.flat(a), C.flat(b), 64, 128, 64, true))
    end)
  end

  test("test_wgmma_sliced_acc_flip", function()
    local xf = default_transforms("f16")
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 256 }, "f32"),
      in_specs = { mgpu.BlockSpec{ transforms = xf }, mgpu.BlockSpec{ transforms = xf } },
      body = function(a, b, o)
        o:store(mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc:at(all, ds(0, 128)), a, b:at(all, ds(128, 128)))
          mgpu.wgmma(acc:at(all, ds(128, 128)), a, b:at(all, ds(0, 128)))
          return acc:load()
        end, mgpu.ACC({ 64, 256 }, "f32")))
      end }
    local a, b = C.uniform({ 64, 128 }, "f16"), C.uniform({ 128, 256 }, "f16")
    local hb, flipped = C.flat(b), {}
    for r = 0, 127 do for c = 0, 255 do flipped[r * 256 + c + 1] = hb[r * 256 + (c + 128) % 256 + 1] end end
    C.close(k(a, b), matmul(C.flat(a), flipped, 64, 128, 256), 1e-3)
  end)

  test("test_wgmma_registers", function()
    local xf = default_transforms("f16")
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 192 }, "f32"),
      in_specs = { mgpu.BlockSpec{ transforms = xf }, mgpu.BlockSpec{ transforms = xf } },
      body = function(a, b, o)
        o:store(mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc, a:load(), b)
          return acc:load()
        end, mgpu.ACC({ 64, 192 }, "f32")))
      end }
    local a, b = C.uniform({ 64, 128 }, "f16"), C.uniform({ 128, 192 }, "f16")
    C.close(k(a, b), matmul(C.flat(a), C.flat(b), 64, 128, 192), 1e-3)
  end)

  for _, dtype in ipairs({ "i8", "f8e4m3", "f8e5m2" }) do
    test("test_wgmma_registers_8bit(input_dtype=" .. dtype .. ")", function()
      local out = dtype == "i8" and "i32" or "f32"
      local xf = default_transforms(dtype, 64)
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 192 }, out),
        in_specs = { mgpu.BlockSpec{ transforms = xf }, mgpu.BlockSpec{ transforms = xf } },
        body = function(a, b, o)
          o:store(mgpu.run_scoped(function(acc)
            mgpu.wgmma(acc, a:load{ layout = L.WGMMA_8BIT }, mgpu.transpose_ref(b, { 1, 0 }))
            return acc:load()
          end, mgpu.ACC({ 64, 192 }, out)))
        end }
      local a, b
      if dtype == "i8" then a, b = C.uniform({ 64, 128 }, "i8", -128, 127), C.uniform({ 192, 128 }, "i8", -128, 127)
      else a, b = C.uniform({ 64, 128 }, dtype), C.uniform({ 192, 128 }, dtype) end
      local want = matmul(C.flat(a), C.flat(b), 64, 128, 192, true)
      if dtype == "i8" then C.equal(k(a, b), want) else C.close(k(a, b), want, 1e-6) end
    end)
  end

  test("test_wgmma_registers_init", function()
    local xf = default_transforms("f16")
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 192 }, "f16"),
      in_specs = { mgpu.BlockSpec{ transforms = xf }, mgpu.BlockSpec{ transforms = xf }, mgpu.BlockSpec{ transforms = xf } },
      body = function(a, b, i, o)
        o:store(mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc, a:load(), b)
          return acc:load()
        end, mgpu.ACC.init(i:load())))
      end }
    local a, b = C.uniform({ 64, 128 }, "f16"), C.uniform({ 128, 192 }, "f16")
    local i = mgpu.array(C.round(C.map(C.uniform({ 64, 192 }), function(v) return 10 * v end), "f16"), "f16"):reshape({ 64, 192 })
    local hi = C.flat(i)
    C.close(k(a, b, i), C.map(matmul(C.flat(a), C.flat(b), 64, 128, 192), function(v, j) return v + hi[j] end), 2e-3)
  end)

  test("test_run_state_discharge_regression_test", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 64, 192 }, "f32"), scratch_shapes = { mgpu.Barrier{} }, body = function(a, b, o, bar)
      mgpu.run_scoped(function(bs, acc)
        mgpu.copy_gmem_to_smem(b, bs, bar)
        mgpu.barrier_wait(bar)
        mgpu.run_scoped(function()
          mgpu.wgmma(acc, a:load{ layout = L.WGMMA }, bs)
        end, mgpu.ACC.init(mgpu.layout_cast(mgpu.broadcast(0, { 64, 64 }, "f32"), L.WGMMA)))
        o:store(acc:load())
      end, mgpu.SMEM({ 128, 192 }, "f16", { transforms = default_transforms("f16") }), mgpu.ACC({ 64, 192 }, "f32"))
    end }
    local a, b = C.uniform({ 64, 128 }, "f16"), C.uniform({ 128, 192 }, "f16")
    C.close(k(a, b), matmul(C.flat(a), C.flat(b), 64, 128, 192), 2e-3)
  end)

  test("test_wgmma_registers_init_with_update", function()
    local xf = default_transforms("f16")
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 192 }, "f16"),
      in_specs = { mgpu.BlockSpec{ transforms = xf }, mgpu.BlockSpec{ transforms = xf }, mgpu.BlockSpec{ transforms = xf } },
      body = function(a, b, i, o)
        o:store(mgpu.run_scoped(function(acc)
          acc:store(acc:load() * 2)
          mgpu.wgmma(acc, a:load(), b)
          return acc:load()
        end, mgpu.ACC.init(i:load())))
      end }
    local a, b = C.uniform({ 64, 128 }, "f16"), C.uniform({ 128, 192 }, "f16")
    local i = mgpu.array(C.round(C.map(C.uniform({ 64, 192 }), function(v) return 10 * v end), "f16"), "f16"):reshape({ 64, 192 })
    local hi = C.flat(i)
    C.close(k(a, b, i), C.map(matmul(C.flat(a), C.flat(b), 64, 128, 192), function(v, j) return v + 2 * hi[j] end), 2e-3)
  end)

  test("test_wgmma_sliced_ref", function()
    local xf = default_transforms("f16")
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 192 }, "f32"),
      in_specs = { mgpu.BlockSpec{ transforms = xf }, mgpu.BlockSpec{ transforms = xf } },
      body = function(a, b, o)
        o:store(mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc, a:at(0), b:at(0))
          return acc:load()
        end, mgpu.ACC({ 64, 192 }, "f32")))
      end }
    local a, b = C.uniform({ 2, 64, 128 }, "f16"), C.uniform({ 2, 128, 192 }, "f16")
    C.close(k(a, b), matmul({ table.unpack(C.flat(a), 1, 64 * 128) }, { table.unpack(C.flat(b), 1, 128 * 192) }, 64, 128, 192), 1e-3)
  end)

  test("test_collapsing_several_non_unit_tiled_dimensions_raises", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f16"),
      scratch_shapes = { mgpu.SMEM({ 128, 4, 32 }, "f16", { transforms = { T.tiling{ 2, 16 }, T.swizzle(32) } }) },
      body = function(o, s) o:store(s:reshape({ 128, 128 }):load()) end }
    assert.matches("PallasCallSm90ATest%.lua:%d+: reshape: .*tiled dim", C.err_of(k.lower, k))
  end)

  diverge("test_wgmma_reshaped_rhs_unit_tiling", "new-ref-reshape-tiled", "ref reshape across a (8, 1, 64) tiling",
          "only the first tiled dim may be merged or split", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 64, 128 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 64, 128 }, "f16", { transforms = default_transforms("f16") }),
                         mgpu.SMEM({ 128, 2, 64 }, "f16", { transforms = { T.tiling{ 8, 1, 64 }, T.swizzle(128) } }),
                         mgpu.Barrier{ num_arrivals = 2 } },
      body = function(lhs, rhs, o, ls, rs, bar)
        mgpu.copy_gmem_to_smem(lhs, ls, bar)
        mgpu.copy_gmem_to_smem(rhs, rs, bar)
        mgpu.barrier_wait(bar)
        o:store(mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc, ls, rs:reshape({ 128, 128 }))
          return acc:load()
        end, mgpu.ACC({ 64, 128 }, "f32")))
      end }
    local a, b = C.uniform({ 64, 128 }, "f16"), C.uniform({ 128, 2, 64 }, "f16")
    C.close(k(a, b), matmul(C.flat(a), C.flat(b), 64, 128, 128), 1e-3)
  end)

  test("test_wgmma_sliced_acc_read", function()
    local xf = default_transforms("f16")
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 128 }, "f32"), grid = { 1, 1 },
      in_specs = { mgpu.BlockSpec{ { 64, 128 }, function(i, j) return i, j end, transforms = xf },
                   mgpu.BlockSpec{ { 128, 128 }, function(i, j) return i, j end, transforms = xf } },
      out_specs = mgpu.BlockSpec{ { 64, 128 }, function(i, j) return i, j end },
      body = function(a, b, o)
        local left, right = mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc, a, b)
          return acc:at(all, ds(0, 64)):load(), acc:at(all, ds(64, 64)):load()
        end, mgpu.ACC({ 64, 128 }, "f32"))
        o:at(all, ds(0, 64)):store(left)
        o:at(all, ds(64, 64)):store(right)
      end }
    local a, b = C.uniform({ 64, 128 }, "f16"), C.uniform({ 128, 128 }, "f16")
    C.close(k(a, b), matmul(C.flat(a), C.flat(b), 64, 128, 128), 1e-3)
  end)

  -- plgpu.wgmma_accumulator_load(acc, wait_n) is acc:load() in mgpu: reading an accumulator waits
  -- for its own wgmma groups only, so loading acc0 then acc1 waits for 1 group, then 0.
  -- With ptxas present, its notes about the two wgmmas are divergence 12.
  test("test_wgmma_accumulator_load_with_custom_wait", function()
    local xf = default_transforms("f16")
    local k = cls.pallas_call{ out_shape = { mgpu.shape({ 64, 64 }, "f32"), mgpu.shape({ 64, 64 }, "f32") }, grid = { 1, 1 },
      in_specs = { mgpu.BlockSpec{ transforms = xf }, mgpu.BlockSpec{ transforms = xf } },
      out_specs = { mgpu.BlockSpec{}, mgpu.BlockSpec{} },
      body = function(a, b, o0, o1)
        local acc0, acc1 = mgpu.run_scoped(function(r0, r1)
          mgpu.wgmma(r0, a, b)
          mgpu.wgmma(r1, a, b)
          return r0:load(), r1:load()
        end, mgpu.ACC({ 64, 64 }, "f32"), mgpu.ACC({ 64, 64 }, "f32"))
        o0:store(acc0)
        o1:store(acc1)
      end }
    local a, b = C.uniform({ 64, 64 }, "f16"), C.uniform({ 64, 64 }, "f16")
    local out0, out1 = k(a, b)
    local ptx = k:lower(a, b).ptx
    local waits = {}
    for n in ptx:gmatch("wgmma%.wait_group%.sync%.aligned%s+(%d+);") do waits[#waits + 1] = tonumber(n) end
    -- acc0's load waits until one group is left, acc1's for none (a last wait 0 ends the body)
    assert.are.same({ 1, 0 }, { waits[1], waits[2] })
    for i = 3, #waits do assert.are.equal(0, waits[i]) end
    C.equal(out1, C.flat(out0))
    C.close(out0, matmul(C.flat(a), C.flat(b), 64, 64, 64), 1e-3)
    if C.ptxas then
      local notes = C.ptxas(ptx):match("[^\n]*%(C75[^\n]*")
      if notes then error(notes, 0) end
    end
  end)

  for _, space in ipairs({ "SMEM", "GMEM" }) do
    for _, lay in ipairs({ 1, 0 }) do
      for _, m in ipairs({ 64, 128, 192 }) do
        test(string.format("test_load_to_wgmma_row_col_layout_with_indexing(src_memory_space=%s, layout=WGMMA.reduce(%d), m=%d)",
                           space, lay, m), function()
          local k = cls.pallas_call{ out_shape = mgpu.shape({ 2, m }, "f32"),
            in_specs = { mgpu.BlockSpec{ memory_space = space } }, out_specs = mgpu.BlockSpec{ memory_space = mgpu.SMEM },
            body = function(x, o)
              for i = 0, 1 do o:at(i):store(x:at(i):load{ layout = L.WGMMA:reduce(lay) }) end
            end }
          local x = C.normal({ 2, m })
          C.equal(k(x), C.flat(x))
        end)
      end
    end
  end

  for _, lay in ipairs({ 1, 0 }) do
    test("test_load_row_input_to_wgmma_with_transforms(src_memory_space=SMEM, layout=WGMMA.reduce(" .. lay .. "))", function()
      local m, kk, n = 64, 128, 192
      local k = cls.pallas_call{ out_shape = mgpu.shape({ m, n }, "f32"),
        in_specs = { mgpu.BlockSpec{ memory_space = mgpu.SMEM }, mgpu.BlockSpec{ transforms = default_transforms("f16") } },
        out_specs = mgpu.BlockSpec{ memory_space = mgpu.SMEM },
        body = function(x, y, o)
          local xv = x:load{ layout = L.WGMMA:reduce(lay) }:broadcast_in_dim({ m, kk }, { lay == 1 and 0 or 1 })
          o:store(mgpu.run_scoped(function(acc)
            mgpu.wgmma(acc, xv, y)
            return acc:load()
          end, mgpu.ACC({ m, n }, "f32")))
        end }
      local a, b = C.uniform({ lay == 1 and m or kk }, "f16"), C.uniform({ kk, n }, "f16")
      local ha, full = C.flat(a), {}
      for r = 0, m - 1 do for c = 0, kk - 1 do full[r * kk + c + 1] = lay == 1 and ha[r + 1] or ha[c + 1] end end
      C.close(k(a, b), matmul(full, C.flat(b), m, kk, n), 1e-3)
    end)
  end

  test("test_load_store_wgmma_transposed", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 8, 64 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 8, 64 }, "f32", { transforms = default_transforms("f32", 64) }), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        mgpu.copy_gmem_to_smem(x, s, bar)
        mgpu.barrier_wait(bar)
        local st = mgpu.transpose_ref(s, { 1, 0 })
        st:store(st:load{ layout = L.WGMMA_TRANSPOSED } + 1)
        mgpu.commit_smem()
        mgpu.copy_smem_to_gmem(s, o)
        mgpu.wait_smem_to_gmem(0)
      end }
    local x = C.uniform({ 8, 64 })
    C.equal(k(x), C.round(C.map(x, function(v) return v + 1 end), "f32"))
  end)
end
