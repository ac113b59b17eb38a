-- Blackwell tensor-core MMA (sm_100a): tcgen05_mma into TMEM for every kind
-- (bf16/f16, tf32, f8 in any mix, i8/u8 into i32) with A from SMEM or TMEM,
-- one block's or a cluster pair's (2-CTA); completion through
-- tcgen05_commit_arrive; the errors naming the rules; the races the
-- interpreter reports; and the PTX of each form.
local mgpu = require "mgpu"
local T = mgpu.transforms
local err_of = dofile("spec/support/util.lua").err_of

local function xf(dt)
  local bytes = ({ bf16 = 2, f16 = 2, f32 = 4 })[dt] or 1
  return { transforms = { T.tiling{ 8, math.floor(128 / bytes) }, T.swizzle(128) } }
end

-- ||c - a @ b|| / ||a @ b|| with c (M x N), a (M x K) and b (K x N, or N x K when bt) as flat tables.
local function relerr(c, a, b, M, N, K, bt)
  local num, den = 0, 0
  for i = 0, M - 1 do
    for j = 0, N - 1 do
      local s = 0
      for kk = 0, K - 1 do s = s + a[i * K + kk + 1] * (bt and b[j * K + kk + 1] or b[kk * N + j + 1]) end
      num, den = num + (c[i * N + j + 1] - s) ^ 2, den + s ^ 2
    end
  end
  return math.sqrt(num / den)
end

-- acc (128, N) = a (128, K) @ b: b stored (N, K) and seen transposed (K-major) unless o.bmn; A through
-- TMEM when o.atmem; accumulate as o.acc (default false); a commit to a barrier, waited on, then the load.
local function mm(dt, acc, N, K, o)
  o = o or {}
  local scratch = { mgpu.SMEM({ 128, K }, dt, xf(dt)), mgpu.SMEM(o.bmn and { K, N } or { N, K }, dt, xf(dt)),
                    mgpu.TMEM({ 128, N }, acc), mgpu.Barrier{ orders_tensor_core = o.otc ~= false } }
  if o.atmem then scratch[5] = mgpu.TMEM({ 128, K }, dt) end
  return mgpu.kernel{ name = "mm", out_shape = mgpu.shape({ 128, N }, acc), scratch_shapes = scratch,
    body = function(a, b, c, as, bs, t, bar, ...)
      local at = ...
      as:store(a:load())
      bs:store(b:load())
      mgpu.commit_smem()
      if not o.bmn then bs = mgpu.transpose_ref(bs, { 1, 0 }) end
      local A = as
      if o.atmem then
        mgpu.async_store_tmem(at, a:load{ layout = mgpu.Layout.TCGEN05_TMEM_NATIVE(2) })
        mgpu.commit_tmem()
        A = at
      end
      mgpu.tcgen05_mma(t, A, bs, bar, { accumulate = o.acc or false })
      if o.twice then mgpu.tcgen05_mma(t, A, bs, bar) end
      mgpu.barrier_wait(bar)
      if o.twice then mgpu.barrier_wait(bar) end
      c:store(mgpu.async_load_tmem(t))
    end }
end

describe("tcgen05_mma", function()
  local saved
  setup(function() saved = mgpu.device().target; mgpu.configure{ target = "sm_100a" } end)
  teardown(function() mgpu.configure{ target = saved } end)

  for _, c in ipairs({ { "bf16", "f32", 128, 64, {}, 1e-6 }, { "f16", "f32", 256, 128, { bmn = true }, 1e-6 },
                       { "f32", "f32", 64, 32, {}, 2e-3 }, { "f8e4m3", "f32", 128, 128, {}, 1e-6 },
                       { "i8", "i32", 64, 128, {}, 0 }, { "u8", "i32", 32, 128, {}, 0 },
                       { "bf16", "f32", 128, 64, { atmem = true }, 1e-6 }, { "bf16", "f32", 384, 64, {}, 1e-6 } }) do
    local dt, acc, N, K, o, tol = c[1], c[2], c[3], c[4], c[5], c[6]
    it(string.format("computes %s x %s into %s, N = %d, K = %d%s%s", dt, dt, acc, N, K, o.bmn and ", B N-major" or "",
                     o.atmem and ", A from TMEM" or ""), function()
      local lo = dt:match("^u") and 0 or -3
      local a = mgpu.random.uniform({ 128, K }, dt, 11, lo, 3)
      local b = mgpu.random.uniform(o.bmn and { K, N } or { N, K }, dt, 12, lo, 3)
      local out = mm(dt, acc, N, K, o)(a, b)
      assert.is_true(relerr(out:to_table(), a:to_table(), b:to_table(), 128, N, K, not o.bmn) <= tol)
    end)
  end

  it("mixes f8e4m3 and f8e5m2, and accumulates (true, or a traced pred) onto what TMEM holds", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 128, 64 }, "f32"), grid = { 1 },
      scratch_shapes = { mgpu.SMEM({ 128, 128 }, "f8e4m3", xf("f8")), mgpu.SMEM({ 64, 128 }, "f8e5m2", xf("f8")),
                         mgpu.TMEM({ 128, 64 }, "f32"), mgpu.Barrier{ orders_tensor_core = true } },
      body = function(a, b, c0, c, as, bs, t, bar)
        as:store(a:load()); bs:store(b:load())
        mgpu.commit_smem()
        mgpu.async_store_tmem(t, c0:load())
        mgpu.commit_tmem()
        mgpu.tcgen05_mma(t, as, mgpu.transpose_ref(bs, { 1, 0 }), { accumulate = mgpu.gt(mgpu.program_id(0), -1) })
        mgpu.tcgen05_mma(t, as, mgpu.transpose_ref(bs, { 1, 0 }), bar)
        mgpu.barrier_wait(bar)
        c:store(mgpu.async_load_tmem(t))
      end }
    local a, b = mgpu.random.uniform({ 128, 128 }, "f8e4m3", 1, -2, 2), mgpu.random.uniform({ 64, 128 }, "f8e5m2", 2, -2, 2)
    local c0 = mgpu.random.normal({ 128, 64 }, "f32", 3)
    local out, A, B, C0 = k(a, b, c0):to_table(), a:to_table(), b:to_table(), c0:to_table()
    for i, x in ipairs(out) do out[i] = (x - C0[i]) / 2 end   -- two MMAs on top of c0
    assert.is_true(relerr(out, A, B, 128, 64, 128, true) < 1e-6)
  end)

  it("runs a 2-CTA MMA over a cluster pair: each block 128 rows of A and acc, half of B", function()
    local N, K = 256, 64
    local k = assert(loadfile("tools/tcgen05_cases.lua"))("--lib").mma_pair(N, K)   -- (its PTX: ctest's ptxas check)
    local a, b = mgpu.random.uniform({ 256, K }, "bf16", 5, -2, 2), mgpu.random.uniform({ N, K }, "bf16", 6, -2, 2)
    assert.is_true(relerr(k(a, b):to_table(), a:to_table(), b:to_table(), 256, N, K, true) < 1e-6)
    local ptx = k:lower(a, b).ptx
    assert.matches("tcgen05%.alloc%.cta_group::2%.sync%.aligned%.shared::cta%.b32", ptx)
    assert.matches("@%%p%d+ tcgen05%.mma%.cta_group::2%.kind::f16 %[%%r%d+%], %%rd%d+, %%rd%d+, %%r%d+, %%p%d+;", ptx)
    assert.matches("mov%.b32 %%r%d+, 272630928;", ptx)   -- idesc: f32 += bf16 x bf16, K-major, N = 256, M = 256
    assert.matches("tcgen05%.commit%.cta_group::2%.mbarrier::arrive::one%.shared::cluster%.multicast::cluster%.b64 %[%%r%d+%], %%h%d+;", ptx)
  end)

  it("feeds a 2-CTA MMA with TMA copies partitioned over the pair, counted by the first block's barrier", function()
    local N, K = 256, 128
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 256, N }, "f32"), grid = { 1 }, cluster = { 2 }, cluster_names = { "x" },
      scratch_shapes = { mgpu.SMEM({ 2, 128, 64 }, "bf16", xf("bf16")), mgpu.SMEM({ 2, 64, N / 2 }, "bf16", xf("bf16")),
                         mgpu.TMEM({ 128, N }, "f32", { collective = true }), mgpu.Barrier{ num_barriers = 2, num_arrivals = 2 },
                         mgpu.Barrier{ orders_tensor_core = true } },
      body = function(a, b, c, as, bs, t, loaded, done)
        local x = mgpu.axis_index("x")
        for kk = 0, 1 do
          local split = function(d) return { collective_axes = "x", leader_tracked = mgpu.CopyPartition.PARTITIONED(d) } end
          mgpu.copy_gmem_to_smem(a:at(mgpu.all, mgpu.ds(kk * 64, 64)), as:at(kk), loaded:at(kk), split(0))
          mgpu.copy_gmem_to_smem(b:at(mgpu.ds(kk * 64, 64), mgpu.all), bs:at(kk), loaded:at(kk), split(1))
        end
        mgpu.when(mgpu.eq(x, 0), function()
          for kk = 0, 1 do
            mgpu.barrier_wait(loaded:at(kk))
            mgpu.tcgen05_mma(t, as:at(kk), bs:at(kk), { accumulate = kk > 0, collective_axis = "x" })
          end
          mgpu.tcgen05_commit_arrive(done, { collective_axis = "x" })
        end)
        mgpu.barrier_wait(done)
        c:at(mgpu.ds(x * 128, 128), mgpu.all):store(mgpu.async_load_tmem(t))
      end }
    local a, b = mgpu.random.uniform({ 256, K }, "bf16", 7, -2, 2), mgpu.random.uniform({ K, N }, "bf16", 8, -2, 2)
    assert.is_true(relerr(k(a, b):to_table(), a:to_table(), b:to_table(), 256, N, K, false) < 1e-6)
    local ptx = k:lower(a, b).ptx
    assert.matches("mapa%.shared::cluster%.u32 %%r%d+, %%r%d+, %%r%d+;\n\t@%%p%d+ cp%.async%.bulk%.tensor%.%dd%.cta_group::2%." ..
                   "shared::cluster%.global%.mbarrier::complete_tx::bytes", ptx)
    assert.matches("mbarrier%.arrive%.expect_tx%.shared::cta%.b64 _, %[%%r%d+%], 32768;", ptx)   -- both halves of A: 2 x 128 x 64 x 2
    local bad = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), cluster = { 2 }, cluster_names = { "x" },
      scratch_shapes = { mgpu.SMEM({ 128, 64 }, "bf16", xf("bf16")), mgpu.Barrier{} },
      body = function(a, o, as, bar)
        mgpu.copy_gmem_to_smem(a, as, bar, { collective_axes = "x", leader_tracked = mgpu.CopyPartition.PARTITIONED(0) })
      end }
    assert.matches("tcgen05_spec.lua:%d+: copy_gmem_to_smem: partitioned along dim 0, the GMEM view &gmem bf16%[128,64%] must be " ..
                   "twice the SMEM ref", err_of(function() bad:lower(mgpu.shape({ 128, 64 }, "bf16")) end))
  end)

  it("names the shape, dtype, pairing and barrier rules at the script line", function()
    local function e(...) return err_of(function(...) mm(...):lower(mgpu.shape({ 128, 64 }, "bf16"), mgpu.shape({ 64, 64 }, "bf16")) end, ...) end
    assert.matches("tcgen05_spec.lua:%d+: tcgen05_mma: N = 200 is not an MMA shape for M = 128: N must be a multiple of 16 up to 512",
                   err_of(function() mm("bf16", "f32", 200, 64):lower(mgpu.shape({ 128, 64 }, "bf16"), mgpu.shape({ 200, 64 }, "bf16")) end))
    assert.matches("tcgen05_mma: bf16 x bf16 into i32: 8%-bit integer operands", e("bf16", "i32", 64, 64))
    local k48 = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 128, 48 }, "f8e4m3"), mgpu.SMEM({ 48, 64 }, "f8e4m3"), mgpu.TMEM({ 128, 64 }, "f32") },
      body = function(o, as, bs, t) mgpu.tcgen05_mma(t, as, bs) end }
    assert.matches("tcgen05_spec.lua:%d+: tcgen05_mma: K = 48 must be a multiple of 32 for f8e4m3 operands",
                   err_of(function() k48:lower() end))
    assert.matches("tcgen05_spec.lua:%d+: tcgen05_commit_arrive: the barrier must be made with orders_tensor_core = true",
                   err_of(function() mm("bf16", "f32", 64, 64, { otc = false }):lower(mgpu.shape({ 128, 64 }, "bf16"), mgpu.shape({ 64, 64 }, "bf16")) end))
    local pairless = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), cluster = { 1, 2 }, cluster_names = { "x", "y" },
      scratch_shapes = { mgpu.SMEM({ 128, 64 }, "bf16", xf("bf16")), mgpu.SMEM({ 64, 64 }, "bf16", xf("bf16")),
                         mgpu.TMEM({ 128, 128 }, "f32") },
      body = function(o, as, bs, t) mgpu.tcgen05_mma(t, as, mgpu.transpose_ref(bs, { 1, 0 }), { collective_axis = "y" }) end }
    assert.matches("tcgen05_spec.lua:%d+: tcgen05_mma: collective_axis 'y' must be the kernel's first cluster axis, of size 2",
                   err_of(function() pairless:lower() end))
    local nopair = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"),
      scratch_shapes = { mgpu.TMEM({ 128, 128 }, "f32", { collective = true }) }, body = function(o, t) end }
    assert.matches("tcgen05_spec.lua:%d+: TMEM: collective %(2%-CTA%) tensor%-core work needs a cluster pair",
                   err_of(function() nopair:lower() end))
    local mixed = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), cluster = { 2 }, cluster_names = { "x" },
      scratch_shapes = { mgpu.SMEM({ 128, 64 }, "bf16", xf("bf16")), mgpu.SMEM({ 128, 64 }, "bf16", xf("bf16")),
                         mgpu.TMEM({ 128, 128 }, "f32", { collective = true }) },
      body = function(o, as, bs, t) mgpu.tcgen05_mma(t, as, mgpu.transpose_ref(bs, { 1, 0 })) end }
    assert.matches("tcgen05_spec.lua:%d+: tcgen05_mma: a kernel's tcgen05 work is all collective %(2%-CTA%) or all per block",
                   err_of(function() mixed:lower() end))
    mgpu.configure{ target = "sm_90a" }
    local hopper = err_of(function() mm("bf16", "f32", 64, 64):lower(mgpu.shape({ 128, 64 }, "bf16"), mgpu.shape({ 64, 64 }, "bf16")) end)
    mgpu.configure{ target = "sm_100a" }
    assert.matches("tcgen05_spec.lua:%d+: TMEM is Blackwell%-only %(sm_100a tensor memory, tcgen05 and cluster launch control%) but this kernel's target is sm_90a", hopper)
  end)

  it("faults on reading the accumulator before the commit's barrier is awaited, and on an MMA over unawaited loads", function()
    local early = mgpu.kernel{ out_shape = mgpu.shape({ 128, 64 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 128, 64 }, "bf16", xf("bf16")), mgpu.SMEM({ 64, 64 }, "bf16", xf("bf16")),
                         mgpu.TMEM({ 128, 64 }, "f32"), mgpu.Barrier{ orders_tensor_core = true } },
      body = function(a, b, c, as, bs, t, bar)
        as:store(a:load()); bs:store(b:load())
        mgpu.commit_smem()
        mgpu.tcgen05_mma(t, as, mgpu.transpose_ref(bs, { 1, 0 }), bar, { accumulate = false })
        c:store(mgpu.async_load_tmem(t))           -- before barrier_wait(bar)
        mgpu.barrier_wait(bar)
      end }
    local a, b = mgpu.random.normal({ 128, 64 }, "bf16"), mgpu.random.normal({ 64, 64 }, "bf16")
    assert.matches("async_load_tmem reads TMEM that the tcgen05_mma at [^ ]*tcgen05_spec.lua:%d+ is still writing: wait on the " ..
                   "barrier its tcgen05_commit_arrive signals first", err_of(early, a, b))
    local war = mgpu.kernel{ out_shape = mgpu.shape({ 128, 64 }, "f32"), num_threads = 2, thread_name = "wg",
      scratch_shapes = { mgpu.SMEM({ 128, 64 }, "bf16", xf("bf16")), mgpu.SMEM({ 64, 64 }, "bf16", xf("bf16")),
                         mgpu.TMEM({ 128, 64 }, "f32"), mgpu.Barrier{ num_barriers = 2, orders_tensor_core = true } },
      body = function(a, b, c, as, bs, t, bar)
        local wg = mgpu.axis_index("wg")
        mgpu.when(mgpu.eq(wg, 0), function()
          as:store(a:load()); bs:store(b:load())
          mgpu.commit_smem()
          mgpu.tcgen05_mma(t, as, mgpu.transpose_ref(bs, { 1, 0 }), bar:at(0), { accumulate = false })
          mgpu.barrier_wait(bar:at(1))
          mgpu.tcgen05_mma(t, as, mgpu.transpose_ref(bs, { 1, 0 }), bar:at(0))   -- the reader did not wait_load_tmem
        end)
        mgpu.when(mgpu.eq(wg, 1), function()
          mgpu.barrier_wait(bar:at(0))
          c:store(mgpu.async_load_tmem(t))
          mgpu.barrier_arrive(bar:at(1))
        end)
      end }
    assert.matches("tcgen05_mma overwrites TMEM that the async_load_tmem at [^ ]*tcgen05_spec.lua:%d+ %(warpgroup 1 of block 0%) " ..
                   "may still be reading", err_of(war, a, b))
  end)

  it("lowers to one thread's tcgen05.mma per K step with the instruction descriptor, a commit, and tensor-core fences", function()
    local ptx = mm("bf16", "f32", 128, 64):lower(mgpu.shape({ 128, 64 }, "bf16"), mgpu.shape({ 128, 64 }, "bf16")).ptx
    -- four K steps of 16: the first overwrites (its pred is false), the others accumulate
    local n = 0
    for _ in ptx:gmatch("@%%p%d+ tcgen05%.mma%.cta_group::1%.kind::f16 %[%%r%d+%], %%rd%d+, %%rd%d+, %%r%d+, %%p%d+;") do n = n + 1 end
    assert.are.equal(4, n)
    assert.matches("mov%.b32 %%r%d+, 136316048;", ptx)        -- idesc: f32 += bf16 x bf16, K-major, N = 128, M = 128
    assert.matches("mov%.b32 %%r%d+, 1073758272;", ptx)       -- descriptor high word: 128-byte swizzle, SBO 1024, version bit 46
    assert.matches("tcgen05%.commit%.cta_group::1%.mbarrier::arrive::one%.shared::cluster%.b64 %[%%r%d+%];", ptx)
    assert.matches("mbarrier%.try_wait%.parity[^\n]*\n[^\n]*\n[^\n]*\n[^\n]*\n\ttcgen05%.fence::after_thread_sync;", ptx)
    ptx = mm("f16", "f32", 64, 64, { bmn = true, atmem = true }):lower(mgpu.shape({ 128, 64 }, "f16"), mgpu.shape({ 64, 64 }, "f16")).ptx
    assert.matches("tcgen05%.mma%.cta_group::1%.kind::f16 %[%%r%d+%], %[%%r%d+%], %%rd%d+, %%r%d+, %%p%d+;", ptx)   -- A in TMEM
    assert.matches("mov%.b32 %%r%d+, 135331856;", ptx)        -- f16 x f16, B N-major (bit 16), N = 64, M = 128
  end)
end)
