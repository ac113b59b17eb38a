--[[
Flash attention forward, FlashAttention-3 style, as Pallas' attention_mgpu
writes it: O = softmax(Q K^T * scale) V over (batch, seq, heads, head_dim)
bf16 or f16 inputs, head_dim 64, 128 or 256, optionally causal, with
grouped-query attention (k and v with fewer heads than q: q head h reads kv
head h / (heads / kv_heads)), any seq (the last blocks are masked) and
optionally the base-2 log-sum-exp of each row, (batch, heads, seq) f32,
for the backward pass (examples/attention_bwd.lua).

- one block per (query tile, batch * head): two compute warpgroups (three
  with wgs=3, the default for head_dim 64) own 64 query rows each; the
  memory warpgroup streams K and V in blocks of block_kv rows through
  `depth` SMEM slots with TMA.  K and V have their own ready and consumed
  barriers: a K slot is refilled as soon as every compute warpgroup has
  S = Q K^T, while P V may still read V;
- each compute warpgroup loads its Q slab once, then per KV block (the loop
  below): S = Q K^T with wgmma (K seen through transpose_ref), the causal /
  ragged mask where a block needs one, the online softmax in base 2 (the
  scale folded with log2(e) into one multiply-add per score, the row max m
  and sum l carried in the WGMMA:reduce(1) layout), O rescaled in its
  accumulator, and O += P V with P cast to 16 bits in registers as wgmma's
  A operand;
- ping-pong (pingpong=1): the compute warpgroups take turns at the tensor
  cores, so that one's softmax overlaps the others' matmuls (two meet
  twice a block, three pass a token round a ring);
- overlap (the default at head_dim 128): FlashAttention-3's
  intra-warpgroup overlap, where P V of block j - 1 is issued with
  S = Q K^T of block j and runs during the softmax of block j;
- at the end O / l goes through the Q slab in SMEM and leaves by TMA (rows
  past seq are clipped), the log-sum-exp from registers.

The options, shape checks, masks, the memory warpgroup's loop and the
ping-pong barriers are in examples/attention_math.lua (shared with
attention_pipeline.lua, this kernel on emit_pipeline_warp_specialized, and
attention_bwd.lua); the command line and references in attention_check.lua.

  mgpu examples/attention.lua [B] [S] [H] [D] [causal] [dtype] [key=value ...]
    keys: hkv (kv heads) scale lse (0|1) approx (0|1) block_kv (64..256, multiple of 16) wgs (2|3)
          depth (slots, >= 2) pingpong (0|1) overlap (0|1) reps
  (2 x 4096 x 16 x 128 on a GPU; 1 x 256 x 2 x 64 interpreted)

TFLOP/s = 4 B H S^2 D / time, half that when causal.  Loaded with
`loadfile("examples/attention.lua")("--lib")` it returns { build = ... }:
build(cfg) with cfg fields causal, scale, lse, approx_math, block_kv, wgs,
depth, pingpong, overlap; and the per-block steps below.
]]
local mgpu = require "mgpu"
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local amath = dofile(here .. "attention_math.lua")
local BQ = amath.BQ   -- query rows per compute warpgroup
local lib = {}

-- -- One KV block in a compute warpgroup ---------------------------------------------------------
-- ctx: c, S, D, bkv, dtype, scale2 (the softmax scale times log2(e)), q (the warpgroup's Q slab in
-- SMEM), acc (its O accumulator), row0 (its first query row), pp (the ping-pong turns).

--- The online softmax's starting row statistics: m (running max, finite so
--- that no inf - inf appears) and l (running sum), in WGMMA:reduce(1).
function lib.softmax_init()
  local rows = mgpu.Layout.WGMMA:reduce(1)
  return mgpu.layout_cast(mgpu.broadcast(-1e30, { BQ }, "f32"), rows),
         mgpu.layout_cast(mgpu.broadcast(0.0, { BQ }, "f32"), rows)
end

--- S = Q K^T of the K slot k_smem into a fresh f32 accumulator: issued,
--- then during() (the ping-pong meeting), then read.
function lib.scores(ctx, k_smem, during)
  return mgpu.run_scoped(function(sacc)
    mgpu.wgmma(sacc, ctx.q, mgpu.transpose_ref(k_smem, { 1, 0 }))
    during()
    return sacc:load()
  end, mgpu.ACC({ BQ, ctx.bkv }, "f32"))
end

--- The online softmax of KV block j's raw scores sc (BQ x bkv, masked here)
--- against the row statistics (m, l): the new (m, l), alpha = exp2(m -
--- m_new) that O must be scaled by, and P in the input dtype.  The row max
--- is taken over the raw scores and scaled once per row (the scale is
--- positive), so that each score's scaling and the max's subtraction are
--- one fused multiply-add.
function lib.online_softmax(ctx, j, sc, m, l)
  sc = amath.mask(ctx.c, ctx.S, sc, { rows0 = ctx.row0, cols0 = j * ctx.bkv })
  local m_new = mgpu.max(m, sc:max(1) * ctx.scale2)
  local alpha = mgpu.exp2(m - m_new)
  local p = mgpu.exp2(sc * ctx.scale2 - m_new:broadcast_in_dim({ BQ, ctx.bkv }, { 0 }))
  return m_new, l * alpha + p:sum(1), alpha, p:astype(ctx.dtype)
end

--- O *= alpha, row by row (waits for the wgmmas into O).
function lib.rescale(ctx, alpha)
  ctx.acc:store(ctx.acc:load() * alpha:broadcast_in_dim({ BQ, ctx.D }, { 0 }))
end

--- The epilogue: O / l through the Q slab (no wgmma reads it any more) and
--- TMA to o_view; with lse_view the base-2 log-sum-exp m + log2(l) there.
function lib.finish(ctx, m, l, o_view, lse_view)
  local out = ctx.acc:load() / l:broadcast_in_dim({ BQ, ctx.D }, { 0 })
  ctx.q:store(out:astype(ctx.dtype))
  mgpu.commit_smem()
  mgpu.copy_smem_to_gmem(ctx.q, o_view)
  if lse_view then lse_view:store(m + mgpu.log2(l)) end
  mgpu.wait_smem_to_gmem(0)
end

-- -- The kernel -----------------------------------------------------------------------------------

local function kernel_for(c, d)
  local S, H, D, dtype, bkv, depth = d.S, d.H, d.D, d.dtype, d.bkv, c.depth
  local xf, group = amath.xf, d.H / d.Hkv
  local function body(q, k, v, o, lse)
    local bh, qt = mgpu.program_id(0), mgpu.program_id(1)
    local b, h = bh / H, bh % H
    local hk = h / group
    local wg = mgpu.axis_index("wg")
    local q0 = qt * (c.wgs * BQ)
    local nkv = amath.kv_blocks(c, S, bkv, q0, c.wgs * BQ)
    local memory_regs, compute_regs = amath.registers(c)
    local function kv_view(x, j) return x:at(b, mgpu.ds(j * bkv, bkv), mgpu.ds(hk * D, D)) end
    local function kv_slots() return mgpu.SMEM({ depth, bkv, D }, dtype, { transforms = xf }) end
    mgpu.run_scoped(amath.kv_barriers({ qo = mgpu.SMEM({ c.wgs, BQ, D }, dtype, { transforms = xf }),
                                        k = kv_slots(), v = kv_slots(), qbar = mgpu.Barrier{ num_barriers = c.wgs },
                                        sched = amath.sched_barrier(c) }, depth, c.wgs), function(s)
      local function memory() amath.kv_memory(nkv, depth, s, k, v, kv_view, memory_regs) end

      local function compute()
        mgpu.set_max_registers(compute_regs, { action = "increase" })
        local row0 = q0 + wg * BQ
        local rows = mgpu.ds(row0, BQ)
        mgpu.copy_gmem_to_smem(q:at(b, rows, mgpu.ds(h * D, D)), s.qo:at(wg), s.qbar:at(wg))
        mgpu.barrier_wait(s.qbar:at(wg))
        mgpu.run_scoped(function(acc)
          local pp, offset, balance = amath.pingpong(c, s.sched, wg)
          local ctx = { c = c, S = S, D = D, bkv = bkv, dtype = dtype, scale2 = (c.scale or 1 / math.sqrt(D)) * amath.LOG2E,
                        q = s.qo:at(wg), acc = acc, row0 = row0, pp = pp }
          local m, l
          if not c.overlap then
            local m0, l0 = lib.softmax_init()
            offset()
            mgpu.when(mgpu.lt(0, nkv), function() mgpu.barrier_wait(s.kbar:at(0)) end)
            m, l = mgpu.fori(0, nkv, function(j, m_j, l_j)   -- KV block j in slot j % depth
              local slot = j % depth
              local k_smem, v_smem = s.k:at(slot), s.v:at(slot)
              local sc = lib.scores(ctx, k_smem, pp.meet)              -- S = Q K^T (then meet the other)
              mgpu.barrier_arrive(s.kfree:at(slot))                   -- K's slot may be refilled
              local m_new, l_new, alpha, p = lib.online_softmax(ctx, j, sc, m_j, l_j)
              lib.rescale(ctx, alpha)
              pp.arrive()                                             -- this softmax is done
              mgpu.barrier_wait(s.vbar:at(slot))
              pp.wait()                                               -- the others' matmuls are issued
              mgpu.wgmma(acc, p, v_smem)                              -- O += P V
              mgpu.when(mgpu.lt(j + 1, nkv), function() mgpu.barrier_wait(s.kbar:at((j + 1) % depth)) end)
              mgpu.wgmma_wait(0)
              mgpu.barrier_arrive(s.vfree:at(slot))                   -- V's slot may be refilled
              return m_new, l_new
            end, m0, l0)
            balance()
          else   -- P V of block j - 1 runs during the softmax of block j: S, the previous P and O live at once
            local function scores(j, pv)   -- S = Q K^T of block j, issued with P V of block j - 1 (pv)
              mgpu.barrier_wait(s.kbar:at(j % depth))
              if pv then mgpu.barrier_wait(s.vbar:at((j - 1) % depth)) end
              pp.wait()
              return mgpu.run_scoped(function(sacc)
                mgpu.wgmma(sacc, ctx.q, mgpu.transpose_ref(s.k:at(j % depth), { 1, 0 }))
                if pv then pv() end
                pp.meet()
                return sacc:load()   -- waits for S only: P V may still run
              end, mgpu.ACC({ BQ, bkv }, "f32"))
            end
            local m0, l0 = lib.softmax_init()
            pp.first()
            local sc = scores(0)
            mgpu.barrier_arrive(s.kfree:at(0))
            local m1, l1, _, p1 = lib.online_softmax(ctx, 0, sc, m0, l0)
            local p
            m, l, p = mgpu.fori(1, nkv, function(j, m_j, l_j, p_prev)
              sc = scores(j, function() mgpu.wgmma(acc, p_prev, s.v:at((j - 1) % depth)) end)
              mgpu.barrier_arrive(s.kfree:at(j % depth))
              local m_new, l_new, alpha, p_new = lib.online_softmax(ctx, j, sc, m_j, l_j)
              mgpu.wgmma_wait(0)
              mgpu.barrier_arrive(s.vfree:at((j - 1) % depth))
              lib.rescale(ctx, alpha)
              return m_new, l_new, p_new
            end, m1, l1, p1)
            mgpu.barrier_wait(s.vbar:at((nkv - 1) % depth))   -- the last block's P V
            pp.wait()
            mgpu.wgmma(acc, p, s.v:at((nkv - 1) % depth))
            pp.last()
            mgpu.wgmma_wait(0)
            mgpu.barrier_arrive(s.vfree:at((nkv - 1) % depth))
          end
          lib.finish(ctx, m, l, o:at(b, rows, mgpu.ds(h * D, D)), lse and lse:at(bh, rows))
        end, mgpu.ACC({ BQ, D }, "f32"))
      end

      mgpu.cond(mgpu.eq(wg, c.wgs), memory, compute)
    end)
  end
  return amath.kernel(c, d, "attention", body)
end

--- The attention for cfg: attn(q, k, v) -> o [, lse] (see attention_math.forward).
function lib.build(cfg)
  local c, err = amath.config(cfg, "attention")
  if not c then error(err, 2) end
  return amath.forward(c, kernel_for, "attention", true)
end

local args = { ... }
if args[1] == "--lib" then return lib end
dofile(here .. "attention_check.lua").forward_script(lib, args, "attention")
