-- Blackwell tensor memory (sm_100a): TMEM scratch, column views, loads and
-- stores in the TCGEN05 layouts, wait_load_tmem / commit_tmem, the
-- column plan and its 512-column limit, the race checks, and the PTX.
local mgpu = require "mgpu"
local util = dofile("spec/support/util.lua")
local err_of = util.err_of

-- A kernel storing x (128 x n, dtype) into TMEM columns [c0, c0 + n) and
-- loading them back, each in layout lay; dynamic: the start is 4 times the
-- kernel's scalar argument (a multiple of every packing, as tracing knows).
local function round_trip(dt, n, lay, c0, dynamic)
  return mgpu.kernel{ name = "round_trip", out_shape = mgpu.shape({ 128, n }, dt),
    scratch_shapes = { mgpu.TMEM({ 128, 2 * n }, dt) },
    body = function(x, start, o, t)
      local cols = t:at(mgpu.all, mgpu.ds(dynamic and start * 4 or c0, n))
      mgpu.async_store_tmem(cols, x:load{ layout = lay })
      mgpu.commit_tmem()
      local y = mgpu.async_load_tmem(cols, { layout = lay })
      mgpu.wait_load_tmem()
      o:store(y)
    end }
end

describe("TMEM", function()
  local saved
  setup(function() saved = mgpu.device().target; mgpu.configure{ target = "sm_100a" } end)
  teardown(function() mgpu.configure{ target = saved } end)

  for _, c in ipairs({ { "f32", mgpu.Layout.TCGEN05 }, { "f32", mgpu.Layout.TCGEN05_TMEM_NATIVE },
                       { "i32", mgpu.Layout.TCGEN05_TMEM_NATIVE(4) }, { "bf16", mgpu.Layout.TCGEN05_TMEM_NATIVE(2) },
                       { "f16", mgpu.Layout.TCGEN05_TMEM_NATIVE }, { "i8", mgpu.Layout.TCGEN05_TMEM_NATIVE(4) } }) do
    local dt, lay = c[1], c[2]
    it("holds " .. dt .. " values stored and loaded in " .. tostring(lay) .. ", at static and dynamic columns", function()
      for _, dynamic in ipairs({ false, true }) do
        local x = mgpu.random.uniform({ 128, 64 }, dt, 7, -100, 100)
        local y = round_trip(dt, 64, lay, 32, dynamic)(x, 8)
        assert.are.equal(0, mgpu.host.relerr(y, x))
      end
    end)
  end

  it("loads with the default layouts: TCGEN05 for 32-bit values, a row per thread for packed ones", function()
    for _, dt in ipairs({ "f32", "bf16" }) do
      local k = mgpu.kernel{ out_shape = mgpu.shape({ 128, 32 }, dt), scratch_shapes = { mgpu.TMEM({ 128, 32 }, dt) },
        body = function(x, o, t)
          mgpu.async_store_tmem(t, x:load())
          mgpu.commit_tmem()
          o:store(mgpu.async_load_tmem(t))
        end }
      local x = mgpu.random.uniform({ 128, 32 }, dt, 3)
      assert.are.equal(0, mgpu.host.relerr(k(x), x))
      assert.matches(dt == "f32" and "tcgen05%.ld%.sync%.aligned%.16x256b" or "tcgen05%.ld%.sync%.aligned%.32x32b",
                     k:lower(x).ptx)
    end
  end)

  it("hands the columns of ended run_scoped TMEM to the next scope (columns planned like SMEM)", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 128, 256 }, "f32"),
      body = function(x, o)
        for h = 0, 1 do
          mgpu.run_scoped(function(t)
            local cols = t:at(mgpu.all, mgpu.ds(256, 128))
            mgpu.async_store_tmem(cols, x:at(mgpu.all, mgpu.ds(128 * h, 128)):load{ layout = mgpu.Layout.TCGEN05 })
            mgpu.commit_tmem()
            o:at(mgpu.all, mgpu.ds(128 * h, 128)):store(mgpu.async_load_tmem(cols))
            mgpu.wait_load_tmem()
          end, mgpu.TMEM({ 128, 384 }, "f32"))
        end
      end }
    local x = mgpu.random.normal({ 128, 256 }, "f32", 5)
    assert.are.equal(0, mgpu.host.relerr(k(x), x))
    assert.matches("tcgen05%.alloc%.cta_group::1%.sync%.aligned%.shared::cta%.b32 %[%%r%d+%], 512;",
                   k:lower(mgpu.shape({ 128, 256 }, "f32")).ptx)
  end)

  it("refuses more than 512 columns at the allocation that goes over, naming what is live", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"),
      scratch_shapes = { mgpu.TMEM({ 128, 256 }, "f32"), mgpu.TMEM({ 128, 512 }, "bf16"), mgpu.TMEM({ 128, 64 }, "f32") },
      body = function(o, a, b, c) end }
    local e = err_of(function() k:lower() end)
    assert.matches("tmem_spec.lua:%d+: kernel 'kernel' needs 576 columns of TMEM but a block has 512; live at the peak", e)
    assert.matches("TMEM bf16%[128,512%]: 256 columns", e)
    e = err_of(function()
      mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), scratch_shapes = { mgpu.TMEM({ 128, 520 }, "f32") },
                   body = function(o, t) end }:lower()
    end)
    assert.matches("tmem_spec.lua:%d+: TMEM: 520 columns of f32 need 520 32%-bit columns, but a block has 512", e)
  end)

  it("refuses shapes, dtypes and views tensor memory does not have, at the script line", function()
    local function lower(body, spec)
      return err_of(function()
        mgpu.kernel{ out_shape = mgpu.shape({ 128, 64 }, "f32"), scratch_shapes = { spec or mgpu.TMEM({ 128, 64 }, "f32") },
                     body = body }:lower()
      end)
    end
    local nop = function() end
    assert.matches(":%d+: TMEM: the shape must have 128 rows", lower(nop, mgpu.TMEM({ 64, 64 }, "f32")))
    assert.matches(":%d+: TMEM: bf16 packs 2 values to a 32%-bit column, so the column count must be a positive multiple of 2",
                   lower(nop, mgpu.TMEM({ 128, 63 }, "bf16")))
    assert.matches(":%d+: TMEM: dtype f64 is not supported", lower(nop, mgpu.TMEM({ 128, 64 }, "f64")))
    assert.matches("tmem_spec.lua:%d+: TMEM: the shape must be {rows, columns}, got 1 dims",
                   err_of(function() return mgpu.TMEM({ 128 }, "f32") end))
    assert.matches(":%d+: TMEM refs are sliced along columns only",
                   lower(function(o, t) mgpu.async_load_tmem(t:at(mgpu.ds(0, 64), mgpu.all)) end))
    assert.matches(":%d+: load: the ref is in tensor memory: use mgpu.async_load_tmem", lower(function(o, t) o:store(t:load()) end))
    assert.matches(":%d+: async_store_tmem: shapes &tmem f32%[128,64%] and f32%[128,32%] do not match",
                   lower(function(o, t) mgpu.async_store_tmem(t, o:at(mgpu.all, mgpu.ds(0, 32)):load()) end))
  end)

  it("is Blackwell-only: TMEM for sm_90a is an error at the script line naming the target", function()
    mgpu.configure{ target = "sm_90a" }
    local e = err_of(function()
      mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), scratch_shapes = { mgpu.TMEM({ 128, 64 }, "f32") },
                   body = function(o, t) end }:lower()
    end)
    mgpu.configure{ target = "sm_100a" }
    assert.matches("tmem_spec.lua:%d+: TMEM is Blackwell%-only %(sm_100a tensor memory, tcgen05 and cluster launch control%) but this kernel's target is sm_90a", e)
  end)

  it("faults on a read of another warpgroup's stores before its commit_tmem", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 128, 32 }, "f32"), num_threads = 2, thread_name = "wg",
      scratch_shapes = { mgpu.TMEM({ 128, 32 }, "f32"), mgpu.Barrier{} },
      body = function(x, o, t, bar)
        local wg = mgpu.axis_index("wg")
        mgpu.when(mgpu.eq(wg, 0), function()
          mgpu.async_store_tmem(t, x:load())
          mgpu.barrier_arrive(bar)                 -- no commit_tmem
        end)
        mgpu.when(mgpu.eq(wg, 1), function()
          mgpu.barrier_wait(bar)
          o:store(mgpu.async_load_tmem(t))
        end)
      end }
    local e = err_of(function() k(mgpu.random.normal({ 128, 32 }, "f32")) end)
    assert.matches("tmem_spec.lua:%d+: async_load_tmem reads TMEM that warpgroup 0 of block 0 stored at [^ ]*tmem_spec.lua:%d+ with " ..
                   "no commit_tmem since", e)
  end)

  it("faults on a store over columns another warpgroup loaded before its wait_load_tmem", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 128, 32 }, "f32"), num_threads = 2, thread_name = "wg",
      scratch_shapes = { mgpu.TMEM({ 128, 32 }, "f32"), mgpu.Barrier{ num_barriers = 2 } },
      body = function(x, o, t, bar)
        local wg = mgpu.axis_index("wg")
        mgpu.when(mgpu.eq(wg, 0), function()
          mgpu.async_store_tmem(t, x:load())
          mgpu.commit_tmem()
          mgpu.barrier_arrive(bar:at(0))
          mgpu.barrier_wait(bar:at(1))
          mgpu.async_store_tmem(t, x:load())         -- the reader has not waited for its load
        end)
        mgpu.when(mgpu.eq(wg, 1), function()
          mgpu.barrier_wait(bar:at(0))
          o:store(mgpu.async_load_tmem(t))
          mgpu.barrier_arrive(bar:at(1))             -- no wait_load_tmem before
        end)
      end }
    local e = err_of(function() k(mgpu.random.normal({ 128, 32 }, "f32")) end)
    assert.matches("tmem_spec.lua:%d+: async_store_tmem overwrites TMEM that the async_load_tmem at [^ ]*tmem_spec.lua:%d+ %(warpgroup 1 " ..
                   "of block 0%) may still be reading", e)
  end)

  it("faults on a store that no barrier orders after another warpgroup's wait_load_tmem, and on reading garbage", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 128, 32 }, "f32"), num_threads = 2, thread_name = "wg",
      scratch_shapes = { mgpu.TMEM({ 128, 32 }, "f32"), mgpu.Barrier{ num_barriers = 2 } },
      body = function(x, o, t, bar)
        local wg = mgpu.axis_index("wg")
        mgpu.when(mgpu.eq(wg, 0), function()
          mgpu.async_store_tmem(t, x:load())
          mgpu.commit_tmem()
          mgpu.barrier_arrive(bar:at(0))
          mgpu.barrier_wait(bar:at(1))
          mgpu.async_store_tmem(t, x:load())
        end)
        mgpu.when(mgpu.eq(wg, 1), function()
          mgpu.barrier_wait(bar:at(0))
          o:store(mgpu.async_load_tmem(t))
          mgpu.barrier_arrive(bar:at(1))             -- before its wait_load_tmem: the wait is ordered before nothing
          mgpu.wait_load_tmem()
        end)
      end }
    assert.matches("async_store_tmem overwrites TMEM that the async_load_tmem at [^ ]*tmem_spec.lua:%d+ %(warpgroup 1 of block 0%) " ..
                   "reads, but no barrier orders that warpgroup's wait_load_tmem before this write",
                   err_of(function() k(mgpu.random.normal({ 128, 32 }, "f32")) end))
    local garbage = mgpu.kernel{ out_shape = mgpu.shape({ 128, 32 }, "f32"), scratch_shapes = { mgpu.TMEM({ 128, 32 }, "f32") },
      body = function(o, t) o:store(mgpu.async_load_tmem(t)) end }
    assert.matches("tmem_spec.lua:%d+: async_load_tmem reads TMEM that no tcgen05_mma or async_store_tmem has written", err_of(garbage))
  end)

  it("lowers to one allocation, tcgen05.ld / tcgen05.st in the layout's shape, the waits, and the free", function()
    local ptx = round_trip("f32", 64, mgpu.Layout.TCGEN05, 32):lower(mgpu.shape({ 128, 64 }, "f32"), 0).ptx
    assert.matches("%.version 8%.6\n%.target sm_100a", ptx)
    assert.matches("tcgen05%.alloc%.cta_group::1%.sync%.aligned%.shared::cta%.b32 %[%%r%d+%], 128;\n" ..
                   "\ttcgen05%.relinquish_alloc_permit%.cta_group::1%.sync%.aligned;", ptx)
    -- TCGEN05: 16x256b, registers (r0, r1) row l/4 and (r2, r3) row l/4 + 8 of each 8 columns; lanes 16.. in a second one
    assert.matches("tcgen05%.st%.sync%.aligned%.16x256b%.x8%.b32 %[%%r%d+%], {%%f1, %%f2, %%f3, %%f4, %%f9, %%f10, %%f11, %%f12,", ptx)
    assert.matches("tcgen05%.st%.sync%.aligned%.16x256b%.x8%.b32 %[%%r%d+%+1048576%], {%%f5, %%f6, %%f7, %%f8, %%f13,", ptx)
    assert.matches("tcgen05%.wait::st%.sync%.aligned;\n\tbar%.sync 1, 128;", ptx)
    assert.matches("tcgen05%.ld%.sync%.aligned%.16x256b%.x8%.b32 {[^}]*}, %[%%r%d+%];", ptx)
    assert.matches("tcgen05%.wait::ld%.sync%.aligned;", ptx)
    assert.matches("tcgen05%.dealloc%.cta_group::1%.sync%.aligned%.b32 %%r%d+, 128;", ptx)
    ptx = round_trip("bf16", 64, mgpu.Layout.TCGEN05_TMEM_NATIVE(2), 32):lower(mgpu.shape({ 128, 64 }, "bf16"), 0).ptx
    assert.matches("tcgen05%.st%.sync%.aligned%.32x32b%.x32%.b32 %[%%r%d+%], {%%r%d+,", ptx)   -- 32 columns of bf16 pairs
    assert.matches("add%.u32 %%r%d+, %%r%d+, 16;", ptx)                                         -- column 32 of bf16: 16
    local e = err_of(function() round_trip("i8", 64, mgpu.Layout.TCGEN05, 32):lower(mgpu.shape({ 128, 64 }, "i8"), 0) end)
    assert.matches("async_store_tmem: the array's layout matches no tcgen05 access shape", e)
  end)
end)
