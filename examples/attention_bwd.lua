--[[
Flash attention backward: dQ, dK and dV of O = softmax(scale Q K^T) V from
the forward's O and base-2 log-sum-exp (examples/attention.lua, lse=1) and
dO, over (batch, seq, heads, head_dim) bf16 or f16 arrays, head_dim 64 or
128, optionally causal, with grouped-query attention and any seq (ragged
blocks masked) as in the forward.  Two paths (cfg.fused):

Fused (the default; FlashAttention-3's shape), three kernels:
- delta = rowsum(dO * O), one warpgroup per 64 rows of a head, written
  beside each row's lse into (batch * heads, 2, seq rounded up to 8) f32
  (rows TMA can copy); it also zeroes the f32 dQ accumulator
  (batch, seq rounded up to 8, heads * head_dim);
- one block per (128 key rows, batch * kv head), as the dK, dV kernel
  below, and per query step also dQ's share dS K over its 128 keys.  The
  memory warpgroup brings each step's Q, dO, lse and delta into SMEM
  slots.  Each compute warpgroup starts its S^T and dP^T accumulators
  from -lse / (scale log2(e)) and -delta, issues both wgmmas at once,
  computes the exponentials while dP^T's runs, issues dV's wgmma and
  stores its dS^T (bf16 or f16) in SMEM; then it computes 64 x 64 chunks
  of the previous step's share (A: that step's dS^T of both warpgroups,
  seen transposed, B: all 128 K rows), dK's wgmma queued behind, and adds
  them into the accumulator with TMA reduce-add stores.  dQ a step late,
  a warpgroup waits only for the other's previous dS^T, and warpgroup 1
  starts once warpgroup 0's first S^T is in, so that the two run out of
  phase: one's exponentials during the other's wgmmas.  S and dP are
  computed once (10 B H S^2 D flops).  A step is 64 query rows, or 128
  with bq = 128 (head_dim 64 only, as FlashAttention-3 there): each
  warpgroup's S^T and dP^T are 64 x 128 (64 + 64 registers a thread) and
  each computes 64 rows of the step's dQ share;
- dQ = scale * accumulator in the inputs' dtype.
The order in which the key blocks' shares are added to dQ is not fixed, so
dQ may differ in its last bits from run to run; dK and dV are
deterministic.

Three kernels, deterministic (no atomics), as Pallas' attention_mgpu
backward (fused = false or 0), recomputing S and dP in both the dQ and the
dK, dV kernels (14 B H S^2 D flops):

- delta as above, alone: (batch * heads, seq) f32;
- dQ: one block per (128 query rows, batch * head); the memory warpgroup
  streams K and V blocks of 64 rows (K and V released separately), each
  compute warpgroup recomputes S = Q K^T and P = exp2(S scale log2(e) - lse)
  for its 64 rows, dP = dO V^T, dS = P (dP - delta) and accumulates
  dQ += dS K with dS from registers; dQ = scale dQ leaves through SMEM;
- dK, dV: one block per (128 key rows, batch * kv head); the memory
  warpgroup streams Q and dO blocks of 64 rows of every q head of the
  group, each compute warpgroup holds its 64 rows of K and V in SMEM and
  computes the transposed tiles S^T = K Q^T and dP^T = V dO^T, so that P^T
  and dS^T are in registers as wgmma's A operand: dV += P^T dO and
  dK += dS^T Q (the rows' lse and delta in the WGMMA:reduce(0) layout).
  Causal blocks start at the diagonal.  P^T's wgmma for dV is in flight
  while dP^T is computed, which keeps the peak at dK, dV (128 registers a
  thread with head_dim 128), P^T and dP^T.

  mgpu examples/attention_bwd.lua [B] [S] [H] [D] [causal] [dtype] [key=value ...]
    keys: hkv (kv heads) scale approx (0|1) depth (slots, >= 2) fused (0|1)
          bq (64|128, the fused kernel's query rows a step) reps
          variants=A/B/... (fused configurations, each key=value,... or -)
          profile=DIR: the in-kernel profiler's trace of the fused kernel
            (run twice, not timed; read it with tools/profile_phases.lua)
  (2 x 4096 x 16 x 128 on a GPU; 1 x 256 x 2 x 64 interpreted).  Without
  `fused`, `bq` or `variants` a GPU checks and times both paths (and with
  head_dim 64 the fused one with bq = 128 too), the interpreter the fused
  one; `variants` checks and times each configuration against one float64
  reference.

Profiled, each compute warpgroup's step is cut into scopes: wait_ready (Q,
dO, lse and delta's slot), init (the accumulators' lse and delta),
sdp_issue (S^T's and dP^T's wgmmas), s_wait, exp (P^T), dp_wait, ds (dS^T
and dV's issue), ds_bar (the wait for the other warpgroup's previous
dS^T), ds_store (dS^T into SMEM), dq (the previous step's dQ chunk's
wgmma, dK's issue and the chunk's wait), dq_free (the wait for the
previous chunk's reduce-add to have read its SMEM slot), dq_store (the
slot filled and the reduce-add issued) and tail (the last wgmma wait and
the slot's release); outside the loop kv_load, stagger (warpgroup 1), the
last step's ds_bar, dq, dq_free and dq_store, and epilogue.  The memory
warpgroup's are load and wait_free.

TFLOP/s counts the 10 B H S^2 D of the standard backward, half that when
causal.  Loaded with `loadfile("examples/attention_bwd.lua")("--lib")` it
returns { build = ..., fused_only = ... }: build(cfg) gives bwd(q, k, v, o, lse, do) -> dq,
dk, dv.
]]
local mgpu = require "mgpu"
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local amath = dofile(here .. "attention_math.lua")
local lib = {}
local BQ, BKV = amath.BQ, 64     -- 64-row blocks: dQ (or dK and dV), S and dP in 232 registers a thread
local xf = amath.xf
local xf32 = { mgpu.transforms.tiling{ 8, 32 }, mgpu.transforms.swizzle(128) }   -- f32 in 128-byte rows
local PROFILE_EVENTS = 32   -- the profiler's events a warpgroup stamps in a step, at most

-- delta = rowsum(dO * O) in f32, (B * H, S).  With `fused` instead the
-- fused kernel's f32 arrays, their rows seq rounded up to 8 (d.Sp), zeroed
-- past seq: the stats (B * H, 2, Sp), each row's lse (from lse, (B * H, S))
-- beside its delta, which the fused kernel's memory warpgroup brings in with
-- one TMA copy a step (lse itself is no TMA array unless S is a multiple of
-- 4: a TMA array's rows start on 16-byte boundaries), and the dQ
-- accumulator (B, Sp, H * D), zeroed here since this kernel visits every
-- row of every head (the fused kernel adds into it with TMA copies from
-- SMEM tiled 8 rows at a time, which need the array's rows in whole tiles).
local function delta_kernel(d, fused)
  local H, D = d.H, d.D
  local function place()   -- this block's (batch * head) row, its 64 rows and the head's columns
    local bh, t = mgpu.program_id(0), mgpu.program_id(1)
    return bh, bh / H, mgpu.ds(t * BQ, BQ), mgpu.ds((bh % H) * D, D)
  end
  local function rowsum(o, dout, b, rows, cols)
    return (o:at(b, rows, cols):load():astype("f32") * dout:at(b, rows, cols):load():astype("f32")):sum(1)
  end
  local grid = { d.B * H, math.ceil(d.S / BQ) }
  if not fused then
    return mgpu.kernel{
      name = "attention_bwd_delta", out_shape = mgpu.shape({ d.B * H, d.S }, "f32"),
      grid = grid, grid_names = { "bh", "t" },
      body = function(o, dout, delta)
        local bh, b, rows, cols = place()
        delta:at(bh, rows):store(rowsum(o, dout, b, rows, cols))
      end,
    }
  end
  return mgpu.kernel{
    name = "attention_bwd_stats_zero",
    out_shape = { mgpu.shape({ d.B * H, 2, d.Sp }, "f32"), mgpu.shape({ d.B, d.Sp, H * D }, "f32") },
    grid = grid, grid_names = { "bh", "t" },
    body = function(o, dout, lse, stats, dq_acc)
      local bh, b, rows, cols = place()
      stats:at(bh, 0, rows):store(lse:at(bh, rows):load())
      stats:at(bh, 1, rows):store(rowsum(o, dout, b, rows, cols))
      dq_acc:at(b, rows, cols):store(mgpu.zeros({ BQ, D }, "f32"))
    end,
  }
end

-- dQ = scale * the fused kernel's f32 accumulator, in the inputs' dtype.
local function dq_convert_kernel(c, d)
  local H, D, scale = d.H, d.D, c.scale or 1 / math.sqrt(d.D)
  return mgpu.kernel{
    name = "attention_bwd_dq_convert",
    out_shape = mgpu.shape({ d.B, d.S, H * D }, d.dtype),
    grid = { d.B * H, math.ceil(d.S / BQ) }, grid_names = { "bh", "t" },
    body = function(dq_acc, dq)
      local bh, t = mgpu.program_id(0), mgpu.program_id(1)
      local rows, cols = mgpu.ds(t * BQ, BQ), mgpu.ds((bh % H) * D, D)
      local b = bh / H
      dq:at(b, rows, cols):store((dq_acc:at(b, rows, cols):load() * scale):astype(d.dtype))
    end,
  }
end

-- The shared SMEM of a compute warpgroup pair: two 64-row slabs of two arrays.
local function slabs(d) return mgpu.SMEM({ 2, BQ, d.D }, d.dtype, { transforms = xf }) end
local function slots(d, depth, rows) return mgpu.SMEM({ depth, rows or BKV, d.D }, d.dtype, { transforms = xf }) end

-- The memory warpgroup of the dK, dV and fused kernels: the n query blocks of
-- rows rows each (head_block(j) -> q head, block) of Q and dO into the depth
-- slots s.q and s.dos, each slot filled once s.free says its readers are done;
-- with stats (the fused kernel's, H heads) the blocks' lse and delta too, into
-- s.stats.
local function stream_q_do(s, n, depth, head_block, rows, D, q, dout, b, stats, H)
  amath.memory_loop(n, depth, { { free = s.free, load = function(j, slot)
    mgpu.named_scope("load", function()
      local h, qb = head_block(j)
      local r, cols = mgpu.ds(qb * rows, rows), mgpu.ds(h * D, D)
      mgpu.copy_gmem_to_smem(q:at(b, r, cols), s.q:at(slot), s.ready:at(slot))
      mgpu.copy_gmem_to_smem(dout:at(b, r, cols), s.dos:at(slot), s.ready:at(slot))
      if stats then mgpu.copy_gmem_to_smem(stats:at(b * H + h, mgpu.all, r), s.stats:at(slot), s.ready:at(slot)) end
    end)
  end } })
end

-- The key block of a dK/dV or fused block (grid: batch * kv head, 128-key
-- block) and its steps of `rows` query rows: b, the kv head hk, the
-- warpgroup, the first key row k0, the step count n over the group's q
-- heads, and head_block(j) -> (q head, query step) of step j.  Causal
-- blocks start at the diagonal: earlier query steps see none of these keys.
local function key_block(c, d, rows)
  local group = d.H / d.Hkv
  local bhk, kt = mgpu.program_id(0), mgpu.program_id(1)
  local b, hk = bhk / d.Hkv, bhk % d.Hkv
  local wg = mgpu.axis_index("wg")
  local k0 = kt * (2 * BKV)
  local first = c.causal and k0 / rows or 0
  local per_head = math.ceil(d.S / rows) - first
  local function head_block(j)   -- (j traced, or a Lua integer)
    if type(j) == "number" then j = mgpu.const(j, "i32") end
    return hk * group + j / per_head, first + j % per_head
  end
  return b, hk, wg, k0, per_head * group, head_block
end

-- A compute warpgroup's dK (scaled) and dV out in dtype, at (b, rows, cols)
-- of dk and dv, through its free K and V slabs, until the stores have landed.
local function store_dk_dv(kslab, vslab, dk_acc, dv_acc, scale, dtype, dk, dv, b, rows, cols)
  kslab:store((dk_acc:load() * scale):astype(dtype))
  vslab:store(dv_acc:load():astype(dtype))
  mgpu.commit_smem()
  mgpu.copy_smem_to_gmem(kslab, dk:at(b, rows, cols))
  mgpu.copy_smem_to_gmem(vslab, dv:at(b, rows, cols))
  mgpu.wait_smem_to_gmem(0)
end

-- dQ: per 128 query rows of a head, over the KV blocks up to the diagonal.
local function dq_kernel(c, d)
  local S, H, D, dtype, depth = d.S, d.H, d.D, d.dtype, c.depth
  local group, scale = H / d.Hkv, c.scale or 1 / math.sqrt(D)
  local row_l = mgpu.Layout.WGMMA:reduce(1)
  return mgpu.kernel{
    name = c.causal and "attention_bwd_dq_causal" or "attention_bwd_dq",
    out_shape = mgpu.shape({ d.B, S, H * D }, dtype),
    grid = { d.B * H, math.ceil(S / (2 * BQ)) }, grid_names = { "bh", "qt" },
    num_threads = 3, thread_name = "wg",
    compiler_params = mgpu.CompilerParams{ approx_math = c.approx_math },
    body = function(q, k, v, dout, lse, delta, dq)
      local bh, qt = mgpu.program_id(0), mgpu.program_id(1)
      local b, h = bh / H, bh % H
      local hk = h / group
      local wg = mgpu.axis_index("wg")
      local q0 = qt * (2 * BQ)
      local nkv = amath.kv_blocks(c, S, BKV, q0, 2 * BQ)
      local function kv_view(x, j) return x:at(b, mgpu.ds(j * BKV, BKV), mgpu.ds(hk * D, D)) end
      mgpu.run_scoped(amath.kv_barriers({ qs = slabs(d), dos = slabs(d), k = slots(d, depth), v = slots(d, depth),
                                          qbar = mgpu.Barrier{ num_barriers = 2, num_arrivals = 2 } }, depth), function(s)
        local function memory() amath.kv_memory(nkv, depth, s, k, v, kv_view) end
        local function compute()
          mgpu.set_max_registers(amath.COMPUTE_REGISTERS, { action = "increase" })
          local row0 = q0 + wg * BQ
          local rows, cols = mgpu.ds(row0, BQ), mgpu.ds(h * D, D)
          mgpu.copy_gmem_to_smem(q:at(b, rows, cols), s.qs:at(wg), s.qbar:at(wg))
          mgpu.copy_gmem_to_smem(dout:at(b, rows, cols), s.dos:at(wg), s.qbar:at(wg))
          local lse_r = lse:at(bh, rows):load{ layout = row_l }
          local delta_r = delta:at(bh, rows):load{ layout = row_l }
          mgpu.barrier_wait(s.qbar:at(wg))
          mgpu.run_scoped(function(acc)
            mgpu.fori(0, nkv, function(j)
              local slot = j % depth
              mgpu.barrier_wait(s.kbar:at(slot))
              mgpu.barrier_wait(s.vbar:at(slot))
              local sc, dp = mgpu.run_scoped(function(sacc, dpacc)
                mgpu.wgmma(sacc, s.qs:at(wg), mgpu.transpose_ref(s.k:at(slot), { 1, 0 }))
                mgpu.wgmma(dpacc, s.dos:at(wg), mgpu.transpose_ref(s.v:at(slot), { 1, 0 }))
                return sacc:load(), dpacc:load()
              end, mgpu.ACC({ BQ, BKV }, "f32"), mgpu.ACC({ BQ, BKV }, "f32"))
              mgpu.barrier_arrive(s.vfree:at(slot))
              sc = amath.mask(c, S, sc * (scale * amath.LOG2E), { rows0 = row0, cols0 = j * BKV })
              local p = mgpu.exp2(sc - lse_r:broadcast_in_dim({ BQ, BKV }, { 0 }))
              local ds = p * (dp - delta_r:broadcast_in_dim({ BQ, BKV }, { 0 }))
              mgpu.wgmma(acc, ds:astype(dtype), s.k:at(slot))
              mgpu.wgmma_wait(0)
              mgpu.barrier_arrive(s.kfree:at(slot))
            end)
            s.qs:at(wg):store((acc:load() * scale):astype(dtype))   -- Q's slab is free: its wgmmas are done
            mgpu.commit_smem()
            mgpu.copy_smem_to_gmem(s.qs:at(wg), dq:at(b, rows, cols))
            mgpu.wait_smem_to_gmem(0)
          end, mgpu.ACC({ BQ, D }, "f32"))
        end
        mgpu.cond(mgpu.eq(wg, 2), memory, compute)
      end)
    end,
  }
end

-- dK and dV: per 128 key rows of a kv head, over the query blocks of its
-- group's q heads from the diagonal on.
local function dkv_kernel(c, d)
  local S, H, D, dtype, depth = d.S, d.H, d.D, d.dtype, c.depth
  local scale = c.scale or 1 / math.sqrt(D)
  local col_l = mgpu.Layout.WGMMA:reduce(0)
  return mgpu.kernel{
    name = c.causal and "attention_bwd_dkv_causal" or "attention_bwd_dkv",
    out_shape = { mgpu.shape({ d.B, S, d.Hkv * D }, dtype), mgpu.shape({ d.B, S, d.Hkv * D }, dtype) },
    grid = { d.B * d.Hkv, math.ceil(S / (2 * BKV)) }, grid_names = { "bh", "kt" },
    num_threads = 3, thread_name = "wg",
    compiler_params = mgpu.CompilerParams{ approx_math = c.approx_math },
    body = function(q, k, v, dout, lse, delta, dk, dv)
      local b, hk, wg, k0, n, head_block = key_block(c, d, BQ)
      mgpu.run_scoped({ ks = slabs(d), vs = slabs(d), q = slots(d, depth), dos = slots(d, depth),
                        kvbar = mgpu.Barrier{ num_barriers = 2, num_arrivals = 2 },
                        ready = mgpu.Barrier{ num_barriers = depth, num_arrivals = 2 },
                        free = mgpu.Barrier{ num_barriers = depth, num_arrivals = 2 } }, function(s)
        local function memory() stream_q_do(s, n, depth, head_block, BQ, D, q, dout, b) end
        local function compute()
          mgpu.set_max_registers(amath.COMPUTE_REGISTERS, { action = "increase" })
          local row0 = k0 + wg * BKV
          local rows, cols = mgpu.ds(row0, BKV), mgpu.ds(hk * D, D)
          mgpu.copy_gmem_to_smem(k:at(b, rows, cols), s.ks:at(wg), s.kvbar:at(wg))
          mgpu.copy_gmem_to_smem(v:at(b, rows, cols), s.vs:at(wg), s.kvbar:at(wg))
          mgpu.barrier_wait(s.kvbar:at(wg))
          mgpu.run_scoped(function(dk_acc, dv_acc)
            mgpu.fori(0, n, function(j)
              local slot = j % depth
              local h, qb = head_block(j)
              local qrows = mgpu.ds(qb * BQ, BQ)
              local lse_c = lse:at(b * H + h, qrows):load{ layout = col_l }
              local delta_c = delta:at(b * H + h, qrows):load{ layout = col_l }
              mgpu.barrier_wait(s.ready:at(slot))
              local st = mgpu.run_scoped(function(sacc)
                mgpu.wgmma(sacc, s.ks:at(wg), mgpu.transpose_ref(s.q:at(slot), { 1, 0 }))
                return sacc:load()
              end, mgpu.ACC({ BKV, BQ }, "f32"))
              st = amath.mask(c, S, st * (scale * amath.LOG2E), { rows0 = row0, cols0 = qb * BQ, keys_in_rows = true,
                                                                   queries = true })
              local pt = mgpu.exp2(st - lse_c:broadcast_in_dim({ BKV, BQ }, { 1 }))
              mgpu.wgmma(dv_acc, pt:astype(dtype), s.dos:at(slot))   -- in flight while dP^T is computed
              local dpt = mgpu.run_scoped(function(dpacc)
                mgpu.wgmma(dpacc, s.vs:at(wg), mgpu.transpose_ref(s.dos:at(slot), { 1, 0 }))
                return dpacc:load()
              end, mgpu.ACC({ BKV, BQ }, "f32"))
              local dst = pt * (dpt - delta_c:broadcast_in_dim({ BKV, BQ }, { 1 }))
              mgpu.wgmma(dk_acc, dst:astype(dtype), s.q:at(slot))
              mgpu.wgmma_wait(0)
              mgpu.barrier_arrive(s.free:at(slot))
            end)
            -- K's and V's slabs are free: every wgmma reading them is done
            store_dk_dv(s.ks:at(wg), s.vs:at(wg), dk_acc, dv_acc, scale, dtype, dk, dv, b, rows, cols)
          end, mgpu.ACC({ BKV, D }, "f32"), mgpu.ACC({ BKV, D }, "f32"))
        end
        mgpu.cond(mgpu.eq(wg, 2), memory, compute)
      end)
    end,
  }
end

-- The fused kernel's SMEM in bytes, as fused_kernel allocates it: K and V
-- (128 rows each), depth slots of Q and dO (bq rows each) with their lse
-- and delta, dS^T of two steps and a 64 x 64 f32 dQ chunk a warpgroup.
local function fused_smem(D, bq, depth)
  return 2 * (2 * BKV * D * 2) + depth * (2 * bq * D * 2 + 2 * bq * 4) + 2 * (2 * BKV * bq * 2) + 2 * (64 * 64 * 4)
end

-- dK, dV and the dQ accumulator in one pass: per 128 key rows of a kv
-- head as dkv_kernel, in steps of bq (64 or 128) query rows, plus each
-- step's dQ share dS K (over these 128 keys) added into dq_acc.  Both
-- warpgroups' dS^T go to SMEM, and the bq x head_dim share is cut into
-- 64 x 64 chunks, chunk i of step j computed by warpgroup (j + i) % 2 (one
-- each with bq = 64 and head_dim 128 or bq = 128 and head_dim 64,
-- alternate steps with both 64): A is the chunk's rows of dS, its columns
-- of dS^T's slot seen transposed, B the chunk's columns of all 128 K rows.
-- (Split by rows, a warpgroup's chunk is one M = 64, N = 64 wgmma reading
-- half of dS^T; split by columns it would be 128 x 32, two M = 64 wgmmas
-- reading all of it, for the same 32 registers a thread.)
-- A step's order keeps the register peak at dK, dV, S^T and dP^T (192 a
-- thread with bq = 128 and head_dim 64, or bq = 64 and head_dim 128): the
-- accumulators of S^T and dP^T start from -lse / (scale log2(e)) and
-- -delta, both wgmmas are issued at once and the exponentials run while
-- dP^T's is on the tensor cores, then dV's wgmma is issued.  (dV's wgmma in
-- flight during dP^T's instead, with P^T in f32 and 16 bits, needs 224
-- there at bq = 128 before lse, delta and addresses: ptxas spills.)
-- Each step stores its dS^T, then computes the previous step's dQ chunks:
-- a warpgroup waits only for the other's previous dS^T (and their reads of
-- the slot it refills), not meets it every step, so the two need not run
-- in lockstep, and warpgroup 1 starts once warpgroup 0's first S^T is in,
-- so that one's exponentials run during the other's wgmmas.  dK's wgmma is
-- queued behind the dQ chunk's and runs while the chunk is stored and
-- reduce-added.
local function fused_kernel(c, d, bq, opt)
  local S, H, D, dtype, depth = d.S, d.H, d.D, d.dtype, c.depth
  local scale = c.scale or 1 / math.sqrt(D)
  local log2s = scale * amath.LOG2E
  local col_l = mgpu.Layout.WGMMA:reduce(0)
  local chunks = D / 64
  local dkv = mgpu.shape({ d.B, S, d.Hkv * D }, dtype)
  local scope = mgpu.named_scope
  return mgpu.kernel{
    name = (c.causal and "attention_bwd_fused_causal" or "attention_bwd_fused") .. (bq == BQ and "" or "_bq" .. bq),
    out_shape = { dkv, dkv, mgpu.shape({ d.B, d.Sp, H * D }, "f32") },
    grid = { d.B * d.Hkv, math.ceil(S / (2 * BKV)) }, grid_names = { "bh", "kt" },
    num_threads = 3, thread_name = "wg",
    compiler_params = mgpu.CompilerParams{
      approx_math = c.approx_math, profile_dir = opt.profile,
      profile_space = opt.profile and PROFILE_EVENTS * math.ceil(S / bq) * H / d.Hkv + 16,   -- (every step of a block)
    },
    body = function(q, k, v, dout, stats, dk, dv, dq_acc)
      local b, hk, wg, k0, n, head_block = key_block(c, d, bq)
      mgpu.run_scoped({ ks = mgpu.SMEM({ 2 * BKV, D }, dtype, { transforms = xf }), vs = slabs(d),
                        q = slots(d, depth, bq), dos = slots(d, depth, bq),
                        stats = mgpu.SMEM({ depth, 2, bq }, "f32"),   -- lse and delta of each slot's rows
                        dst = mgpu.SMEM({ 2, 2 * BKV, bq }, dtype, { transforms = xf }),   -- dS^T, two steps
                        dqs = mgpu.SMEM({ 2, 64, 64 }, "f32", { transforms = xf32 }),   -- a dQ chunk per warpgroup
                        kvbar = mgpu.Barrier{ num_barriers = 2, num_arrivals = 2 },
                        ready = mgpu.Barrier{ num_barriers = depth, num_arrivals = 3 },
                        free = mgpu.Barrier{ num_barriers = depth, num_arrivals = 2 },
                        dsbar = mgpu.Barrier{ num_barriers = 2, num_arrivals = 2 },
                        kdone = mgpu.Barrier{ num_arrivals = 2 },
                        go = mgpu.Barrier{ num_arrivals = 1 } }, function(s)
        local function memory() stream_q_do(s, n, depth, head_block, bq, D, q, dout, b, stats, H) end
        local function compute()
          mgpu.set_max_registers(amath.COMPUTE_REGISTERS, { action = "increase" })
          local row0 = k0 + wg * BKV
          local rows, cols = mgpu.ds(row0, BKV), mgpu.ds(hk * D, D)
          local my_k = s.ks:at(mgpu.ds(wg * BKV, BKV))
          scope("kv_load", function()
            mgpu.copy_gmem_to_smem(k:at(b, rows, cols), my_k, s.kvbar:at(wg))
            mgpu.copy_gmem_to_smem(v:at(b, rows, cols), s.vs:at(wg), s.kvbar:at(wg))
            mgpu.barrier_wait(s.kvbar:at(0))   -- dQ's wgmmas read both warpgroups' K rows
            mgpu.barrier_wait(s.kvbar:at(1))
          end)
          mgpu.when(mgpu.eq(wg, 1), function() scope("stagger", mgpu.barrier_wait, s.go) end)
          -- this warpgroup's chunks of step jj's dQ share (dS^T in slot dslot), each added into dq_acc;
          -- issue_dk (the next step's dK wgmma) is queued behind the chunk's, or issued alone by the
          -- warpgroup without a chunk
          local function dq_chunks(jj, dslot, issue_dk)
            local hh, qbb = head_block(jj)
            for r = 0, bq / 64 - 1 do
              for ch = 0, chunks - 1 do
                mgpu.when(mgpu.eq((jj + r * chunks + ch) % 2, wg), function()
                  local part = scope("dq", mgpu.run_scoped, function(dqacc)
                    mgpu.wgmma(dqacc, mgpu.transpose_ref(s.dst:at(dslot, mgpu.all, mgpu.ds(r * 64, 64)), { 1, 0 }),
                               s.ks:at(mgpu.all, mgpu.ds(ch * 64, 64)))
                    if issue_dk then issue_dk() end   -- queued behind: in flight while the chunk is stored
                    return dqacc:load()
                  end, mgpu.ACC({ 64, 64 }, "f32"))
                  scope("dq_free", mgpu.wait_smem_to_gmem, 0, { wait_read_only = true })   -- the last chunk has left dqs
                  scope("dq_store", function()
                    s.dqs:at(wg):store(part)
                    mgpu.commit_smem()
                    mgpu.copy_smem_to_gmem(s.dqs:at(wg), dq_acc:at(b, mgpu.ds(qbb * bq + r * 64, 64),
                                                                   mgpu.ds(hh * D + ch * 64, 64)),
                                           { reduction_op = "add" })
                  end)
                end)
              end
            end
            if issue_dk and bq * chunks == 64 then   -- one chunk a step: the other warpgroup's
              mgpu.when(mgpu.ne(jj % 2, wg), issue_dk)
            end
          end
          mgpu.run_scoped(function(dk_acc, dv_acc)
            mgpu.fori(0, n, function(j)
              local slot, dslot = j % depth, j % 2
              local _, qb = head_block(j)
              scope("wait_ready", mgpu.barrier_wait, s.ready:at(slot))
              local function stat(i)   -- row i of the slot's stats (0: lse, 1: delta), along S^T's columns
                return s.stats:at(slot, i):load{ layout = col_l }:broadcast_in_dim({ BKV, bq }, { 1 })
              end
              local s0, dp0 = scope("init", function() return stat(0) * (-1 / log2s), -stat(1) end)
              local pt, dpt = mgpu.run_scoped(function(sacc, dpacc)
                scope("sdp_issue", function()
                  mgpu.wgmma(sacc, my_k, mgpu.transpose_ref(s.q:at(slot), { 1, 0 }))
                  mgpu.wgmma(dpacc, s.vs:at(wg), mgpu.transpose_ref(s.dos:at(slot), { 1, 0 }))
                end)
                local st = scope("s_wait", function() return sacc:load() end)
                mgpu.when(mgpu.bitwise_and(mgpu.eq(j, 0), mgpu.eq(wg, 0)), function() mgpu.barrier_arrive(s.go) end)
                return scope("exp", function()   -- P^T, masked, while dP^T's wgmma runs
                         return mgpu.exp2(amath.mask(c, S, st * log2s, { rows0 = row0, cols0 = qb * bq,
                                                                         keys_in_rows = true, queries = true }))
                       end),
                       scope("dp_wait", function() return dpacc:load() end)
              end, mgpu.ACC.init(s0), mgpu.ACC.init(dp0))
              local dst = scope("ds", function()
                local x = (pt * dpt):astype(dtype)
                mgpu.wgmma(dv_acc, pt:astype(dtype), s.dos:at(slot))
                return x
              end)
              local function issue_dk() mgpu.wgmma(dk_acc, dst, s.q:at(slot)) end
              -- the last step's dQ: its dS^T is in, and the slot this step fills has been read
              mgpu.when(mgpu.gt(j, 0), function() scope("ds_bar", mgpu.barrier_wait, s.dsbar:at((j + 1) % 2)) end)
              scope("ds_store", function()
                s.dst:at(dslot, mgpu.ds(wg * BKV, BKV)):store(dst)   -- while dV's wgmma runs
                mgpu.commit_smem()
              end)
              mgpu.cond(mgpu.gt(j, 0), function() dq_chunks(j - 1, (j + 1) % 2, issue_dk) end, issue_dk)
              mgpu.barrier_arrive(s.dsbar:at(dslot))
              scope("tail", function()
                mgpu.wgmma_wait(0)   -- dK's wgmma has read Q's slot
                mgpu.barrier_arrive(s.free:at(slot))
              end)
            end)
            scope("ds_bar", mgpu.barrier_wait, s.dsbar:at((n - 1) % 2))   -- the last step's dQ
            dq_chunks(n - 1, (n - 1) % 2)
            scope("epilogue", function()
              mgpu.barrier_arrive(s.kdone)   -- K is free once neither warpgroup's dQ wgmmas read it
              mgpu.barrier_wait(s.kdone)
              store_dk_dv(my_k, s.vs:at(wg), dk_acc, dv_acc, scale, dtype, dk, dv, b, rows, cols)
            end)
          end, mgpu.ACC({ BKV, D }, "f32"), mgpu.ACC({ BKV, D }, "f32"))
        end
        mgpu.cond(mgpu.eq(wg, 2), memory, compute)
      end)
    end,
  }
end

--- The backward for cfg (causal, scale, approx_math, depth, fused, bq):
--- bwd(q, k, v, o, lse, do) -> dq, dk, dv, with lse (B, H, S) f32 from the
--- forward; bwd.call_into(dq, dk, dv, q, k, v, o, lse, do) writes into
--- existing arrays.  fused (default true; also 0 or 1) picks the one-pass
--- kernel with dQ added up in f32, else the deterministic three kernels;
--- bq (64, the default, or 128 with head_dim 64) is the fused kernel's
--- query rows a step; profile (a directory) traces the fused kernel.
function lib.build(cfg)
  local fused, bq, opt = true, BQ, {}
  if type(cfg) == "table" then
    local f = cfg.fused
    if f ~= nil and f ~= true and f ~= false and f ~= 0 and f ~= 1 then
      error("attention_bwd: fused must be a boolean, 0 or 1, got " .. tostring(f), 2)
    end
    fused = f == nil or f == true or f == 1
    if cfg.bq ~= nil and cfg.bq ~= 64 and cfg.bq ~= 128 then
      error("attention_bwd: bq (query rows a step of the fused kernel) must be 64 or 128, got " .. tostring(cfg.bq), 2)
    end
    if cfg.bq == 128 and not fused then
      error("attention_bwd: bq = 128 needs the fused kernel (the three kernels step 64 rows), got fused = "
            .. tostring(f), 2)
    end
    bq = cfg.bq or BQ
    if cfg.profile ~= nil then
      if type(cfg.profile) ~= "string" then
        error("attention_bwd: profile must be a directory name, got " .. tostring(cfg.profile), 2)
      end
      if not fused then error("attention_bwd: profile needs the fused kernel, got fused = " .. tostring(f), 2) end
      opt.profile = cfg.profile
    end
    local rest = {}
    for key, val in pairs(cfg) do
      if key ~= "fused" and key ~= "bq" and key ~= "profile" then rest[key] = val end
    end
    cfg = rest
  end
  local c, err = amath.config(cfg, "attention_bwd")
  if not c then error(err, 2) end
  if c.block_kv ~= nil or c.pingpong ~= nil or c.wgs ~= nil or c.overlap ~= nil or c.lse then
    error("attention_bwd: block_kv, pingpong, wgs, overlap and lse are forward options", 2)
  end
  local cache = {}
  local function prepare(q, k, v, o, lse, dout)
    local B, S, H, Hkv, D = amath.dims(q, k, v, "attention_bwd", { 64, 128 })
    if not B then error(S, 3) end
    for i, x in ipairs({ o, dout }) do
      if type(x) ~= "table" or x.shape == nil or x.dtype ~= q.dtype or table.concat(x.shape, ",") ~= table.concat(q.shape, ",") then
        error(string.format("attention_bwd: %s must be an array like q, %s[%s]", i == 1 and "o" or "do", q.dtype,
                            table.concat(q.shape, ",")), 3)
      end
    end
    if type(lse) ~= "table" or lse.dtype ~= "f32" or table.concat(lse.shape or {}, ",") ~= table.concat({ B, H, S }, ",") then
      error(string.format("attention_bwd: lse must be f32[%d,%d,%d] (the forward's, lse = true)", B, H, S), 3)
    end
    if bq > BQ and D > 64 then
      error(string.format("attention_bwd: bq = %d needs head_dim 64, got %d (dK and dV, 64 x head_dim, with S^T and "
                          .. "dP^T, 64 x bq, all f32, would take %d of the %d registers a thread has)", bq, D, D + bq,
                          amath.COMPUTE_REGISTERS), 3)
    end
    if fused and fused_smem(D, bq, c.depth) > 226 * 1024 then   -- (and about 1 KiB of barriers)
      error(string.format("attention_bwd: depth = %d is too deep for the fused kernel with head_dim %d and bq = %d: "
                          .. "K, V, dS^T, the dQ chunks and %d slots of Q, dO, lse and delta take %.1f KiB of SMEM, "
                          .. "a block has 227 KiB", c.depth, D, bq, c.depth, fused_smem(D, bq, c.depth) / 1024), 3)
    end
    if bq > S then
      error(string.format("attention_bwd: bq = %d needs seq >= %d (Q and dO move in boxes of bq rows), got seq = %d",
                          bq, bq, S), 3)
    end
    if D > 64 and S % 8 ~= 0 then
      error(string.format("attention_bwd: seq = %d must be a multiple of 8 with head_dim %d (TMA boxes of several "
                          .. "64-column tiles cover rows 8 at a time)", S, D), 3)
    end
    local d = { B = B, S = S, Sp = 8 * math.ceil(S / 8), H = H, Hkv = Hkv, D = D, dtype = q.dtype }
    local key = table.concat({ B, S, H, Hkv, D, q.dtype }, ",")
    if not cache[key] then
      cache[key] = fused and { delta = delta_kernel(d, true), fused = fused_kernel(c, d, bq, opt),
                               convert = dq_convert_kernel(c, d) }
                   or { delta = delta_kernel(d, false), dq = dq_kernel(c, d), dkv = dkv_kernel(c, d) }
    end
    local function flat(x) return x:reshape({ B, S, x.shape[3] * D }) end
    return cache[key], flat, lse:reshape({ B * H, S })
  end
  -- the kernels into flat views of dq, dk and dv (B, S, heads * D)
  local function run(ks, fq, fk, fv, fo, fdo, lse2, dq, dk, dv)
    if fused then
      local stats, dq_acc = ks.delta(fo, fdo, lse2)
      ks.fused:call_into({ dk, dv, dq_acc }, fq, fk, fv, fdo, stats)
      ks.convert:call_into(dq, dq_acc)
    else
      local delta = ks.delta(fo, fdo)
      ks.dq:call_into(dq, fq, fk, fv, fdo, lse2, delta)
      ks.dkv:call_into({ dk, dv }, fq, fk, fv, fdo, lse2, delta)
    end
  end
  local bwd = {}
  function bwd.call_into(dq, dk, dv, q, k, v, o, lse, dout)
    local ks, flat, lse2 = prepare(q, k, v, o, lse, dout)
    run(ks, flat(q), flat(k), flat(v), flat(o), flat(dout), lse2, flat(dq), flat(dk), flat(dv))
    return dq, dk, dv
  end
  return setmetatable(bwd, { __call = function(_, q, k, v, o, lse, dout)
    local ks, flat, lse2 = prepare(q, k, v, o, lse, dout)
    local dq, dk, dv = mgpu.empty(q.shape, q.dtype), mgpu.empty(k.shape, k.dtype), mgpu.empty(v.shape, v.dtype)
    run(ks, flat(q), flat(k), flat(v), flat(o), flat(dout), lse2, flat(dq), flat(dk), flat(dv))
    return dq, dk, dv
  end })
end

--- Whether a cfg key is the fused kernel's alone (profile).
function lib.fused_only(key) return key == "profile" end

local args = { ... }
if args[1] == "--lib" then return lib end
dofile(here .. "attention_check.lua").backward_script(lib, loadfile(here .. "attention.lua")("--lib"), args)
