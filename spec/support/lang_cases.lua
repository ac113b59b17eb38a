--[[
Numerical cases of the kernel language's views and loops: the transposed
WGMMA layout through transposed SMEM refs, reshaped SMEM refs, and refs
carried by loops.  Each builds a small kernel, runs it on fresh random
inputs (outputs poisoned first) and compares with a reference computed in
double precision in plain Lua.  spec/lang_spec.lua runs them in the
interpreter, tools/run_cases.lua on the GPU (and under --emit-ptx for
ptxas).  A case is { name, run = function(mgpu) return err, tol end }.
]]
local compare = dofile("spec/support/cases.lua").compare
local cases = {}
local function add(name, run) cases[#cases + 1] = { name = name, run = run } end

-- Round a table of doubles to a dtype through a host array.
local function round(mgpu, t, dtype) return mgpu.host.from_table(t):round(dtype):to_table() end

-- -- Layout.WGMMA_TRANSPOSED -------------------------------------------------------------

-- x (C, R) is stored as it is into SMEM, read back through transpose_ref as an (R, C) array in
-- WGMMA_TRANSPOSED, mapped by 2y + 1 in f32, and written both to GMEM directly (o = 2x^T + 1)
-- and through a transposed view of a second buffer that goes out untransposed (p = 2x + 1).
for _, c in ipairs({ { "bf16", 128, 64, 128 }, { "f16", 64, 128, 64 }, { "bf16", 64, 64, 32 } }) do
  local dt, R, C, swz = c[1], c[2], c[3], c[4]
  add(string.format("wgmma_transposed/%s/%dx%d/swz%d", dt, R, C, swz), function(mgpu)
    local T = mgpu.transforms
    local xf = { T.tiling{ 8, swz / 2 }, T.swizzle(swz) }
    local k = mgpu.kernel{
      name = "wgmma_tr_" .. dt .. R .. "x" .. C .. "_" .. swz, grid = { 1 },
      out_shape = { mgpu.shape({ R, C }, dt), mgpu.shape({ C, R }, dt) },
      scratch_shapes = { mgpu.SMEM({ C, R }, dt, { transforms = xf }), mgpu.SMEM({ C, R }, dt, { transforms = xf }) },
      body = function(x, o, p, s, t)
        s:store(x:load())
        local y = mgpu.transpose_ref(s, { 1, 0 }):load{ layout = mgpu.Layout.WGMMA_TRANSPOSED }
        local z = (y:astype("f32") * 2 + 1):astype(dt)
        o:store(z)
        mgpu.transpose_ref(t, { 1, 0 }):store(z)
        p:store(t:load())
      end,
    }
    local x = mgpu.random.normal({ C, R }, dt)
    local xt, ro, rp = x:to_table(), {}, {}
    for i = 0, R - 1 do for j = 0, C - 1 do ro[i * C + j + 1] = 2 * xt[j * R + i + 1] + 1 end end
    for i = 1, #xt do rp[i] = 2 * xt[i] + 1 end
    local o, p = k(x)
    return math.max(compare(mgpu, o, round(mgpu, ro, dt)), compare(mgpu, p, round(mgpu, rp, dt))), 0
  end)
end

-- -- ref:reshape ----------------------------------------------------------------------------

-- A tiled, swizzled buffer (3, 2, 64, 64) written whole as (6, 64, 64) and read back slot by slot
-- (a dynamic index) as (2, 64, 64); a plain buffer (4, 8, 32) seen as (32, 32) and as (1024).
add("reshape/tiled-and-plain", function(mgpu)
  local T = mgpu.transforms
  local k = mgpu.kernel{
    name = "reshape_views", grid = { 1 }, out_shape = { mgpu.shape({ 6, 64, 64 }, "bf16"), mgpu.shape({ 1024 }, "f32") },
    scratch_shapes = { mgpu.SMEM({ 3, 2, 64, 64 }, "bf16", { transforms = { T.tiling{ 8, 64 }, T.swizzle(128) } }),
                       mgpu.SMEM({ 4, 8, 32 }, "f32") },
    body = function(x, y, o, p, s, t)
      s:reshape({ 6, 64, 64 }):store(x:load())
      local first = mgpu.program_id(0)        -- 0, traced: a dynamic slot index
      for j = 0, 2 do
        local v = s:at(mgpu.ds(first + 2 - j, 1)):reshape({ 2, 64, 64 })
        o:at(mgpu.ds(2 * j, 2)):store((v:load():astype("f32") * 3):astype("bf16"))
      end
      t:reshape({ 32, 32 }):store(y:load())
      p:store(t:reshape({ 1024 }):load() + 1)
    end,
  }
  local x, y = mgpu.random.normal({ 6, 64, 64 }, "bf16"), mgpu.random.normal({ 32, 32 }, "f32")
  local xt, yt, ro, rp = x:to_table(), y:to_table(), {}, {}
  for j = 0, 2 do                              -- out rows 2j, 2j+1 are slot 2 - j
    for e = 1, 2 * 4096 do ro[2 * j * 4096 + e] = 3 * xt[(2 - j) * 2 * 4096 + e] end
  end
  for i = 1, 1024 do rp[i] = yt[i] + 1 end
  local o, p = k(x, y)
  return math.max(compare(mgpu, o, round(mgpu, ro, "bf16")), compare(mgpu, p, round(mgpu, rp, "f32"))), 0
end)

-- The first tiled dim merged with and split into leading dims, in whole tiles: a (2, 64, 64)
-- buffer tiled {8, 64} and swizzled, written by TMA as (128, 64), read back as (4, 32, 64) with
-- a dynamic index, and as a (16, 64) view of its rows 32..47, and wgmma reading a 64-row
-- operand out of the (128, 64) view.
add("reshape/tiled-dim-split-merge", function(mgpu)
  local T = mgpu.transforms
  local k = mgpu.kernel{
    name = "reshape_tiled_dim", grid = { 1 },
    out_shape = { mgpu.shape({ 4, 32, 64 }, "f32"), mgpu.shape({ 16, 64 }, "f32"), mgpu.shape({ 64, 64 }, "f32") },
    scratch_shapes = { mgpu.SMEM({ 2, 64, 64 }, "bf16", { transforms = { T.tiling{ 8, 64 }, T.swizzle(128) } }),
                       mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { T.tiling{ 8, 64 }, T.swizzle(128) } }),
                       mgpu.Barrier{ num_barriers = 2 } },
    body = function(x, wg, o, q, r, s, w, bar)
      local rows = s:reshape({ 128, 64 })
      mgpu.copy_gmem_to_smem(x, rows, bar:at(0))
      mgpu.copy_gmem_to_smem(wg, w, bar:at(1))
      mgpu.barrier_wait(bar:at(0))
      mgpu.barrier_wait(bar:at(1))
      local first = mgpu.program_id(0)          -- 0, traced: a dynamic index
      local parts = rows:reshape({ 4, 32, 64 })
      for j = 0, 3 do o:at(j):store(parts:at(first + 3 - j):load():astype("f32")) end
      q:store(s:at(0):reshape({ 4, 16, 64 }):at(2):load():astype("f32") * 2)
      mgpu.run_scoped(function(acc)
        mgpu.wgmma(acc, rows:at(mgpu.ds(64, 64)), w)
        r:store(acc:load())
      end, mgpu.ACC({ 64, 64 }, "f32"))
    end,
  }
  local x, w = mgpu.random.normal({ 128, 64 }, "bf16"), mgpu.random.normal({ 64, 64 }, "bf16")
  local xt, wt, ro, rq, rr = x:to_table(), w:to_table(), {}, {}, {}
  for j = 0, 3 do for e = 1, 32 * 64 do ro[j * 2048 + e] = xt[(3 - j) * 2048 + e] end end
  for e = 1, 16 * 64 do rq[e] = 2 * xt[32 * 64 + e] end
  for i = 0, 63 do for c = 0, 63 do
    local sum = 0
    for t = 0, 63 do sum = sum + xt[(64 + i) * 64 + t + 1] * wt[t * 64 + c + 1] end
    rr[i * 64 + c + 1] = sum
  end end
  local o, q, r = k(x, w)
  return math.max(compare(mgpu, o, ro), compare(mgpu, q, rq), compare(mgpu, r, rr)), 1e-6
end)

-- TMA into a reshaped buffer and wgmma operands from reshaped views (a dynamic slot for B).
add("reshape/tma-and-wgmma", function(mgpu)
  local T = mgpu.transforms
  local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }
  local k = mgpu.kernel{
    name = "reshape_wgmma", grid = { 1 }, out_shape = mgpu.shape({ 2, 64, 64 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 2, 2, 64, 64 }, "bf16", { transforms = xf }), mgpu.Barrier{} },
    body = function(a, b, o, s, bar)
      local flat = s:reshape({ 4, 64, 64 })
      mgpu.copy_gmem_to_smem(a, flat:at(mgpu.ds(0, 2)), bar)
      mgpu.barrier_wait(bar)
      flat:at(2):store(b:load())
      mgpu.commit_smem()
      local slot = mgpu.program_id(0) + 1
      for j = 0, 1 do
        mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc, flat:at(j), s:at(slot):reshape({ 2, 64, 64 }):at(0))
          o:at(j):store(acc:load())
        end, mgpu.ACC({ 64, 64 }, "f32"))
      end
    end,
  }
  local a, b = mgpu.random.normal({ 2, 64, 64 }, "bf16"), mgpu.random.normal({ 64, 64 }, "bf16")
  local at, bt, ref = a:to_table(), b:to_table(), {}
  for j = 0, 1 do for r = 0, 63 do for c = 0, 63 do
    local sum = 0
    for q = 0, 63 do sum = sum + at[j * 4096 + r * 64 + q + 1] * bt[q * 64 + c + 1] end
    ref[j * 4096 + r * 64 + c + 1] = sum
  end end end
  return compare(mgpu, k(a, b), ref), 1e-6
end)

-- -- Refs carried by loops ---------------------------------------------------------------------

-- while_loop double buffering: cur holds the running sum of x[0..i), the body writes the next
-- sum into other and swaps them; both are views of one buffer's two slots.
add("while-loop/ref-double-buffer", function(mgpu)
  local S = 5
  local k = mgpu.kernel{
    name = "while_refs", grid = { 1 }, out_shape = { mgpu.shape({ 64, 64 }, "f32"), mgpu.shape({ 1 }, "i32") },
    scratch_shapes = { mgpu.SMEM({ 2, 64, 64 }, "f32") },
    body = function(x, o, n, bufs)
      bufs:at(0):store(0.0)
      local steps, cur = mgpu.while_loop(function(i) return mgpu.lt(i, S) end, function(i, cur, other)
        other:store(cur:load() + x:at(i):load() * (i + 1):astype("f32"))
        return i + 1, other, cur
      end, 0, bufs:at(0), bufs:at(1))
      o:store(cur:load())
      n:at(0):store(steps)
    end,
  }
  local x = mgpu.random.normal({ S, 64, 64 }, "f32")
  local xt, ref = x:to_table(), {}
  for e = 1, 4096 do
    local sum = 0
    for i = 0, S - 1 do sum = sum + xt[i * 4096 + e] * (i + 1) end
    ref[e] = sum
  end
  local o, n = k(x)
  return math.max(compare(mgpu, o, ref, "f32"), compare(mgpu, n, { S })), 1e-6
end)

-- A K loop over A tiles double-buffered by TMA: fori carries the tile being multiplied, its
-- barrier, and the other slot and barrier that the next copy lands in; B stays whole in SMEM.
add("fori/ref-carried-tma-pipeline", function(mgpu)
  local T = mgpu.transforms
  local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }
  local NK = 4
  local k = mgpu.kernel{
    name = "fori_refs", grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 2, 64, 64 }, "bf16", { transforms = xf }), mgpu.SMEM({ 64 * NK, 64 }, "bf16", { transforms = xf }),
                       mgpu.Barrier{ num_barriers = 2 }, mgpu.Barrier{} },
    body = function(a, b, o, as, bs, bars, bbar)
      mgpu.copy_gmem_to_smem(b, bs, bbar)
      mgpu.copy_gmem_to_smem(a:at(mgpu.all, mgpu.ds(0, 64)), as:at(0), bars:at(0))
      mgpu.barrier_wait(bbar)
      mgpu.run_scoped(function(acc)
        mgpu.fori(0, NK, function(i, cur, cbar, nxt, nbar)
          mgpu.when(mgpu.lt(i + 1, NK), function()
            mgpu.copy_gmem_to_smem(a:at(mgpu.all, mgpu.ds((i + 1) * 64, 64)), nxt, nbar)
          end)
          mgpu.barrier_wait(cbar)
          mgpu.wgmma(acc, cur, bs:at(mgpu.ds(i * 64, 64), mgpu.all))
          mgpu.wgmma_wait(0)
          return nxt, nbar, cur, cbar
        end, as:at(0), bars:at(0), as:at(1), bars:at(1))
        o:store(acc:load())
      end, mgpu.ACC({ 64, 64 }, "f32"))
    end,
  }
  local a, b = mgpu.random.normal({ 64, 64 * NK }, "bf16"), mgpu.random.normal({ 64 * NK, 64 }, "bf16")
  local at, bt, ref = a:to_table(), b:to_table(), {}
  for r = 0, 63 do for c = 0, 63 do
    local sum = 0
    for q = 0, 64 * NK - 1 do sum = sum + at[r * 64 * NK + q + 1] * bt[q * 64 + c + 1] end
    ref[r * 64 + c + 1] = sum
  end end
  return compare(mgpu, k(a, b), ref), 1e-6
end)

return cases
