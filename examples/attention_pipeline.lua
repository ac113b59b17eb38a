--[[
The forward attention of examples/attention.lua written on
emit_pipeline_warp_specialized, as Pallas' attention_with_pipeline_emitter:
the pipeline's memory warpgroup streams K and V (BlockSpecs over the
(batch, seq, kv_heads * head_dim) views), manual_consumed_barriers hand the
body one consumed barrier per input so that K's slot is released once
S = Q K^T is done and V's once P V is, and compute_context loads the Q
slab, holds the O accumulator and writes O (and the log-sum-exp).  The
per-block steps (S = Q K^T, the online softmax, O += P V) are
examples/attention.lua's, the same as the hand-written kernel's; so are
the options (causal, GQA, scale, lse, ragged seq, head_dim 64/128/256,
approx_math, ping-pong, two or three compute warpgroups).

  mgpu examples/attention_pipeline.lua [B] [S] [H] [D] [causal] [dtype] [key=value ...]
    keys: as examples/attention.lua
]]
local mgpu = require "mgpu"
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local amath = dofile(here .. "attention_math.lua")
local attn = assert(loadfile(here .. "attention.lua"))("--lib")
local lib = {}

local function kernel_for(c, d)
  local S, H, D, dtype, bkv = d.S, d.H, d.D, d.dtype, d.bkv
  local BQ, xf, group = amath.BQ, amath.xf, d.H / d.Hkv
  local function body(q, k, v, o, lse)
    local bh, qt = mgpu.program_id(0), mgpu.program_id(1)
    local b, h = bh / H, bh % H
    local hk = h / group
    local wg = mgpu.axis_index("wg")
    local q0 = qt * (c.wgs * BQ)
    local row0 = q0 + wg * BQ
    local rows, cols = mgpu.ds(row0, BQ), mgpu.ds(h * D, D)
    mgpu.run_scoped({ qo = mgpu.SMEM({ c.wgs, BQ, D }, dtype, { transforms = xf }),
                      qbar = mgpu.Barrier{ num_barriers = c.wgs }, sched = amath.sched_barrier(c) }, function(s)
      local pp, offset, balance = amath.pingpong(c, s.sched, wg)
      local ctx = { c = c, S = S, D = D, bkv = bkv, dtype = dtype, scale2 = (c.scale or 1 / math.sqrt(D)) * amath.LOG2E,
                    q = s.qo:at(wg), row0 = row0, pp = pp }
      local function step(idx, k_smem, v_smem, k_consumed, v_consumed, carry)   -- (K and V have landed)
        local sc = attn.scores(ctx, k_smem, pp.meet)           -- S = Q K^T
        mgpu.barrier_arrive(k_consumed)
        local m, l, alpha, p = attn.online_softmax(ctx, idx[1], sc, carry.m, carry.l)
        attn.rescale(ctx, alpha)
        pp.arrive()
        pp.wait()
        mgpu.wgmma(ctx.acc, p, v_smem)                          -- O += P V
        mgpu.wgmma_wait(0)
        mgpu.barrier_arrive(v_consumed)
        return { m = m, l = l }
      end
      local function compute(run)
        mgpu.copy_gmem_to_smem(q:at(b, rows, cols), ctx.q, s.qbar:at(wg))
        mgpu.barrier_wait(s.qbar:at(wg))
        mgpu.run_scoped(function(acc)
          ctx.acc = acc
          local m0, l0 = attn.softmax_init()
          offset()
          local fin = run({ m = m0, l = l0 })
          balance()
          attn.finish(ctx, fin.m, fin.l, o:at(b, rows, cols), lse and lse:at(bh, rows))
        end, mgpu.ACC({ BQ, D }, "f32"))
      end
      local kv_spec = mgpu.BlockSpec{ { mgpu.squeezed, bkv, D }, function(j) return b, j, hk end, transforms = xf }
      mgpu.emit_pipeline_warp_specialized(step, {
        grid = { amath.kv_blocks(c, S, bkv, q0, c.wgs * BQ) }, memory_registers = (amath.registers(c)),
        num_compute_wgs = c.wgs, wg_axis = "wg", max_concurrent_steps = c.depth, manual_consumed_barriers = true,
        compute_context = compute, in_specs = { kv_spec, kv_spec },
      })(k, v)
    end)
  end
  return amath.kernel(c, d, "attention_pipeline", body)
end

--- The attention for cfg, as examples/attention.lua's build.
function lib.build(cfg)
  local c, err = amath.config(cfg, "attention_pipeline")
  if not c then error(err, 2) end
  if c.overlap then
    error("attention_pipeline: overlap issues P V of a block during the next block's step, and a pipeline step sees "
          .. "only its own slots and barriers; examples/attention.lua has it", 2)
  end
  return amath.forward(c, kernel_for, "attention_pipeline")
end

local args = { ... }
if args[1] == "--lib" then return lib end
dofile(here .. "attention_check.lua").forward_script(lib, args, "attention_pipeline")
