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
  memory warpgroup (set_max_registers 40; the compute ones take 232, or 32
  and 160 with three) streams K and V in blocks of block_kv rows (default
  192, 128 with overlap, 64 for head_dim 256) through `depth` SMEM slots
  with TMA.  K and V have their own ready and consumed barriers: a K slot is
  refilled as soon as both compute warpgroups have S = Q K^T, while P V
  may still read V;
- each compute warpgroup loads its Q slab once, then per KV block:
  S = Q K^T with wgmma (K seen through transpose_ref), the causal / ragged
  mask on the blocks that need one, online softmax in base 2 (scale folded
  with log2(e) into one multiply-add per score, row max and sum carried in
  the WGMMA:reduce(1) layout), O
  rescaled in its accumulator, P cast to 16 bits in registers and fed to
  wgmma as the A operand of P V (examples/attention_math.lua, shared with
  attention_pipeline.lua, which is this kernel on
  emit_pipeline_warp_specialized);
- ping-pong (pingpong=1, the default; 0 lets them run freely): the
  compute warpgroups take turns at the tensor cores, so that one's softmax
  overlaps the others' matmuls: two meet with Pallas' placement of the
  meetings (faster than free-running on the H100), three pass a token
  round a ring (FlashAttention-3's scheduler
  barriers);
- overlap (the default at head_dim 128, with pingpong=0 and 128-row KV
  blocks): FlashAttention-3's intra-warpgroup overlap, where P V of block
  j - 1 is issued with S = Q K^T of block j and runs during the softmax
  of block j (reading S waits only for its own wgmma), so S, the previous
  P and O are live at once (the block size is checked against the
  registers);
- at the end O / l goes through the Q slab in SMEM and leaves by TMA (rows
  past seq are clipped), the log-sum-exp from registers.

head_dim 256 takes block_kv = 64: O alone is 128 registers a thread there,
and a 128-wide S and its P on top leave the 232 a compute warpgroup has
spilling.  CompilerParams.approx_math follows approx (default 1: the
hardware exp2 and log2).

  mgpu examples/attention.lua [B] [S] [H] [D] [causal] [dtype] [key=value ...]
    keys: hkv (kv heads) scale lse (0|1) approx (0|1) block_kv (64..256, multiple of 16) wgs (2|3)
          depth (slots, >= 2) pingpong (0|1) overlap (0|1) reps
  (2 x 4096 x 16 x 128 on a GPU; 1 x 256 x 2 x 64 interpreted)

TFLOP/s = 4 B H S^2 D / time, half that when causal.  Loaded with
`loadfile("examples/attention.lua")("--lib")` it returns { build = ... }:
build(cfg) with cfg fields causal, scale, lse, approx_math, block_kv, wgs,
depth, pingpong, overlap.
]]
local mgpu = require "mgpu"
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local amath = dofile(here .. "attention_math.lua")
local lib = {}

local function kernel_for(c, d)
  local S, H, D, dtype, bkv, depth = d.S, d.H, d.D, d.dtype, d.bkv, c.depth
  local BQ, xf, group = amath.BQ, amath.xf, d.H / d.Hkv
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
          if c.overlap then
            local function at(x) return function(j) return x:at(j % depth) end end
            local function arrive(x) return function(j) mgpu.barrier_arrive(x:at(j % depth)) end end
            local function wait(x) return function(j) mgpu.barrier_wait(x:at(j % depth)) end end
            m, l = amath.fwd_overlap(ctx, nkv, at(s.k), at(s.v), { k_ready = wait(s.kbar), k_done = arrive(s.kfree),
                                                                   v_ready = wait(s.vbar), v_done = arrive(s.vfree) })
          else
            local m0, l0 = amath.softmax_init()
            offset()
            mgpu.when(mgpu.lt(0, nkv), function() mgpu.barrier_wait(s.kbar:at(0)) end)
            m, l = mgpu.fori(0, nkv, function(j, m, l)
              local slot = j % depth
              return amath.fwd_step(ctx, j, s.k:at(slot), s.v:at(slot), m, l, {
                k_done = function() mgpu.barrier_arrive(s.kfree:at(slot)) end,
                v_ready = function() mgpu.barrier_wait(s.vbar:at(slot)) end,
                v_done = function() mgpu.barrier_arrive(s.vfree:at(slot)) end,
                next_k = function()   -- the next block's K, waited for while P V runs
                  mgpu.when(mgpu.lt(j + 1, nkv), function() mgpu.barrier_wait(s.kbar:at((j + 1) % depth)) end)
                end,
              })
            end, m0, l0)
            balance()
          end
          amath.fwd_finish(ctx, m, l, o:at(b, rows, mgpu.ds(h * D, D)), lse and lse:at(bh, rows))
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
