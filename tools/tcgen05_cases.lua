--[[
tcgen05_cases.lua -- one kernel per Blackwell instruction form: TMEM
loads and stores in both access shapes for 32-, 16- and 8-bit values,
tcgen05.mma of every kind (f16, tf32, f8f6f4, i8) with A from SMEM or
TMEM, B K- or N-major, N split over instructions, the 2-CTA form, and
their commits, and cluster launch control (a dynamic_scheduling_loop
over a grid of cluster pairs).  Run with --target sm_100a: interpreted, each result is
checked against a double-precision reference; under mgpu --emit-ptx it
writes their PTX (ctest assembles it with ptxas -arch=sm_100a).

  mgpu --target sm_100a --interpret tools/tcgen05_cases.lua
]]
local mgpu = require "mgpu"
local T = mgpu.transforms

local function xf(dt)
  local bytes = ({ bf16 = 2, f16 = 2, f32 = 4, i32 = 4 })[dt] or 1
  return { transforms = { T.tiling{ 8, math.floor(128 / bytes) }, T.swizzle(128) } }
end

-- The 2-CTA MMA of a cluster pair: each block 128 rows of A (256 x K) and of the accumulator,
-- half of B (N x K, K-major); C is 256 x N f32.
local function mma_pair(N, K)
  return mgpu.kernel{ name = "mma_pair", out_shape = mgpu.shape({ 256, N }, "f32"), grid = { 1 }, cluster = { 2 },
    cluster_names = { "x" },
    scratch_shapes = { mgpu.SMEM({ 128, K }, "bf16", xf("bf16")), mgpu.SMEM({ N / 2, K }, "bf16", xf("bf16")),
                       mgpu.TMEM({ 128, N }, "f32", { collective = true }), mgpu.Barrier{ orders_tensor_core = true },
                       mgpu.ClusterBarrier{ collective_axes = "x" } },
    body = function(a, b, c, as, bs, t, bar, ready)
      local x = mgpu.axis_index("x")
      as:store(a:at(mgpu.ds(x * 128, 128), mgpu.all):load())
      bs:store(b:at(mgpu.ds(x * (N / 2), N / 2), mgpu.all):load())
      mgpu.commit_smem()
      mgpu.barrier_arrive(ready)
      mgpu.barrier_wait(ready)
      mgpu.tcgen05_mma(t, as, mgpu.transpose_ref(bs, { 1, 0 }), bar, { accumulate = false, collective_axis = "x" })
      mgpu.barrier_wait(bar)
      c:at(mgpu.ds(x * 128, 128), mgpu.all):store(mgpu.async_load_tmem(t))
    end }
end

-- loadfile("tools/tcgen05_cases.lua")("--lib") gives { mma_pair = mma_pair } to specs
if ({ ... })[1] == "--lib" then return { mma_pair = mma_pair } end
if mgpu.device().target ~= "sm_100a" then error("run with --target sm_100a (or MGPU_TARGET=sm_100a)") end

local failed = 0
local function check(name, err, tol)
  if mgpu.compile_only() then return end
  local ok = err <= tol
  print(string.format("%-44s relative error %.3g %s", name, err, ok and "ok" or "FAILED"))
  if not ok then failed = failed + 1 end
end

-- ||c - ref|| / ||ref|| for c and ref flat tables.
local function relerr(c, ref)
  local num, den = 0, 0
  for i = 1, #ref do num, den = num + (c[i] - ref[i]) ^ 2, den + ref[i] ^ 2 end
  return den > 0 and math.sqrt(num / den) or math.sqrt(num)
end

-- TMEM round trips: store, commit, load, in each layout.
for _, c in ipairs({ { "f32", "TCGEN05" }, { "f32", "TCGEN05_TMEM_NATIVE" }, { "i32", "TCGEN05" }, { "bf16", "TCGEN05_TMEM_NATIVE" },
                     { "f16", "TCGEN05_TMEM_NATIVE" }, { "i8", "TCGEN05_TMEM_NATIVE" } }) do
  local dt, lname = c[1], c[2]
  local lay = dt:match("8$") and mgpu.Layout.TCGEN05_TMEM_NATIVE(4) or mgpu.Layout[lname]
  local k = mgpu.kernel{ name = "tmem_" .. dt .. "_" .. lname:lower(), out_shape = mgpu.shape({ 128, 64 }, dt),
    scratch_shapes = { mgpu.TMEM({ 128, 128 }, dt) },
    body = function(x, o, t)
      local cols = t:at(mgpu.all, mgpu.ds(64, 64))
      mgpu.async_store_tmem(cols, x:load{ layout = lay })
      mgpu.commit_tmem()
      o:store(mgpu.async_load_tmem(cols, { layout = lay }))
      mgpu.wait_load_tmem()
    end }
  local x = mgpu.random.uniform({ 128, 64 }, dt, 1, -50, 50)
  local y = k(x)
  if not mgpu.compile_only() then check(k.name, relerr(y:to_table(), x:to_table()), 0) end
end

-- MMAs: acc (128, N) = a (128, K) @ b, b stored (N, K) unless bmn; A through TMEM when atmem.
local function mma_case(name, dt, acc, N, K, o)
  local scratch = { mgpu.SMEM({ 128, K }, dt, xf(dt)), mgpu.SMEM(o.bmn and { K, N } or { N, K }, dt, xf(dt)),
                    mgpu.TMEM({ 128, N }, acc), mgpu.Barrier{ orders_tensor_core = true } }
  if o.atmem then scratch[5] = mgpu.TMEM({ 128, K }, dt) end
  local k = mgpu.kernel{ name = name, out_shape = mgpu.shape({ 128, N }, acc), scratch_shapes = scratch,
    body = function(a, b, c, as, bs, t, bar, ...)
      local at = ...
      as:store(a:load())
      bs:store(b:load())
      mgpu.commit_smem()
      local A = as
      if o.atmem then
        mgpu.async_store_tmem(at, a:load{ layout = mgpu.Layout.TCGEN05_TMEM_NATIVE(2) })
        mgpu.commit_tmem()
        A = at
      end
      mgpu.tcgen05_mma(t, A, o.bmn and bs or mgpu.transpose_ref(bs, { 1, 0 }), bar, { accumulate = false })
      mgpu.barrier_wait(bar)
      c:store(mgpu.async_load_tmem(t))
    end }
  local lo = dt:match("^u") and 0 or -3
  local a = mgpu.random.uniform({ 128, K }, dt, 2, lo, 3)
  local b = mgpu.random.uniform(o.bmn and { K, N } or { N, K }, dt, 3, lo, 3)
  local c = k(a, b)
  if mgpu.compile_only() then return end
  local A, B, ref = a:to_table(), b:to_table(), {}
  for i = 0, 127 do
    for j = 0, N - 1 do
      local s = 0
      for kk = 0, K - 1 do s = s + A[i * K + kk + 1] * (o.bmn and B[kk * N + j + 1] or B[j * K + kk + 1]) end
      ref[i * N + j + 1] = s
    end
  end
  check(name, relerr(c:to_table(), ref), dt == "f32" and 2e-3 or 1e-6)
end
mma_case("mma_f16_bf16", "bf16", "f32", 128, 64, {})
mma_case("mma_f16_f16_nmajor", "f16", "f32", 256, 64, { bmn = true })
mma_case("mma_tf32", "f32", "f32", 64, 32, {})
mma_case("mma_f8f6f4", "f8e4m3", "f32", 64, 128, {})
mma_case("mma_i8", "i8", "i32", 32, 128, {})
mma_case("mma_u8", "u8", "i32", 64, 128, {})
mma_case("mma_a_tmem", "bf16", "f32", 128, 64, { atmem = true })
mma_case("mma_n512", "bf16", "f32", 512, 64, {})

-- The 2-CTA MMA of a cluster pair.
do
  local N, K = 256, 64
  local k = mma_pair(N, K)
  local a, b = mgpu.random.uniform({ 256, K }, "bf16", 4, -2, 2), mgpu.random.uniform({ N, K }, "bf16", 5, -2, 2)
  local c = k(a, b)
  if not mgpu.compile_only() then
    local A, B, ref = a:to_table(), b:to_table(), {}
    for i = 0, 255 do
      for j = 0, N - 1 do
        local s = 0
        for kk = 0, K - 1 do s = s + A[i * K + kk + 1] * B[j * K + kk + 1] end
        ref[i * N + j + 1] = s
      end
    end
    check("mma_pair", relerr(c:to_table(), ref), 1e-6)
  end
end

-- Cluster launch control: every item of a (3, 4) grid of cluster pairs once, whoever takes it.
do
  local k = mgpu.kernel{ name = "clc_loop", out_shape = mgpu.shape({ 3, 4, 2 }, "i32"), grid = { 3, 4 }, grid_names = { "i", "j" },
    cluster = { 2 }, cluster_names = { "x" }, num_threads = 2, thread_name = "wg",
    body = function(o)
      local x, wg = mgpu.axis_index("x"), mgpu.axis_index("wg")
      mgpu.dynamic_scheduling_loop({ "i", "j" }, { thread_axis = "wg", cluster_axes = { "x" } }, function(info)
        mgpu.when(mgpu.eq(wg, 1), function() o:at(info.index[1], info.index[2], x):store(info.index[1] * 4 + info.index[2]) end)
      end)
    end }
  local c = k()
  if not mgpu.compile_only() then
    local ref = {}
    for i = 0, 11 do ref[2 * i + 1], ref[2 * i + 2] = i, i end
    check("clc_loop", relerr(c:to_table(), ref), 0)
  end
end

if failed > 0 then error(failed .. " case(s) failed") end
