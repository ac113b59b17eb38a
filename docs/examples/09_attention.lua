--[[
Tutorial 9: attention (docs/tutorial/09-attention.md).

O = softmax(Q K^T / sqrt(D)) V for each of BH heads, with flash attention's
online softmax: one block per (head, 64 query rows) walks the keys and
values in blocks of BKV rows, double-buffered in SMEM, and never holds the
whole (S x S) score matrix.  Per KV block:
  S = Q K^T          wgmma, K read through a transposed view
  m, l, P            the running row max and sum, P = exp(S - m)
  O = O * alpha + P V  the rescaled accumulator, P fed to wgmma from registers

  mgpu docs/examples/09_attention.lua [BH] [S] [D]   (S a multiple of 64; D 64 or 128)
]]
local mgpu = require "mgpu"
local T = mgpu.transforms

local BH = tonumber((select(1, ...))) or 2
local S = tonumber((select(2, ...))) or 192
local D = tonumber((select(3, ...))) or 64
local BQ, BKV = 64, 64
local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }      -- 16-bit rows of 128 bytes
local scale2 = 1 / math.sqrt(D) * 1.4426950408889634   -- the softmax scale times log2(e): exp2 below

local attention = mgpu.kernel{
  name = "attention",
  grid = { BH, S / BQ },
  out_shape = mgpu.shape({ BH, S, D }, "bf16"),
  scratch_shapes = {
    mgpu.SMEM({ BQ, D }, "bf16", { transforms = xf }),         -- Q
    mgpu.SMEM({ 2, BKV, D }, "bf16", { transforms = xf }),     -- K, two slots
    mgpu.SMEM({ 2, BKV, D }, "bf16", { transforms = xf }),     -- V, two slots
    mgpu.Barrier{},                                            -- Q has landed
    mgpu.Barrier{ num_barriers = 2, num_arrivals = 2 },        -- a slot's K and V have landed
  },
  body = function(q, k, v, o, q_smem, k_smem, v_smem, q_bar, kv_bar)
    local h, qi = mgpu.program_id(0), mgpu.program_id(1)
    local rows = mgpu.ds(qi * BQ, BQ)
    local nkv = S / BKV
    local function fetch(j, slot)                  -- KV block j into a slot
      local kv = mgpu.ds(j * BKV, BKV)
      mgpu.copy_gmem_to_smem(k:at(h, kv), k_smem:at(slot), kv_bar:at(slot))
      mgpu.copy_gmem_to_smem(v:at(h, kv), v_smem:at(slot), kv_bar:at(slot))
    end
    mgpu.copy_gmem_to_smem(q:at(h, rows), q_smem, q_bar)
    fetch(0, 0)
    mgpu.barrier_wait(q_bar)

    mgpu.run_scoped(function(acc)                  -- O, (BQ x D) in f32
      -- the running max and sum of each query row (their layout is inferred:
      -- WGMMA:reduce(1), that of s:max(1) below)
      local m0 = mgpu.broadcast(-1e30, { BQ }, "f32")
      local l0 = mgpu.broadcast(0.0, { BQ }, "f32")
      local m, l = mgpu.fori(0, nkv, function(j, m, l)
        local slot = j % 2
        mgpu.barrier_wait(kv_bar:at(slot))
        -- the other slot is free (the last step waited for its wgmmas): prefetch
        mgpu.when(mgpu.lt(j + 1, nkv), function() fetch(j + 1, 1 - slot) end)
        local s = mgpu.run_scoped(function(sacc)
          mgpu.wgmma(sacc, q_smem, mgpu.transpose_ref(k_smem:at(slot), { 1, 0 }))
          return sacc:load()                       -- reading it waits for the wgmma
        end, mgpu.ACC({ BQ, BKV }, "f32"))
        local m_new = mgpu.max(m, s:max(1) * scale2)
        local alpha = mgpu.exp2(m - m_new)
        local p = mgpu.exp2(s * scale2 - m_new:broadcast_in_dim({ BQ, BKV }, { 0 }))
        acc:store(acc:load() * alpha:broadcast_in_dim({ BQ, D }, { 0 }))
        mgpu.wgmma(acc, p:astype("bf16"), v_smem:at(slot))   -- A from registers, B from SMEM
        mgpu.wgmma_wait(0)
        return m_new, l * alpha + p:sum(1)
      end, m0, l0)
      local out = acc:load() / l:broadcast_in_dim({ BQ, D }, { 0 })
      o:at(h, rows):store(out:astype("bf16"))
    end, mgpu.ACC({ BQ, D }, "f32"))
  end,
}

local q = mgpu.random.normal({ BH, S, D }, "bf16")
local k = mgpu.random.normal({ BH, S, D }, "bf16")
local v = mgpu.random.normal({ BH, S, D }, "bf16")
local o = attention(q, k, v)
if mgpu.compile_only() then return end

-- the float64 reference, head by head (host arrays have no transpose: K^T
-- is built from the elements)
local H = mgpu.host
local function heads(x) return H.from(x:reshape({ BH * S, D })) end
local hq, hv, ho = heads(q), heads(v), heads(o)
local kl = k:tolist()
local worst = 0
for h = 0, BH - 1 do
  local kt = {}
  for d = 1, D do for s = 1, S do kt[#kt + 1] = kl[h + 1][s][d] end end
  local scores = H.matmul(hq:rows(h * S, S), H.from_table(kt, { D, S })) * (1 / math.sqrt(D))
  local e = (scores - scores:amax(1, true)):exp()
  local ref = H.matmul(e / e:sum(1, true), hv:rows(h * S, S))
  worst = math.max(worst, H.relerr(ho:rows(h * S, S), ref))
end
print(string.format("attention bf16 BH=%d S=%d D=%d: relative error %.2e", BH, S, D, worst))
assert(worst < 2e-2, "attention: wrong result")
