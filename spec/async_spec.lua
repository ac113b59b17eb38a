-- Barriers, TMA copies, wgmma and clusters: the rules checked while tracing
-- and compiling, the interpreter's diagnostics (deadlocks, a barrier
-- completing twice, copies never awaited), and the PTX the lowering emits.
-- (Numerical checks of every copy and wgmma variant are cases in
-- spec/support/cases.lua.)
local mgpu = require "mgpu"
local T = mgpu.transforms

local err_of = dofile("spec/support/util.lua").err_of

local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }

-- A kernel whose body gets (x, o, scratch...) with the given scratch.
local function kern(scratch, body, opts)
  local spec = { out_shape = mgpu.shape({ 64, 64 }, "bf16"), scratch_shapes = scratch, body = body }
  for k, v in pairs(opts or {}) do spec[k] = v end
  return mgpu.kernel(spec)
end

local x = mgpu.zeros({ 64, 64 }, "bf16")

describe("barriers in the interpreter", function()
  it("reports a deadlock with the waiting lines", function()
    local k = kern({ mgpu.Barrier{} }, function(_, _, bar) mgpu.barrier_wait(bar) end)
    local err = err_of(k, x)
    assert.matches("async_spec.lua:%d+: deadlock: every warpgroup still running waits on a barrier", err)
    assert.matches("block 0 of the cluster, warpgroup 0 waits for completion 1 %(1 of 1 arrivals missing", err)
  end)

  it("reports a barrier that completes twice without a wait", function()
    local k = kern({ mgpu.Barrier{} }, function(_, _, bar)
      mgpu.barrier_arrive(bar); mgpu.barrier_arrive(bar)
      mgpu.barrier_wait(bar)
    end)
    assert.matches("async_spec.lua:%d+: barrier_wait: this barrier completed twice %(phases %d+ and %d+%) without a wait by warpgroup 0", err_of(k, x))
  end)

  it("reports an SMEM->GMEM copy nobody awaited", function()
    local k = kern({ mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }) }, function(_, o, s)
      s:store(mgpu.broadcast(1.0, { 64, 64 }, "bf16"))
      mgpu.commit_smem()
      mgpu.copy_smem_to_gmem(s, o)
    end)
    assert.matches("async_spec.lua:%d+: copy_smem_to_gmem was never awaited", err_of(k, x))
  end)

  it("lands TMA data only when the barrier is awaited", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 64, 64 }, "bf16"),
      scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }), mgpu.Barrier{} },
      body = function(xx, late, s, bar)
        mgpu.copy_gmem_to_smem(xx, s, bar)
        mgpu.barrier_wait(bar)
        late:store(s:load())
      end,
    }
    assert.are.equal(2, k(mgpu.full({ 64, 64 }, 2.0, "bf16")):get(64, 64))
  end)
end)

-- Kernels that pass on the CPU by luck but race on the GPU: each is an error
-- naming the lines of both operations.
describe("races the interpreter refuses", function()
  local function lines(err)
    local t = {}   -- the lines in the message (before the call's, which ends it)
    for l in err:gmatch("async_spec%.lua:(%d+)") do t[#t + 1] = tonumber(l) end
    table.remove(t)
    return t
  end
  local ab = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }), mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }) }

  it("a register store read by a TMA store with no commit_smem between", function()
    local function k(commit)
      return kern({ mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }) }, function(_, o, s)
        s:store(mgpu.broadcast(3.0, { 64, 64 }, "bf16"))
        if commit then mgpu.commit_smem() end
        mgpu.copy_smem_to_gmem(s, o)
        mgpu.wait_smem_to_gmem(0)
      end)
    end
    local err = err_of(k(false), x)
    assert.matches("async_spec.lua:%d+: copy_smem_to_gmem reads SMEM through the async proxy that warpgroup 0 of block 0 "
                   .. "wrote from registers at [^ ]*async_spec.lua:%d+ with no commit_smem since", err)
    local l = lines(err)
    assert.are.equal(l[1], l[2] + 2)   -- the copy, then the store
    assert.are.equal(3, k(true)(x):get(64, 64))
  end)

  it("a register store read by wgmma with no commit_smem between", function()
    local function k(commit)
      return mgpu.kernel{
        out_shape = mgpu.shape({ 64, 64 }, "f32"), scratch_shapes = ab,
        body = function(o, a, b)
          a:store(mgpu.broadcast(1.0, { 64, 64 }, "bf16"))
          b:store(mgpu.broadcast(1.0, { 64, 64 }, "bf16"))
          if commit then mgpu.commit_smem() end
          mgpu.run_scoped(function(acc) mgpu.wgmma(acc, a, b); o:store(acc:load()) end, mgpu.ACC({ 64, 64 }))
        end,
      }
    end
    local err = err_of(k(false))
    assert.matches("async_spec.lua:%d+: wgmma reads SMEM through the async proxy that warpgroup 0 of block 0 wrote from "
                   .. "registers at [^ ]*async_spec.lua:%d+ with no commit_smem since", err)
    assert.are.equal(2, #lines(err))
    assert.are.equal(64, k(true)():get(1, 1))
  end)

  it("another warpgroup's register store needs that warpgroup's commit_smem", function()
    local function k(commit)
      return mgpu.kernel{
        out_shape = mgpu.shape({ 64, 64 }, "bf16"), num_threads = 2, thread_name = "wg",
        scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }), mgpu.Barrier{} },
        body = function(o, s, bar)
          local wg = mgpu.axis_index("wg")
          mgpu.when(mgpu.eq(wg, 0), function()
            s:store(mgpu.broadcast(5.0, { 64, 64 }, "bf16"))
            if commit then mgpu.commit_smem() end
            mgpu.barrier_arrive(bar)
          end)
          mgpu.when(mgpu.eq(wg, 1), function()
            mgpu.barrier_wait(bar)
            mgpu.commit_smem()   -- the reader's commit does not cover the writer's stores
            mgpu.copy_smem_to_gmem(s, o)
            mgpu.wait_smem_to_gmem(0)
          end)
        end,
      }
    end
    assert.matches("copy_smem_to_gmem reads SMEM through the async proxy that warpgroup 0 of block 0 wrote",
                   err_of(k(false)))
    assert.are.equal(5, k(true)():get(1, 1))
  end)

  it("more arrivals than the barrier expects in one phase", function()
    local function k(n)
      return mgpu.kernel{
        out_shape = mgpu.shape({ 64, 64 }, "f32"),
        scratch_shapes = { ab[1], ab[2], mgpu.Barrier{ num_arrivals = n } },
        body = function(a, b, c, as, bs, bar)
          mgpu.copy_gmem_to_smem(a, as, bar)
          mgpu.copy_gmem_to_smem(b, bs, bar)
          mgpu.barrier_wait(bar)
          mgpu.run_scoped(function(acc) mgpu.wgmma(acc, as, bs); c:store(acc:load()) end, mgpu.ACC({ 64, 64 }))
        end,
      }
    end
    local one = mgpu.full({ 64, 64 }, 1.0, "bf16")
    local err = err_of(k(1), one, one)
    assert.matches("async_spec.lua:%d+: copy_gmem_to_smem: a barrier of block 0 that expects 1 arrival per phase already "
                   .. "has it %(the last from [^ ]*async_spec.lua:%d+%) while its phase still waits for 8192 bytes", err)
    local l = lines(err)
    assert.are.equal(l[1], l[2] + 1)
    assert.are.equal(64, k(2)(one, one):get(64, 64))
  end)

  it("a plain arrival on a phase waiting for bytes", function()
    local k = kern({ ab[1], mgpu.Barrier{} }, function(xx, _, s, bar)
      mgpu.copy_gmem_to_smem(xx, s, bar)
      mgpu.barrier_arrive(bar)
      mgpu.barrier_wait(bar)
    end)
    assert.matches("async_spec.lua:%d+: barrier_arrive: a barrier of block 0 that expects 1 arrival per phase already has it",
                   err_of(k, x))
  end)

  it("wgmma or a load reading SMEM whose TMA copy was not awaited", function()
    local function mm(wait)
      return mgpu.kernel{
        out_shape = mgpu.shape({ 64, 64 }, "f32"),
        scratch_shapes = { ab[1], ab[2], mgpu.Barrier{ num_arrivals = 2 } },
        body = function(a, b, c, as, bs, bar)
          mgpu.copy_gmem_to_smem(a, as, bar)
          mgpu.copy_gmem_to_smem(b, bs, bar)
          if wait then mgpu.barrier_wait(bar) end
          mgpu.run_scoped(function(acc) mgpu.wgmma(acc, as, bs); c:store(acc:load()) end, mgpu.ACC({ 64, 64 }))
          if not wait then mgpu.barrier_wait(bar) end
        end,
      }
    end
    local one = mgpu.full({ 64, 64 }, 1.0, "bf16")
    local err = err_of(mm(false), one, one)
    assert.matches("async_spec.lua:%d+: wgmma reads SMEM that the copy_gmem_to_smem at [^ ]*async_spec.lua:%d+ is still "
                   .. "writing: warpgroup 0 of block 0 has not waited for the barrier completion", err)
    assert.are.equal(2, #lines(err))
    assert.are.equal(64, mm(true)(one, one):get(1, 1))
    local early = mgpu.kernel{
      out_shape = mgpu.shape({ 64, 64 }, "bf16"), scratch_shapes = { ab[1], mgpu.Barrier{} },
      body = function(xx, o, s, bar)
        mgpu.copy_gmem_to_smem(xx, s, bar)
        o:store(s:load())
        mgpu.barrier_wait(bar)
      end,
    }
    assert.matches("async_spec.lua:%d+: the SMEM load reads SMEM that the copy_gmem_to_smem at [^ ]*async_spec.lua:%d+ is still writing",
                   err_of(early, x))
  end)

  it("a GMEM read of what a TMA store may still be writing", function()
    local function k(wait, rows)
      return mgpu.kernel{
        out_shape = { mgpu.shape({ 128, 64 }, "bf16"), mgpu.shape({ 64, 64 }, "bf16") },
        scratch_shapes = { ab[1], mgpu.Barrier{} },
        body = function(_, o, o2, s, bar)
          s:store(mgpu.broadcast(4.0, { 64, 64 }, "bf16"))
          mgpu.commit_smem()
          mgpu.copy_smem_to_gmem(s, o:at(mgpu.ds(0, 64), mgpu.all))
          if wait then mgpu.wait_smem_to_gmem(0) end
          if rows == "tma" then
            mgpu.copy_gmem_to_smem(o:at(mgpu.ds(32, 64), mgpu.all), s, bar)
            mgpu.barrier_wait(bar)
          else
            o2:store(o:at(mgpu.ds(rows, 64), mgpu.all):load())
          end
          mgpu.wait_smem_to_gmem(0)
        end,
      }
    end
    local err = err_of(k(false, 0), x)
    assert.matches("async_spec.lua:%d+: the GMEM load reads GMEM that the copy_smem_to_gmem at [^ ]*async_spec.lua:%d+ "
                   .. "%(warpgroup 0 of block 0%) may still be writing", err)
    assert.are.equal(2, #lines(err))
    assert.matches("copy_gmem_to_smem reads GMEM that the copy_smem_to_gmem at", err_of(k(false, "tma"), x))
    local _, o2 = k(true, 0)(x)
    assert.are.equal(4, o2:get(64, 64))
    assert.has_no.errors(function() k(false, 64)(x) end)   -- rows the copy does not write
  end)

  it("a second warpgroup must wait for the copy itself", function()
    local function k(wait)
      return mgpu.kernel{
        out_shape = mgpu.shape({ 64, 64 }, "bf16"), num_threads = 2, thread_name = "wg",
        scratch_shapes = { ab[1], mgpu.Barrier{} },
        body = function(xx, o, s, bar)
          local wg = mgpu.axis_index("wg")
          mgpu.when(mgpu.eq(wg, 0), function()
            mgpu.copy_gmem_to_smem(xx, s, bar)
            mgpu.barrier_wait(bar)
          end)
          mgpu.when(mgpu.eq(wg, 1), function()
            if wait then mgpu.barrier_wait(bar) end
            o:store(s:load())
          end)
        end,
      }
    end
    assert.matches("warpgroup 1 of block 0 has not waited", err_of(k(false), mgpu.full({ 64, 64 }, 2.0, "bf16")))
    assert.are.equal(2, k(true)(mgpu.full({ 64, 64 }, 2.0, "bf16")):get(3, 3))
  end)
end)

describe("tracing rules", function()
  it("checks wgmma shapes and dtypes", function()
    local function mm(adt, acc, ashape, bshape)
      return mgpu.kernel{
        out_shape = mgpu.shape({ 1 }, "f32"),
        scratch_shapes = { mgpu.SMEM(ashape, adt, { transforms = xf }), mgpu.SMEM(bshape, adt, { transforms = xf }) },
        body = function(_, _, a, b)
          mgpu.run_scoped(function(c) mgpu.wgmma(c, a, b) end, mgpu.ACC({ 64, 64 }, acc))
        end,
      }
    end
    local z = mgpu.zeros(1)
    assert.matches("async_spec.lua:%d+: wgmma: shapes do not chain: acc &regs f32%[64,64%] %+= a &smem bf16%[64,64%] @ b &smem bf16%[128,64%]",
                   err_of(mm("bf16", "f32", { 64, 64 }, { 128, 64 }), z))
    assert.matches("wgmma: an f16 accumulator needs f16 or f8 operands, not bf16",
                   err_of(mm("bf16", "f16", { 64, 64 }, { 64, 64 }), z))
    assert.matches("ACC: M must be a multiple of 64", err_of(function()
      mgpu.kernel{ out_shape = mgpu.shape({ 1 }), body = function()
        mgpu.run_scoped(function() end, mgpu.ACC({ 32, 64 }))
      end }(z)
    end))
  end)

  it("refuses SMEM operands wgmma cannot read", function()
    local function mm(bxf, bshape, bt, dt, axf)
      return mgpu.kernel{
        out_shape = mgpu.shape({ 1 }, "f32"),
        scratch_shapes = { mgpu.SMEM({ 64, axf and 128 or 64 }, dt or "bf16", { transforms = axf or xf }),
                           mgpu.SMEM(bshape, dt or "bf16", { transforms = bxf }) },
        body = function(_, _, a, b)
          if bt then b = mgpu.transpose_ref(b, { 1, 0 }) end
          mgpu.run_scoped(function(c) mgpu.wgmma(c, a, b) end, mgpu.ACC({ 64, 64 }))
        end,
      }
    end
    local z = mgpu.zeros(1)
    assert.matches("wgmma: operand B needs swizzled SMEM", err_of(mm({}, { 64, 64 }), z))
    assert.matches("wgmma: A and B must use the same swizzle",
                   err_of(mm({ T.tiling{ 8, 32 }, T.swizzle(64) }, { 64, 64 }), z))
    assert.matches("wgmma: 8%-bit operands must be K%-major %(B transposed.*only 16%-bit operands may be",
                   err_of(mm({ T.tiling{ 8, 64 }, T.swizzle(64) }, { 128, 64 }, false, "f8e4m3",
                             { T.tiling{ 8, 128 }, T.swizzle(128) }), z))
  end)

  it("clips TMA copies at any edge where the tiles along a dim form one TMA dim", function()
    -- rows: 8-row tiles next to each other (one column tile); columns: one tile per copy
    local M, K = 100, 72
    local tile = mgpu.kernel{
      out_shape = mgpu.shape({ M, K }, "bf16"),
      scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }), mgpu.Barrier{} },
      body = function(a, o, s, bar)
        for i = 0, 1 do
          for j = 0, 1 do
            mgpu.copy_gmem_to_smem(a:at(mgpu.ds(i * 64, 64), mgpu.ds(j * 64, 64)), s, bar)
            mgpu.barrier_wait(bar)
            s:store(s:load() + 1)   -- zero-filled elements become 1 and must not reach the output
            mgpu.commit_smem()
            mgpu.copy_smem_to_gmem(s, o:at(mgpu.ds(i * 64, 64), mgpu.ds(j * 64, 64)))
            mgpu.wait_smem_to_gmem(0)
          end
        end
      end,
    }
    local a = mgpu.random.normal({ M, K }, "bf16")
    local got = tile(a)
    local want = mgpu.host.from(a) + 1
    assert.is_true(mgpu.host.relerr(got, want:round("bf16")) < 1e-2)
    local ptx = tile:lower(a).ptx
    assert.matches("cp%.async%.bulk%.tensor%.2d%.shared::cluster", ptx)
    assert.matches("cp%.async%.bulk%.tensor%.2d%.global%.shared::cta", ptx)
    -- the output's 8-row tiles are adjacent when its column tiles are ordered outermost
    local wide = mgpu.kernel{
      out_shape = mgpu.shape({ M, 128 }, "bf16"),
      scratch_shapes = { mgpu.SMEM({ 64, 128 }, "bf16", { transforms = { T.tiling{ 8, 64 }, T.transpose{ 1, 0, 2, 3 }, T.swizzle(128) } }),
                         mgpu.Barrier{} },
      body = function(b, o, s, bar)
        for i = 0, 1 do
          mgpu.copy_gmem_to_smem(b:at(mgpu.ds(i * 64, 64), mgpu.all), s, bar)
          mgpu.barrier_wait(bar)
          mgpu.copy_smem_to_gmem(s, o:at(mgpu.ds(i * 64, 64), mgpu.all))
          mgpu.wait_smem_to_gmem(0)
        end
      end,
    }
    local b = mgpu.random.normal({ M, 128 }, "bf16")
    assert.equal(0, mgpu.host.relerr(wide(b), mgpu.host.from(b)))
    assert.matches("cp%.async%.bulk%.tensor%.3d", wide:lower(b).ptx)
  end)

  it("refuses multicast parts the copy engine cannot write", function()
    local function mc(tile, dt)
      return mgpu.kernel{
        grid = { 2 }, cluster = { 2 }, cluster_names = { "c" }, out_shape = mgpu.shape(tile, dt),
        scratch_shapes = { mgpu.SMEM(tile, dt), mgpu.Barrier{} },
        body = function(x, o, s, bar)
          mgpu.copy_gmem_to_smem(x:at(mgpu.ds(0, tile[1]), mgpu.ds(0, tile[2])), s, bar, { collective_axes = "c" })
          mgpu.barrier_wait(bar)
          mgpu.when(mgpu.eq(mgpu.axis_index("c"), 0), function() o:store(s:load()) end)
        end }
    end
    assert.matches("async_spec.lua:%d+: copy_gmem_to_smem: each multicast part %(64 bytes%) must be a multiple of 128 bytes",
                   err_of(mc({ 2, 16 }, "f32"), mgpu.random.normal({ 8, 64 }, "f32")))
    assert.matches("each multicast part %(8 bytes%) must be a multiple of 128 bytes",
                   err_of(mc({ 1, 8 }, "bf16"), mgpu.random.normal({ 8, 64 }, "bf16")))
    assert.matches("the tile's outermost dimension %(box 3%) does not divide among the 2 blocks",
                   err_of(mc({ 3, 32 }, "f32"), mgpu.random.normal({ 8, 64 }, "f32")))
  end)

  it("multicasts a 1-D array, each block of the cluster loading half", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 2, 128 }, "f32"), grid = { 1 }, cluster = { 2 }, cluster_names = { "c" },
      scratch_shapes = { mgpu.SMEM({ 128 }, "f32"), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        mgpu.copy_gmem_to_smem(x, s, bar, { collective_axes = "c" })
        mgpu.barrier_wait(bar)
        o:at(mgpu.axis_index("c")):store(s:load())
      end }
    local x = mgpu.random.normal({ 128 }, "f32")
    local y, xt = k(x):to_table(), x:to_table()
    for i = 1, 256 do assert.are.equal(xt[(i - 1) % 128 + 1], y[i]) end
    assert.matches("%.1d%.shared::cluster%.global%.mbarrier::complete_tx::bytes%.multicast::cluster", k:lower(x).ptx)
  end)

  it("checks TMA tiles against the GMEM array", function()
    local function copy(shape, tile)
      return mgpu.kernel{
        out_shape = mgpu.shape({ 1 }, "f32"),
        scratch_shapes = { mgpu.SMEM(tile, "bf16", { transforms = xf }), mgpu.Barrier{} },
        body = function(a, _, s, bar)
          mgpu.copy_gmem_to_smem(a:at(mgpu.ds(0, tile[1]), mgpu.ds(0, tile[2])), s, bar)
          mgpu.barrier_wait(bar)
        end,
      }
    end
    assert.matches("async_spec.lua:%d+: copy_gmem_to_smem: dimension 0 of the GMEM array has size 100, not a multiple of the SMEM tiling %(8%), and the copy's tiles along it are not adjacent",
                   err_of(copy({ 100, 128 }, { 64, 128 }), mgpu.zeros({ 100, 128 }, "bf16"), nil))
    local odd = mgpu.kernel{
      out_shape = mgpu.shape({ 1 }, "f32"), scratch_shapes = { mgpu.SMEM({ 64, 4 }, "f32"), mgpu.Barrier{} },
      body = function(a, _, s, bar) mgpu.copy_gmem_to_smem(a:at(mgpu.all, mgpu.ds(0, 4)), s, bar); mgpu.barrier_wait(bar) end,
    }
    assert.matches("GMEM strides must be multiples of 16 bytes for the copy engine; one is 24 bytes",
                   err_of(odd, mgpu.zeros({ 64, 6 }, "f32")))
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 1 }), body = function(a) mgpu.copy_gmem_to_smem(a, a, nil) end }
    assert.matches("async_spec.lua:%d+: copy_gmem_to_smem: a barrier is required", err_of(k, mgpu.zeros(4)))
    local k2 = kern({ mgpu.SMEM({ 64, 32 }, "bf16"), mgpu.Barrier{} }, function(xx, _, s, bar)
      mgpu.copy_gmem_to_smem(xx, s, bar)
    end)
    assert.matches("copy_gmem_to_smem: shapes &gmem bf16%[64,64%] and &smem bf16%[64,32%] do not match", err_of(k2, x))
  end)

  it("checks barriers, collective axes and set_max_registers", function()
    assert.matches("Barrier: num_barriers must be between 1 and 32", err_of(mgpu.Barrier, { num_barriers = 33 }))
    local k = kern({ mgpu.Barrier{ num_barriers = 2 } }, function(_, _, bar) mgpu.barrier_wait(bar) end)
    assert.matches("async_spec.lua:%d+: barrier_wait: operand 1 holds 2 barriers; pick one with :at%(i%)", err_of(k, x))
    local k2 = kern({}, function() mgpu.ClusterBarrier{ collective_axes = "q" } end)
    local k3 = kern({ mgpu.ClusterBarrier{ collective_axes = "q" } }, function() end)
    assert.matches("ClusterBarrier: 'q' is not a cluster axis %(cluster_names: none%)", err_of(k3, x))
    assert.has_no.errors(function() k2(x) end)
    assert.matches("set_max_registers: n must be a multiple of 8 between 24 and 256, got 30",
                   err_of(kern({}, function() mgpu.set_max_registers(30, { action = "increase" }) end), x))
    assert.matches("a cluster may hold at most 8 blocks", err_of(mgpu.kernel, { out_shape = mgpu.shape({ 1 }),
                   cluster = { 4, 4 }, body = function() end }))
  end)
end)

describe("PTX for the async machinery", function()
  it("passes tensor maps by value and encodes wgmma descriptors", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 64, 128 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }), mgpu.SMEM({ 64, 128 }, "bf16", { transforms = xf }),
                         mgpu.Barrier{ num_arrivals = 2 } },
      body = function(a, b, c, as, bs, bar)
        mgpu.copy_gmem_to_smem(a, as, bar)
        mgpu.copy_gmem_to_smem(b, bs, bar)
        mgpu.barrier_wait(bar)
        mgpu.run_scoped(function(acc) mgpu.wgmma(acc, as, bs); c:store(acc:load()) end, mgpu.ACC({ 64, 128 }))
      end,
    }
    local ptx = k:lower(mgpu.zeros({ 64, 64 }, "bf16"), mgpu.zeros({ 64, 128 }, "bf16")).ptx
    assert.matches("%.param %.align 64 %.b8 kernel_param_3%[128%]", ptx)
    assert.matches("%.param %.align 64 %.b8 kernel_param_4%[128%]", ptx)
    assert.matches("mbarrier%.init%.shared::cta%.b64 %[%%r%d+%+%d+%], 2;", ptx)
    -- B (64, 128) through tiling (8, 64): two tiles along N -> a 4-d box; A (64, 64), one column tile -> 2-d
    assert.matches("cp%.async%.bulk%.tensor%.2d%.shared::cluster%.global%.mbarrier::complete_tx::bytes", ptx)
    assert.matches("cp%.async%.bulk%.tensor%.4d%.shared::cluster%.global%.mbarrier::complete_tx::bytes", ptx)
    -- descriptors, as a low word (address >> 4, LBO >> 4 << 16) and a constant high word (SBO >> 4,
    -- swizzle mode << 30): 128-byte swizzle (mode 1); A K-major: SBO 1024 (64), no LBO;
    -- B N-major: LBO 1024 (next 64 columns, 64 << 16), SBO 2048 (next 8 rows, 128)
    -- (4194304 = 64 << 16, 1073741888 = 1 << 30 | 64, 1073741952 = 1 << 30 | 128)
    assert.matches("bfe%.u32 %%r%d+, %%r%d+, 4, 14;", ptx)
    assert.matches("or%.b32 %%r%d+, %%r%d+, 4194304;", ptx)
    assert.matches("mov%.b32 %%r%d+, 1073741888;", ptx)
    assert.matches("mov%.b32 %%r%d+, 1073741952;", ptx)
    assert.matches("mov%.b64 %%rd%d+, {%%r%d+, %%r%d+};", ptx)
    assert.matches("wgmma%.mma_async%.sync%.aligned%.m64n128k16%.f32%.bf16%.bf16 {", ptx)
    assert.matches("p%d+, 1, 1, 0, 1;", ptx)   -- trans-a 0 (K-major), trans-b 1 (N-major)
  end)

  it("launches clusters and takes setmaxnreg into account", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 4 }, "i32"), grid = { 2 }, cluster = { 2 }, cluster_names = { "c" },
      num_threads = 2, thread_name = "wg",
      body = function(o)
        local wg = mgpu.axis_index("wg")
        mgpu.cond(mgpu.eq(wg, 0), function() mgpu.set_max_registers(40, { action = "decrease" }) end,
                  function() mgpu.set_max_registers(232, { action = "increase" }) end)
        mgpu.when(mgpu.eq(wg, 0), function()
          o:at(mgpu.program_id(0) * 2 + mgpu.axis_index("c")):store(mgpu.program_id(0) * 10 + mgpu.axis_index("c"))
        end)
      end,
    }
    local low = k:lower()
    assert.matches("%.reqnctapercluster 2, 1, 1", low.ptx)
    assert.matches("%.minnctapersm 1", low.ptx)
    assert.matches("setmaxnreg%.dec%.sync%.aligned%.u32 40;", low.ptx)
    assert.matches("mov%.u32 %%r%d+, %%clusterid%.x;", low.ptx)
    local o = k()
    assert.are.same({ 0, 1, 10, 11 }, o:to_table())
  end)

  it("broadcasts the SMEM base after setmaxnreg, so ptxas keeps it warp-uniform", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 128 }, "f32"), num_threads = 2, thread_name = "wg",
      scratch_shapes = { mgpu.SMEM({ 128 }, "f32") },
      body = function(x, o, s)
        mgpu.cond(mgpu.eq(mgpu.axis_index("wg"), 0), function() mgpu.set_max_registers(40, { action = "decrease" }) end,
                  function()
                    mgpu.set_max_registers(232, { action = "increase" })
                    s:store(x:load()); mgpu.commit_smem(); o:store(s:load() + 1.0)
                  end)
      end,
    }
    local ptx = k:lower(mgpu.zeros({ 128 }, "f32")).ptx
    local base = assert(ptx:match("mov%.u32 %%(r%d+), mgpu_smem;"))
    base = "%%" .. base   -- the register, as a pattern
    for _, how in ipairs({ "dec", "inc" }) do
      assert.matches("setmaxnreg%." .. how .. "%.sync%.aligned%.u32 %d+;\n\tshfl%.sync%.idx%.b32 " .. base .. ", " .. base
                     .. ", 0, 31, %-1;", ptx)
    end
  end)
end)

describe("another block's SMEM (cluster_ref)", function()
  -- a cluster of 4 blocks, each reading block `peer(c)`'s SMEM; sync = false leaves out the barrier
  local function ring(peer, sync, scratch_extra)
    local scratch = { mgpu.SMEM({ 256 }, "f32"), mgpu.ClusterBarrier{ collective_axes = "c" } }
    for _, x in ipairs(scratch_extra or {}) do scratch[#scratch + 1] = x end
    return mgpu.kernel{
      grid = { 1 }, cluster = { 4 }, cluster_names = { "c" }, out_shape = mgpu.shape({ 4, 256 }, "f32"),
      scratch_shapes = scratch,
      body = function(x, o, buf, cbar)
        local c = mgpu.axis_index("c")
        buf:store(x:at(c):load())
        if sync then mgpu.barrier_arrive(cbar); mgpu.barrier_wait(cbar) end
        o:at(c):store(mgpu.cluster_ref(buf, { c = peer(c) }):load())
      end,
    }
  end
  local x = mgpu.random.normal({ 4, 256 }, "f32")

  it("reads the named block's SMEM after a cluster barrier", function()
    local xt, out = x:to_table(), ring(function(c) return 3 - c end, true)(x):to_table()
    for c = 0, 3 do
      for i = 1, 256, 51 do assert.are.equal(xt[(3 - c) * 256 + i], out[c * 256 + i]) end
    end
  end)

  it("reports a read of another block's write with no cluster barrier between", function()
    assert.matches("async_spec%.lua:%d+: the SMEM load in block 3 of the cluster reads SMEM of block 0 that block 0 "
                   .. "wrote at spec/async_spec%.lua:%d+, with no cluster barrier between",
                   err_of(ring(function(c) return (c + 1) % 4 end, false), x))
  end)

  it("faults on a traced block index outside the cluster", function()
    assert.matches("async_spec%.lua:%d+: cluster_ref: block 4 is outside the cluster of 4 blocks %(ranks 0%.%.3%)",
                   err_of(ring(function(c) return c + 1 end, true), x))
  end)

  it("refuses refs that are not SMEM, unknown axes, indices outside the cluster and kernels without one", function()
    local function body_err(f, cluster)
      local k = mgpu.kernel{ grid = { 1 }, cluster = cluster or { 2 }, cluster_names = cluster and {} or { "c" },
                             out_shape = mgpu.shape({ 256 }, "f32"), scratch_shapes = { mgpu.SMEM({ 256 }, "f32") },
                             body = f }
      return err_of(k, mgpu.zeros({ 256 }, "f32"))
    end
    assert.matches("async_spec%.lua:%d+: cluster_ref: the ref must be in SMEM %(another block's shared memory%), not gmem",
                   body_err(function(xx) mgpu.cluster_ref(xx, { c = 1 }) end))
    assert.matches("cluster_ref: 'q' is not a cluster axis %(cluster axes: c%)",
                   body_err(function(_, _, s) mgpu.cluster_ref(s, { q = 1 }) end))
    assert.matches("cluster_ref: index 2 along cluster axis 'c' is outside 0%.%.1",
                   body_err(function(_, _, s) mgpu.cluster_ref(s, { c = 2 }) end))
    assert.matches("cluster_ref: the index along cluster axis 'c' must be a number or a traced integer scalar",
                   body_err(function(_, _, s) mgpu.cluster_ref(s, { c = "1" }) end))
    assert.matches("cluster_ref%(ref, block_id%): block_id maps cluster axis names to indices",
                   body_err(function(_, _, s) mgpu.cluster_ref(s, 1) end))
    assert.matches("cluster_ref: the kernel's cluster has one block",
                   body_err(function(_, _, s) mgpu.cluster_ref(s, {}) end, {}))
  end)

  it("refuses another block's SMEM in copies", function()
    local k = mgpu.kernel{
      grid = { 1 }, cluster = { 2 }, cluster_names = { "c" }, out_shape = mgpu.shape({ 256 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 256 }, "f32") },
      body = function(_, o, s) mgpu.copy_smem_to_gmem(mgpu.cluster_ref(s, { c = 1 }), o) end,
    }
    assert.matches("async_spec%.lua:%d+: tma_store: operand 1 views another block's SMEM %(cluster_ref%), which only "
                   .. "loads, stores and views take", err_of(k, mgpu.zeros({ 256 }, "f32")))
  end)

  it("lowers to mapa and shared::cluster accesses, with cluster-scope barriers in such kernels only", function()
    local ptx = ring(function(c) return (c + 1) % 4 end, true):lower(x).ptx
    assert.matches("mapa%.shared::cluster%.u32 %%r%d+, %%r%d+, %%r%d+;\n\tld%.shared::cluster%.v2%.f32", ptx)
    assert.matches("mbarrier%.arrive%.release%.cluster%.shared::cluster%.b64", ptx)
    assert.matches("mbarrier%.try_wait%.parity%.acquire%.cluster%.shared::cta%.b64", ptx)
    local plain = mgpu.kernel{
      grid = { 1 }, cluster = { 2 }, cluster_names = { "c" }, out_shape = mgpu.shape({ 1 }, "f32"),
      scratch_shapes = { mgpu.ClusterBarrier{ collective_axes = "c" } },
      body = function(_, _, cbar) mgpu.barrier_arrive(cbar); mgpu.barrier_wait(cbar) end,
    }
    local p2 = plain:lower(mgpu.zeros({ 1 }, "f32")).ptx
    assert.matches("mbarrier%.arrive%.shared::cluster%.b64", p2)
    assert.is_nil(p2:find("acquire.cluster", 1, true))
    local fenced = mgpu.kernel{
      grid = { 1 }, cluster = { 2 }, cluster_names = { "c" }, out_shape = mgpu.shape({ 1 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 256 }, "f32") },
      body = function(xx, _, s) mgpu.cluster_ref(s, { c = 1 }):store(xx:load()); mgpu.commit_smem() end,
    }
    assert.matches("fence%.proxy%.async%.shared::cluster;", fenced:lower(mgpu.zeros({ 256 }, "f32")).ptx)
  end)
end)

describe("stores into another block's SMEM (async_store_smem)", function()
  local L = mgpu.Layout
  -- a pair of blocks, each storing its tile into the other's SMEM; wait = false reads before the barrier
  local function pair(wait, opts, dtype, scratch)
    dtype = dtype or "f32"
    return mgpu.kernel{
      grid = { 1 }, cluster = { 2 }, cluster_names = { "c" }, out_shape = mgpu.shape({ 2, 64, 32 }, dtype),
      scratch_shapes = scratch or { mgpu.SMEM({ 64, 32 }, dtype), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        local me = mgpu.axis_index("c")
        local o2 = { cluster_idx = 1 - me, cluster_dim = "c" }
        for k, v in pairs(opts or {}) do o2[k] = v end
        if type(o2.cluster_idx) == "function" then o2.cluster_idx = o2.cluster_idx(me) end
        mgpu.async_store_smem(x:at(me):load{ layout = L.WGMMA }, s, bar, o2)
        if wait then mgpu.barrier_wait(bar) end
        o:at(me):store(s:load{ layout = L.WGMMA })
      end,
    }
  end
  local x = mgpu.random.normal({ 2, 64, 32 }, "f32")

  it("waits on the receiving barrier with acquire at cluster scope, after a release of the warpgroup's writes", function()
    local ptx = pair(true):lower(x).ptx
    assert.matches("bar%.sync [%d]+, 128;\n[^\n]*\n\t@%%p%d+ mbarrier%.arrive%.expect_tx%.release%.cluster%.shared::cluster%.b64", ptx)
    assert.matches("mbarrier%.try_wait%.parity%.acquire%.cluster%.shared::cta%.b64", ptx)
  end)

  it("lands the other block's tile once the barrier completes", function()
    local xt, out = x:to_table(), pair(true)(x):to_table()
    for i = 1, 2048, 97 do
      assert.are.equal(xt[2048 + i], out[i])
      assert.are.equal(xt[i], out[2048 + i])
    end
  end)

  it("reports a read before the barrier completes", function()
    assert.matches("async_spec%.lua:%d+: the SMEM load reads SMEM that the async_store_smem at spec/async_spec%.lua:%d+ is "
                   .. "still writing: warpgroup 0 of block %d has not waited for the barrier completion that store signals",
                   err_of(pair(false), x))
  end)

  it("faults on a block outside the cluster and refuses bad options, dtypes and shapes", function()
    assert.matches("async_store_smem: block 2 is outside the cluster of 2 blocks %(ranks 0%.%.1%)",
                   err_of(pair(true, { cluster_idx = function(me) return me + 1 end }), x))
    local function opts_err(o) return err_of(pair(true, o), x) end
    assert.matches("async_store_smem: 'q' is not a cluster axis %(cluster axes: c%)", opts_err({ cluster_dim = "q" }))
    assert.matches("async_store_smem: unknown atomic 'mul'", opts_err({ atomic = "mul" }))
    assert.matches("async_store_smem: atomic add of f32: the asynchronous reductions take 32%-bit integers only",
                   opts_err({ atomic = "add" }))
    assert.matches("async_store_smem: index 2 along cluster axis 'c' is outside 0%.%.1", opts_err({ cluster_idx = 2 }))
    assert.matches("async_store_smem: i16 elements: st%.async moves 32%- and 64%-bit words",
                   err_of(pair(true, nil, "i16"), mgpu.zeros({ 2, 64, 32 }, "i16")))
    assert.matches("async_store_smem: shapes &smem f32%[64,64%] and f32%[64,32%] do not match",
                   err_of(pair(true, nil, "f32", { mgpu.SMEM({ 64, 64 }, "f32"), mgpu.Barrier{} }), x))
    local k = mgpu.kernel{ grid = { 1 }, cluster = { 2 }, cluster_names = { "c" }, out_shape = mgpu.shape({ 1 }, "f32"),
                           scratch_shapes = { mgpu.SMEM({ 64, 32 }, "f32"), mgpu.Barrier{} },
                           body = function(_, _, s, bar) mgpu.async_store_smem(s:load(), s, bar, {}) end }
    assert.matches("async_store_smem%(value, ref, barrier, { cluster_idx = i, cluster_dim = name }%): cluster_idx and "
                   .. "cluster_dim are required", err_of(k, x))
  end)
end)
