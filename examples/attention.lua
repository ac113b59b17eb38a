--[[
Flash attention forward, FlashAttention-3 style, as Pallas' attention_mgpu
writes it: O = softmax(Q K^T * scale) V over (batch, seq, heads, head_dim)
bf16 (or f16) inputs, head_dim 64 or 128, optionally causal.

- one block per (128-query tile, batch * head): two compute warpgroups own
  64 query rows each, a memory warpgroup (40 registers) streams K and V
  through `depth` SMEM slots with TMA (emit_pipeline_warp_specialized);
- each compute warpgroup loads its Q slab once, then per KV block:
  S = Q K^T with wgmma (K seen through transpose_ref), online softmax in
  base 2 (scale folded with log2(e), row max and sum carried in the
  WGMMA:reduce(1) layout), O rescaled in its accumulator, P cast to 16 bits
  in registers and fed to wgmma as the A operand of P V;
- optional ping-pong (pingpong=1): the two compute warpgroups take turns at
  the tensor cores, so that one's softmax overlaps the other's matmuls (on
  the H100 it measured 2-6% slower than letting them run freely:
  bench/RESULTS.md run 12);
- at the end O / l goes through the Q slab in SMEM and leaves by TMA.

  mgpu examples/attention.lua [B] [S] [H] [D] [causal] [dtype] [key=value ...]
    keys: block_kv (64|128) depth (slots, >= 2) pingpong (0|1) reps
  (2 x 4096 x 16 x 128 on a GPU; 1 x 256 x 2 x 64 interpreted)

S must be a multiple of 128 (and of block_kv).  TFLOP/s = 4 B H S^2 D / time,
half that when causal.  Loaded with `loadfile("examples/attention.lua")("--lib")`
it returns { build = ... }.
]]
local mgpu = require "mgpu"
local T = mgpu.transforms
local lib = {}

lib.defaults = { block_kv = 128, depth = 2, causal = false, pingpong = 0, dtype = "bf16" }
local BQ = 64          -- query rows per compute warpgroup
local LOG2E = 1.4426950408889634

--- The attention kernel for cfg: attn(q, k, v) -> o, all (B, S, H, D).
function lib.build(cfg)
  local c = {}
  for k, v in pairs(lib.defaults) do c[k] = v end
  for k, v in pairs(cfg or {}) do c[k] = v end
  local bkv, depth, causal = c.block_kv, c.depth, c.causal
  assert(bkv == 64 or bkv == 128, "attention: block_kv must be 64 or 128")
  assert(depth >= 2, "attention: depth must be at least 2")
  local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }    -- 128-byte rows of 16-bit elements

  local function dims(q, k, v)
    if #q.shape ~= 4 then error("attention: q must be (batch, seq, heads, head_dim), got " .. #q.shape .. " dims", 0) end
    local B, S, H, D = q.shape[1], q.shape[2], q.shape[3], q.shape[4]
    for _, x in ipairs({ k, v }) do
      if #x.shape ~= 4 or x.shape[1] ~= B or x.shape[2] ~= S or x.shape[3] ~= H or x.shape[4] ~= D or x.dtype ~= q.dtype then
        error(string.format("attention: q, k and v must have one shape and dtype, got %s[%s] and %s[%s]", q.dtype,
              table.concat(q.shape, ","), x.dtype, table.concat(x.shape, ",")), 0)
      end
    end
    if D ~= 64 and D ~= 128 then error(string.format("attention: head_dim must be 64 or 128, got %d", D), 0) end
    if S % (2 * BQ) ~= 0 or S % bkv ~= 0 then
      error(string.format("attention: seq = %d must be a multiple of %d and of block_kv = %d", S, 2 * BQ, bkv), 0)
    end
    if q.dtype ~= "bf16" and q.dtype ~= "f16" then error("attention: inputs must be bf16 or f16, got " .. q.dtype, 0) end
    return B, S, H, D
  end

  -- The kernel sees q, k, v and o as (B * S, H * D) views of the (B, S, H, D) arrays: a head's
  -- rows are then one 2-D TMA box (with the batch and head as squeezed dims, a D = 128 box would
  -- need 6 TMA dims).  One kernel per (S, H): the views do not carry them.
  local function kernel_for(B, S, H, D, dtype)
    return mgpu.kernel{
      name = causal and "attention_causal" or "attention",
      out_shape = mgpu.shape({ B * S, H * D }, dtype),
      -- the q tiles of one head are neighbours: they share that head's K and V in L2
      grid = { B * H, S / (2 * BQ) }, grid_names = { "bh", "qt" },
      num_threads = 3, thread_name = "wg",
      compiler_params = mgpu.CompilerParams{ approx_math = true },
      body = function(q, k, v, o)
        local scale = (c.scale or 1 / math.sqrt(D)) * LOG2E    -- softmax in base 2
        local bh, qt = mgpu.program_id(0), mgpu.program_id(1)
        local b, h = bh / H, bh % H
        local wg = mgpu.axis_index("wg")
        local q0 = qt * (2 * BQ)
        local nkv = S / bkv
        if causal then nkv = (qt + 1) * (2 * BQ / bkv) end   -- KV blocks at or before the diagonal
        local row_l = mgpu.Layout.WGMMA:reduce(1)
        local function rows(r0, n) return mgpu.ds(b * S + r0, n) end
        local cols = mgpu.ds(h * D, D)

        mgpu.run_scoped({ qo = mgpu.SMEM({ 2, BQ, D }, dtype, { transforms = xf }), qbar = mgpu.Barrier{ num_barriers = 2 },
                          sched = mgpu.Barrier{ num_arrivals = 2 } }, function(s)
          -- Ping-pong: the compute warpgroups meet at this barrier twice per KV block, warpgroup 1
          -- one meeting behind, so that one's S = Q K^T runs on the tensor cores during the
          -- other's softmax.
          local function meet()
            if c.pingpong == 0 then return end
            mgpu.barrier_arrive(s.sched)
            mgpu.barrier_wait(s.sched)
          end
          local function step(idx, k_smem, v_smem, carry)
            local kv = idx[1]
            local sc = mgpu.run_scoped(function(sacc)
              mgpu.wgmma(sacc, s.qo:at(wg), mgpu.transpose_ref(k_smem, { 1, 0 }))
              meet()
              return sacc:load()
            end, mgpu.ACC({ BQ, bkv }, "f32"))
            sc = sc * scale
            if causal then   -- only the blocks that cross the diagonal need the mask
              local unmasked = sc
              sc = mgpu.cond(mgpu.lt(kv * bkv + (bkv - 1), q0 + wg * BQ), function() return unmasked end, function()
                local qi = mgpu.broadcasted_iota("i32", { BQ, bkv }, 0, { layout = mgpu.Layout.WGMMA }) + (q0 + wg * BQ)
                local ki = mgpu.broadcasted_iota("i32", { BQ, bkv }, 1, { layout = mgpu.Layout.WGMMA }) + kv * bkv
                return mgpu.select(mgpu.le(ki, qi), unmasked, -math.huge)
              end)
            end
            local m_new = mgpu.max(carry.m, sc:max(1))
            local alpha = mgpu.exp2(carry.m - m_new)
            local p = mgpu.exp2(sc - m_new:broadcast_in_dim({ BQ, bkv }, { 0 }))
            local l = carry.l * alpha + p:sum(1)
            carry.acc:store(carry.acc:load() * alpha:broadcast_in_dim({ BQ, D }, { 0 }))
            mgpu.wgmma(carry.acc, p:astype(dtype), v_smem)
            meet()
            mgpu.wgmma_wait(0)     -- V's slot is released when the step returns
            return { acc = carry.acc, m = m_new, l = l }
          end

          local function compute(run)
            mgpu.copy_gmem_to_smem(q:at(rows(q0 + wg * BQ, BQ), cols), s.qo:at(wg), s.qbar:at(wg))
            mgpu.barrier_wait(s.qbar:at(wg))
            mgpu.run_scoped(function(acc)
              local m0 = mgpu.layout_cast(mgpu.broadcast(-1e30, { BQ }, "f32"), row_l)   -- finite: no inf - inf
              local l0 = mgpu.layout_cast(mgpu.broadcast(0.0, { BQ }, "f32"), row_l)
              mgpu.when(mgpu.eq(wg, 1), meet)    -- one meeting behind ...
              local fin = run({ acc = acc, m = m0, l = l0 })
              mgpu.when(mgpu.eq(wg, 0), meet)    -- ... and the meetings balance at the end
              local out = acc:load() / fin.l:broadcast_in_dim({ BQ, D }, { 0 })
              s.qo:at(wg):store(out:astype(dtype))      -- Q's slab is free: every wgmma reading it is done
              mgpu.commit_smem()
              mgpu.copy_smem_to_gmem(s.qo:at(wg), o:at(rows(q0 + wg * BQ, BQ), cols))
              mgpu.wait_smem_to_gmem(0)
            end, mgpu.ACC({ BQ, D }, "f32"))
          end

          local kv_spec = mgpu.BlockSpec{ { bkv, D }, function(j) return b * (S / bkv) + j, h end, transforms = xf }
          mgpu.emit_pipeline_warp_specialized(step, {
            grid = { nkv }, memory_registers = 40, num_compute_wgs = 2, wg_axis = "wg", max_concurrent_steps = depth,
            compute_context = compute, in_specs = { kv_spec, kv_spec },
          })(k, v)
        end)
      end,
    }
  end

  local cache = {}
  local attn = {}
  local function prepare(q, k, v)
    local B, S, H, D = dims(q, k, v)
    local key = table.concat({ B, S, H, D, q.dtype }, ",")
    cache[key] = cache[key] or kernel_for(B, S, H, D, q.dtype)
    local function flat(x) return x:reshape({ B * S, H * D }) end
    return cache[key], flat(q), flat(k), flat(v), flat
  end
  --- attn(q, k, v) -> o (B, S, H, D); attn.call_into(o, q, k, v) writes into o.
  function attn.call_into(o, q, k, v)
    local kern, q2, k2, v2, flat = prepare(q, k, v)
    kern:call_into(flat(o), q2, k2, v2)
    return o
  end
  function attn.kernel(q, k, v) return (prepare(q, k, v)) end
  return setmetatable(attn, { __call = function(_, q, k, v)
    local kern, q2, k2, v2 = prepare(q, k, v)
    return kern(q2, k2, v2):reshape(q.shape)
  end })
end

local args = { ... }
if args[1] == "--lib" then return lib end

-- -- The script: run, check against a float64 reference, time -------------------------

local cfg, pos = {}, {}
for _, a in ipairs(args) do
  local key, val = a:match("^([%w_]+)=(.+)$")
  if key then cfg[key] = tonumber(val) or val else pos[#pos + 1] = a end
end
local small = mgpu.interpreting()
local B = tonumber(pos[1]) or (small and 1 or 2)
local S = tonumber(pos[2]) or (small and 256 or 4096)
local H = tonumber(pos[3]) or (small and 2 or 16)
local D = tonumber(pos[4]) or (small and 64 or 128)
cfg.causal = pos[5] == "causal" or pos[5] == "1" or pos[5] == "true"
cfg.dtype = pos[6] or "bf16"
local reps = cfg.reps or 20
cfg.reps = nil
local attn = lib.build(cfg)

local shape = { B, S, H, D }
local q = mgpu.random.normal(shape, cfg.dtype)
local k = mgpu.random.normal(shape, cfg.dtype)
local v = mgpu.random.normal(shape, cfg.dtype)
local o = attn(q, k, v)
if mgpu.compile_only() then   -- --emit-ptx: the other variant too, so that ptxas checks both
  cfg.causal = not cfg.causal
  lib.build(cfg)(q, k, v)
  return
end

-- float64 reference for sampled (batch, head) pairs and query rows (every row when small)
local Hs = mgpu.host
local function head(x, bb, hh, transposed)   -- x[bb, :, hh, :] as (S, D), or (D, S)
  return mgpu.kernel{
    name = "head", grid = { S },
    out_shape = mgpu.shape(transposed and { D, S } or { S, D }, x.dtype),
    body = function(src, dst)
      local r = mgpu.program_id(0)
      local row = src:at(bb, r, hh, mgpu.all):load()
      if transposed then dst:at(mgpu.all, r):store(row) else dst:at(r, mgpu.all):store(row) end
    end,
  }(x)
end
local scale = 1 / math.sqrt(D)
local band = small and S or 64
local err = 0
for _, bh in ipairs({ { 0, 0 }, { B - 1, H - 1 } }) do
  local qh, kt, vh, oh = Hs.from(head(q, bh[1], bh[2])), Hs.from(head(k, bh[1], bh[2], true)),
                         Hs.from(head(v, bh[1], bh[2])), Hs.from(head(o, bh[1], bh[2]))
  for _, r0 in ipairs(band == S and { 0 } or { 0, S / 2 - band / 2, S - band }) do
    local sc = Hs.matmul(qh:rows(r0, band), kt) * scale
    if cfg.causal then
      local mask = {}
      for i = 0, band - 1 do
        for j = 0, S - 1 do mask[i * S + j + 1] = j <= r0 + i and 0 or -1e30 end
      end
      sc = sc + Hs.from_table(mask, { band, S })
    end
    local p = (sc - sc:amax(1, true)):exp()
    local ref = Hs.matmul(p, vh) / p:sum(1, true)
    err = math.max(err, Hs.relerr(oh:rows(r0, band), ref))
  end
end
local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
print(string.format("attention %s B=%d S=%d H=%d D=%d%s (%s): relative error %.2e", cfg.dtype, B, S, H, D,
                    cfg.causal and " causal" or "", mode, err))
assert(err <= 2e-2, "attention: result differs from the reference")

if not mgpu.interpreting() then
  local ms = mgpu.bench(function() attn.call_into(o, q, k, v) end, { reps = reps })
  local flops = 4 * B * H * S * S * D / (cfg.causal and 2 or 1)
  print(string.format("attention: %.4f ms, %.1f TFLOP/s", ms, flops / ms / 1e9))
end
