--[[
What the attention examples share (examples/attention.lua,
attention_pipeline.lua and attention_bwd.lua load it with dofile): options
and shape checks, the KV block counts and masks of causal and ragged
sequences, the memory warpgroup's loop and the K and V slots' barriers,
the compute warpgroups' ping-pong turns, and the callable forward over a
kernel.  The forward's per-block steps are examples/attention.lua's.

Arrays are (batch, seq, heads, head_dim); the kernels see them as
(batch, seq, heads * head_dim), so a head's rows are one TMA box whose
rows past seq are zero-filled on loads and clipped on stores.
]]
local mgpu = require "mgpu"
local T = mgpu.transforms

local M = {}
M.BQ = 64                                        -- query rows per compute warpgroup
M.LOG2E = 1.4426950408889634
M.xf = { T.tiling{ 8, 64 }, T.swizzle(128) }     -- 128-byte rows of 16-bit elements
M.MEMORY_REGISTERS, M.COMPUTE_REGISTERS = 40, 232   -- per thread: (512 - 40) / 2 rounded down to 8

local defaults = { depth = 2, causal = false, lse = false, approx_math = true }
local known = { block_kv = true, depth = true, causal = true, pingpong = true, lse = true, approx_math = true,
                scale = true, dtype = true, wgs = true, overlap = true }

--- cfg merged over the defaults and checked; returns (config, nil) or
--- (nil, message).  block_kv, wgs, overlap and pingpong are left nil where
--- not given (chosen per head_dim by M.for_head_dim).
function M.config(cfg, what)
  local c = {}
  for k, v in pairs(defaults) do c[k] = v end
  if cfg ~= nil and type(cfg) ~= "table" then return nil, what .. ": the configuration must be a table" end
  for k, v in pairs(cfg or {}) do
    if not known[k] then return nil, string.format("%s: unknown option '%s'", what, tostring(k)) end
    c[k] = v
  end
  local bkv = c.block_kv
  if bkv ~= nil and (type(bkv) ~= "number" or bkv % 16 ~= 0 or bkv < 64 or bkv > 256) then
    return nil, string.format("%s: block_kv must be a multiple of 16 from 64 to 256, got %s", what, tostring(bkv))
  end
  if type(c.depth) ~= "number" or c.depth < 2 or c.depth % 1 ~= 0 then
    return nil, string.format("%s: depth must be an integer of at least 2, got %s", what, tostring(c.depth))
  end
  if c.wgs ~= nil and c.wgs ~= 2 and c.wgs ~= 3 then
    return nil, string.format("%s: wgs (compute warpgroups) must be 2 or 3, got %s", what, tostring(c.wgs))
  end
  if c.pingpong ~= nil and c.pingpong ~= 0 and c.pingpong ~= 1 then
    return nil, string.format("%s: pingpong must be 0 or 1, got %s", what, tostring(c.pingpong))
  end
  for _, k in ipairs({ "causal", "lse", "approx_math", "overlap" }) do
    if type(c[k]) ~= "boolean" and not (k == "overlap" and c[k] == nil) then
      return nil, string.format("%s: %s must be a boolean, got %s", what, k, tostring(c[k]))
    end
  end
  if c.scale ~= nil and (type(c.scale) ~= "number" or c.scale <= 0 or c.scale ~= c.scale or c.scale == math.huge) then
    return nil, string.format("%s: scale must be a positive finite number, got %s", what, tostring(c.scale))
  end
  return c
end

--- The registers a thread of the memory and of a compute warpgroup ask
--- for with c.wgs compute warpgroups: (40, 232) for two, (32, 160) for
--- three (the 512 a thread of four warpgroups may have, shared out).
function M.registers(c)
  if c.wgs == 3 then return 32, 160 end
  return M.MEMORY_REGISTERS, M.COMPUTE_REGISTERS
end

--- c for head_dim D and seq S (a copy; c is not changed) with block_kv,
--- wgs, overlap and pingpong as given, else the fastest measured on the
--- H100: for D = 64 three compute warpgroups
--- and 192-row KV blocks (the softmax weighs most there, and a third
--- warpgroup keeps the tensor cores fed during two softmaxes); for D = 128
--- (with `overlap` where the kernel can: can_overlap) two warpgroups
--- overlapping within themselves, without turns, and 128-row blocks, else
--- ping-pong and 192-row blocks; two and 64 for D = 256.  The default
--- block is at most S rounded down to 64 (a TMA box is no larger than the
--- array) and shrinks by 64 rows until the Q slabs and the K and V slots
--- fit in SMEM.
--- Returns nil and a message for what cannot fit: with D = 256, SMEM holds
--- the Q slabs (64 KiB) and `depth` slots each of K and V (bkv x 512
--- bytes), so 128-row slots would need 320 KiB of the 227 KiB a block may
--- have, 64-row ones at depth 2 take 192 KiB; O alone (128 registers a
--- thread) leaves three compute warpgroups' 160 no room; and overlap keeps
--- S, the previous block's P and O in registers at once.
function M.for_head_dim(c, D, S, can_overlap)
  local cd = {}
  for k, v in pairs(c) do cd[k] = v end
  cd.wgs = c.wgs or (D == 64 and 3 or 2)
  if c.overlap == nil then cd.overlap = can_overlap and D == 128 and cd.wgs == 2 end
  if c.pingpong == nil then cd.pingpong = cd.overlap and 0 or 1 end
  local bkv = c.block_kv
  if not bkv then
    bkv = math.min(cd.overlap and 128 or 192, S - S % 64)
    while bkv > 64 and (cd.wgs * M.BQ + 2 * c.depth * bkv) * D * 2 > 226 * 1024 do bkv = bkv - 64 end
  end
  cd.block_kv = bkv
  if cd.block_kv > S then return nil, string.format("block_kv = %d is larger than seq = %d", cd.block_kv, S) end
  local _, regs = M.registers(cd)
  if cd.overlap and 3 * bkv / 4 + D / 2 > regs - 32 then   -- S (bkv / 2), P (bkv / 4) and O (D / 2) a thread
    return nil, string.format("overlap keeps S, the previous P and O in registers: 3 * block_kv / 4 + head_dim / 2 = %d "
                              .. "of the %d a thread has leaves too few for the softmax; use block_kv <= %d", 3 * bkv / 4 + D / 2,
                              regs, math.floor((regs - 32 - D / 2) * 4 / 3 / 16) * 16)
  end
  if D == 256 and (cd.block_kv ~= 64 or c.depth ~= 2) then
    return nil, string.format("head_dim 256 needs block_kv = 64 and depth = 2 (got %d and %d): Q and the K and V "
                              .. "slots take %d KiB of SMEM, a block has 227 KiB", cd.block_kv, c.depth,
                              (64 + 2 * c.depth * cd.block_kv / 2))
  end
  if D == 256 and cd.wgs ~= 2 then
    return nil, "head_dim 256 needs wgs = 2: O alone takes 128 of the 160 registers a thread of three compute warpgroups has"
  end
  return cd
end

local function shape_str(x) return string.format("%s[%s]", x.dtype, table.concat(x.shape, ",")) end

--- The sizes of q (B, S, H, D) and k, v (B, S, Hkv, D) with H a multiple of
--- Hkv (grouped-query attention): B, S, H, Hkv, D, or nil and a message.
function M.dims(q, k, v, what, head_dims)
  for i, x in ipairs({ q, k, v }) do
    if type(x) ~= "table" or x.shape == nil then
      return nil, string.format("%s: argument %d must be an mgpu array", what, i)
    end
  end
  if #q.shape ~= 4 then return nil, string.format("%s: q must be (batch, seq, heads, head_dim), got %s", what, shape_str(q)) end
  local B, S, H, D = q.shape[1], q.shape[2], q.shape[3], q.shape[4]
  if q.dtype ~= "bf16" and q.dtype ~= "f16" then return nil, string.format("%s: q must be bf16 or f16, got %s", what, q.dtype) end
  local Hkv = k.shape[3]
  for i, x in ipairs({ k, v }) do
    local name = i == 1 and "k" or "v"
    if #x.shape ~= 4 or x.shape[1] ~= B or x.shape[2] ~= S or x.shape[3] ~= Hkv or x.shape[4] ~= D or x.dtype ~= q.dtype then
      return nil, string.format("%s: %s must be %s[%d,%d,kv_heads,%d] with k's kv_heads (q is %s), got %s", what, name,
                                q.dtype, B, S, D, shape_str(q), shape_str(x))
    end
  end
  if S < 64 then
    return nil, string.format("%s: seq = %d must be at least 64 (the kernels move blocks of 64 rows or more)", what, S)
  end
  if Hkv < 1 or H % Hkv ~= 0 then
    return nil, string.format("%s: q's %d heads must be a multiple of k and v's %d heads", what, H, Hkv)
  end
  local ok = false
  for _, d in ipairs(head_dims) do ok = ok or d == D end
  if not ok then
    return nil, string.format("%s: head_dim must be %s, got %d", what, table.concat(head_dims, " or "), D)
  end
  return B, S, H, Hkv, D
end

--- How many KV blocks of size bkv the query rows [q0, q0 + nq) attend to
--- (traced when q0 is): all of the sequence, or up to the diagonal.
function M.kv_blocks(c, S, bkv, q0, nq)
  local all = math.ceil(S / bkv)
  if not c.causal then return all end
  return mgpu.min(mgpu.cdiv(q0 + nq, bkv), all)
end

--- scores (rows x cols, WGMMA layout) with -inf where the key is past the
--- diagonal (causal) or past seq.  m.rows0/m.cols0 are the first query and
--- key indices when m.keys_in_rows is false (the forward, dQ), else the
--- first key and query; m.queries also masks queries past seq.  Blocks that
--- need no mask (known at trace time or at run time) skip it.
function M.mask(c, S, scores, m)
  local nr, nc = scores.shape[1], scores.shape[2]
  local q0, nq, k0, nk = m.rows0, nr, m.cols0, nc
  if m.keys_in_rows then q0, nq, k0, nk = m.cols0, nc, m.rows0, nr end
  local need = false
  local function any(p) if need == false then need = p else need = mgpu.bitwise_or(need, p) end end
  if c.causal then any(mgpu.gt(k0 + (nk - 1), q0)) end            -- a key after the first query
  if S % nk ~= 0 then any(mgpu.gt(k0 + nk, S)) end                  -- keys past seq
  if m.queries and S % nq ~= 0 then any(mgpu.gt(q0 + nq, S)) end   -- queries past seq
  if need == false then return scores end
  return mgpu.cond(need, function()
    local W = mgpu.Layout.WGMMA
    local ri = mgpu.broadcasted_iota("i32", { nr, nc }, 0, { layout = W }) + m.rows0
    local ci = mgpu.broadcasted_iota("i32", { nr, nc }, 1, { layout = W }) + m.cols0
    local qi, ki = ri, ci
    if m.keys_in_rows then qi, ki = ci, ri end
    local ok = mgpu.lt(ki, S)
    if c.causal then ok = mgpu.bitwise_and(ok, mgpu.le(ki, qi)) end
    if m.queries then ok = mgpu.bitwise_and(ok, mgpu.lt(qi, S)) end
    return mgpu.select(ok, scores, -math.huge)
  end, function() return scores end)
end

--- The memory warpgroup of a hand-written warp-specialized kernel: for
--- steps j in [0, n), per stream (a table with `load(j, slot)`, which
--- issues the step's copies into SMEM slot j % depth, and `free`, the
--- slots' consumed barriers) wait until every compute warpgroup released the
--- slot's previous use, then load; at the end wait out the last releases, so
--- that every completion of a consumed barrier is awaited.  The warpgroup
--- gives up registers down to `registers` (default M.MEMORY_REGISTERS).
--- Under the profiler the waits are the scope "wait_free".
function M.memory_loop(n, depth, streams, registers)
  mgpu.set_max_registers(registers or M.MEMORY_REGISTERS, { action = "decrease" })
  mgpu.fori(0, n, function(j)
    local slot = j % depth
    for _, st in ipairs(streams) do
      mgpu.when(mgpu.ge(j, depth), function() mgpu.named_scope("wait_free", mgpu.barrier_wait, st.free:at(slot)) end)
      st.load(j, slot)
    end
  end)
  mgpu.fori(mgpu.max(n - depth, 0), n, function(j)
    for _, st in ipairs(streams) do mgpu.named_scope("wait_free", mgpu.barrier_wait, st.free:at(j % depth)) end
  end)
end

--- Adds to scratch table t the K and V slots' barriers for `depth` slots:
--- kbar and vbar (TMA arrivals) and kfree and vfree (released by each of
--- `wgs` compute warpgroups, default 2).  Returns t.
function M.kv_barriers(t, depth, wgs)
  t.kbar, t.vbar = mgpu.Barrier{ num_barriers = depth }, mgpu.Barrier{ num_barriers = depth }
  t.kfree = mgpu.Barrier{ num_barriers = depth, num_arrivals = wgs or 2 }
  t.vfree = mgpu.Barrier{ num_barriers = depth, num_arrivals = wgs or 2 }
  return t
end

--- The memory warpgroup streaming blocks kv_view(k, j) and kv_view(v, j)
--- for j in [0, n) into the scoped s.k and s.v slots (see kv_barriers),
--- with `registers` as memory_loop takes them.
function M.kv_memory(n, depth, s, k, v, kv_view, registers)
  M.memory_loop(n, depth, {
    { free = s.kfree, load = function(j, slot) mgpu.copy_gmem_to_smem(kv_view(k, j), s.k:at(slot), s.kbar:at(slot)) end },
    { free = s.vfree, load = function(j, slot) mgpu.copy_gmem_to_smem(kv_view(v, j), s.v:at(slot), s.vbar:at(slot)) end },
  }, registers)
end

--- The scratch barriers of M.pingpong for c.
function M.sched_barrier(c)
  if c.wgs == 3 or c.overlap then return mgpu.Barrier{ num_barriers = c.wgs } end
  return mgpu.Barrier{ num_arrivals = 2 }
end

--- Scheduling of the compute warpgroups at the tensor cores, over `bar`
--- (M.sched_barrier(c)).  Returns { meet, arrive, wait }, which a KV block's
--- step calls after issuing S = Q K^T (meet), at the end of its softmax
--- (arrive) and before issuing P V (wait), and the calls that offset (before
--- the loop) and balance (after) the phases.  All do nothing with
--- c.pingpong = 0.
---
--- Two warpgroups (ping-pong) meet at `bar` (two arrivals) twice per KV
--- block, warpgroup 1 one meeting behind, so that one's S = Q K^T runs on
--- the tensor cores during the other's softmax.  Three (or two with
--- c.overlap) pass a token round a ring of barriers (one per warpgroup, as
--- FlashAttention-3's scheduler barriers): wait starts a turn, meet passes
--- the token on; a turn is P V of one block and S = Q K^T of the next, and
--- a warpgroup's softmax runs during the others' turns.  The ring's pp also
--- has first (warpgroup 0 takes the first turn) and last (the token goes
--- on unless this is the last warpgroup), so that each barrier gets exactly
--- as many arrivals as its warpgroup waits.
function M.pingpong(c, bar, wg)
  local on = c.pingpong ~= 0
  if c.wgs == 3 or c.overlap then
    local n = c.wgs
    local mine, nxt = bar:at(wg), bar:at((wg + 1) % n)
    local pp = {
      meet = function() if on then mgpu.barrier_arrive(nxt) end end,   -- this turn is over
      arrive = function() end,
      wait = function() if on then mgpu.barrier_wait(mine) end end,     -- this warpgroup's turn
      first = function() if on then mgpu.when(mgpu.eq(wg, 0), function() mgpu.barrier_arrive(mine) end) end end,
    }
    function pp.last() if on then mgpu.when(mgpu.ne(wg, n - 1), pp.meet) end end
    return pp, function() pp.first(); pp.wait() end, pp.last
  end
  local pp = {
    arrive = function() if on then mgpu.barrier_arrive(bar) end end,
    wait = function() if on then mgpu.barrier_wait(bar) end end,
  }
  function pp.meet() pp.arrive(); pp.wait() end
  return pp, function() mgpu.when(mgpu.eq(wg, 1), pp.meet) end, function() mgpu.when(mgpu.eq(wg, 0), pp.meet) end
end

--- The callable forward over kernel_for(c, dims) (one kernel per shape):
--- attn(q, k, v) -> o (B, S, H, D), plus lse (B, H, S) f32 when c.lse;
--- attn.call_into(o, q, k, v[, lse]) writes into existing arrays;
--- attn.kernel(q, k, v) is the kernel (it takes and gives the
--- (B, S, heads * D) views).  Shape errors point at the caller's line.
--- can_overlap: the kernel implements c.overlap (examples/attention.lua's does).
function M.forward(c, kernel_for, what, can_overlap)
  local cache = {}
  local function prepare(q, k, v)
    local B, S, H, Hkv, D = M.dims(q, k, v, what, { 64, 128, 256 })
    if not B then error(S, 3) end
    local cd, err = M.for_head_dim(c, D, S, can_overlap)
    if not cd then error(what .. ": " .. err, 3) end
    if D > 64 and S % 8 ~= 0 then   -- several 64-column tiles per row: TMA clips rows by whole 8-row tiles
      error(string.format("%s: seq = %d must be a multiple of 8 with head_dim %d (TMA boxes of several 64-column "
                          .. "tiles cover rows 8 at a time)", what, S, D), 3)
    end
    local d = { B = B, S = S, H = H, Hkv = Hkv, D = D, dtype = q.dtype, bkv = cd.block_kv }
    local key = table.concat({ B, S, H, Hkv, D, q.dtype }, ",")
    cache[key] = cache[key] or kernel_for(cd, d)
    return cache[key], d
  end
  local function flat(x) return x:reshape({ x.shape[1], x.shape[2], x.shape[3] * x.shape[4] }) end
  -- the last call_into's arrays, kernel and flat views, all held weakly (a collected one makes the
  -- next call build them again): a loop over the same arrays launches the kernel on the same views,
  -- which the kernel's own fast path then recognises
  local last = setmetatable({}, { __mode = "v" })
  local function views(o, q, k, v, lse)
    local kern, outs, fq, fk, fv = last.kern, last.outs, last.fq, last.fk, last.fv   -- strong from here
    if kern and outs and fq and fk and fv and rawequal(last.o, o) and rawequal(last.q, q) and rawequal(last.k, k)
       and rawequal(last.v, v) and rawequal(last.lse, lse) then
      return kern, outs, fq, fk, fv
    end
    local d
    kern, d = prepare(q, k, v)
    fq, fk, fv = flat(q), flat(k), flat(v)
    outs = c.lse and { flat(o), lse:reshape({ d.B * d.H, d.S }) } or flat(o)
    last.o, last.q, last.k, last.v, last.lse = o, q, k, v, lse
    last.kern, last.outs, last.fq, last.fk, last.fv = kern, outs, fq, fk, fv
    return kern, outs, fq, fk, fv
  end
  local attn = {}
  function attn.call_into(o, q, k, v, lse)
    local kern, outs, fq, fk, fv = views(o, q, k, v, lse)
    kern:call_into(outs, fq, fk, fv)
    return o, lse
  end
  function attn.kernel(q, k, v) return (prepare(q, k, v)) end
  return setmetatable(attn, { __call = function(_, q, k, v)
    local kern, d = prepare(q, k, v)
    local o, lse = kern(flat(q), flat(k), flat(v))
    if c.lse then return o:reshape(q.shape), lse:reshape({ d.B, d.H, d.S }) end
    return o:reshape(q.shape)
  end })
end

--- The forward kernel for dims d named name (with "_causal" when causal):
--- c.wgs compute warpgroups and a memory one (thread "wg", the last) over a
--- grid of (batch * heads, query tiles of c.wgs * BQ rows) named bh and qt; body(q, k, v, o, lse)
--- gets lse nil when c.lse is off.  The q tiles of one head are neighbours
--- in the grid: they share that head's K and V in L2.
function M.kernel(c, d, name, body)
  local o = mgpu.shape({ d.B, d.S, d.H * d.D }, d.dtype)
  return mgpu.kernel{
    name = c.causal and name .. "_causal" or name,
    out_shape = c.lse and { o, mgpu.shape({ d.B * d.H, d.S }, "f32") } or o,
    grid = { d.B * d.H, math.ceil(d.S / (c.wgs * M.BQ)) }, grid_names = { "bh", "qt" },
    num_threads = c.wgs + 1, thread_name = "wg",
    compiler_params = mgpu.CompilerParams{ approx_math = c.approx_math },
    body = c.lse and body or function(q, k, v, out) body(q, k, v, out, nil) end,
  }
end

return M
