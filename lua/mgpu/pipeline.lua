--[[
mgpu.pipeline -- software pipelines over a sequential grid (Pallas'
emit_pipeline and emit_pipeline_warp_specialized), written on the
primitives: SMEM slots, TMA copies, barriers.

  local pipe = mgpu.emit_pipeline(function(idx, x_smem, o_smem)
    o_smem:store(x_smem:load() * 2)
  end, { grid = { n / 512 }, max_concurrent_steps = 3,
         in_specs = { mgpu.BlockSpec{ {512}, function(i) return i end } },
         out_specs = { mgpu.BlockSpec{ {512}, function(i) return i end } } })
  pipe(x, o)          -- inside a kernel body: GMEM refs, inputs then outputs

emit_pipeline runs in the warpgroup that calls it.  Step s waits for its
inputs, runs the body on them, stores the outputs whose block changes next
step (all of them at the last step), and refills its slots with step
s + max_concurrent_steps - delay_release.

emit_pipeline_warp_specialized splits the work: the memory warpgroup only
issues copies, the compute warpgroups only run the body; `ready` barriers
say a slot has landed, `consumed` barriers that every compute warpgroup is
done with it.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"
local ops = require "mgpu.ops"
local smem = require "mgpu.smem"
local barrier = require "mgpu.barrier"
local copy = require "mgpu.copy"
local wgmma = require "mgpu.wgmma"
local blockspec = require "mgpu.blockspec"
local loops = require "mgpu.loops"

local M = {}
local fail = compat.fail
local L = loops

--- Pipelines of pipelines (Pallas' PipelinePipeline): the first of a run of
--- pipelines with identical parameters is START, the last STOP, the others
--- STEADY; a run of one is START + STOP.  A traced i32 holding one of these
--- codes works too.  (START: the slots start free; STOP: the memory
--- warpgroup waits until the compute warpgroups are done with every slot.)
M.PipelineState = { STEADY = 0, START = 1, STOP = 2 }

local function check_keys(opts, known, what)
  if type(opts) ~= "table" then fail("OPTIONS_NOT_TABLE", what) end
  compat.check_keys(opts, known, what)
end

local function int_opt(v, default, what, lo)
  if v == nil then return default end
  v = compat.int(v, what)
  if v < lo then fail("BELOW_MINIMUM", what, lo, v) end
  return v
end

-- The shared part of both pipelines' options.
local function common(body, opts, what, known)
  if type(body) ~= "function" then fail("NOT_FUNCTION", what .. ": the body") end
  check_keys(opts, known, what)
  if opts.grid == nil then fail("REQUIRED", what .. ": grid") end
  local grid, nsteps = L.grid(opts.grid, what .. " grid")
  local in_specs, in_tree = blockspec.tree(opts.in_specs, what .. " in_specs")
  local out_specs, out_tree = blockspec.tree(opts.out_specs, what .. " out_specs")
  return {
    body = body, what = what, grid = grid, nsteps = nsteps,
    in_specs = in_specs, out_specs = out_specs, in_tree = in_tree, out_tree = out_tree,
  }
end

-- Depth clamped to the step count when it is known.
-- The steps in flight: as requested, at most the steps there are; each
-- takes an SMEM slot per block and an mbarrier, of which a pipeline has 32.
local function depth_of(p, requested)
  local depth = requested
  if type(p.nsteps) == "number" then depth = math.max(1, math.min(requested, p.nsteps)) end
  if depth > 32 then fail("PIPELINE_DEPTH", p.what, requested) end
  return depth
end

-- Plans for the GMEM refs a pipeline is called with (inputs, then outputs,
-- each nested as its specs are), one per spec.
local function plans(p, args)
  local nin, nout = #p.in_tree.top, #p.out_tree.top
  if #args ~= nin + nout then
    fail("PIPELINE_REF_COUNT", p.what, #args, nin, nout)
  end
  local inrefs = blockspec.tree_leaves(p.in_tree, args, 1, p.what .. " input")
  local outrefs = blockspec.tree_leaves(p.out_tree, args, nin + 1, p.what .. " output")
  local ins, outs = {}, {}
  for i, s in ipairs(p.in_specs) do ins[i] = blockspec.plan(s, inrefs[i], #p.grid, p.what .. " input " .. i) end
  for i, s in ipairs(p.out_specs) do outs[i] = blockspec.plan(s, outrefs[i], #p.grid, p.what .. " output " .. i) end
  return ins, outs
end

-- The body's arguments: indices, then the inputs' and the outputs' refs
-- (one per spec) nested as the specs are, then `extra` lists of one value
-- per input each nested as the inputs are (barriers).
local function body_args(p, idx, inrefs, outrefs, extra)
  local args = { idx }
  blockspec.tree_build(p.in_tree, inrefs, args)
  blockspec.tree_build(p.out_tree, outrefs, args)
  for _, e in ipairs(extra or {}) do blockspec.tree_build(p.in_tree, e, args) end
  return args
end

local function delay_of(spec, default)
  if spec.delay_release ~= nil then return spec.delay_release end
  return default or 0
end

-- -- emit_pipeline ------------------------------------------------------------------

local known_pipe = { grid = true, in_specs = true, out_specs = true, max_concurrent_steps = true, init_carry = true,
                     delay_release = true }

-- Whether the block of `plan` differs between grid points a and b.
local function block_changes(plan, a, b)
  local ia, ib = plan:indices(a), plan:indices(b)
  local changed = false
  for i = 1, #ia do changed = L.either(changed, L.ne(ia[i], ib[i])) end
  return changed
end

-- Store the SMEM outputs (list of { plan, buffer }) whose block changes
-- after `step` (every one at the last step) into one group of copies.
-- slots[o] is output o's current slot; returns the slots for the next step.
local function store_outputs(outputs, slots, idx, step, nsteps, grid, depth)
  local last = L.eq(step, L.sub(nsteps, 1))
  local nidx = L.unravel(L.add(step, 1), grid)
  local any, nxt, order = false, {}, {}
  for o in pairs(outputs) do order[#order + 1] = o end
  table.sort(order)                            -- a deterministic trace
  for _, o in ipairs(order) do
    local out = outputs[o]
    local pl, cur = out.plan, slots[o]
    local changed = L.either(last, block_changes(pl, idx, nidx))
    local function store()
      copy.copy_smem_to_gmem(out.buf:at(cur), pl:view(pl:indices(idx)), { commit_group = false })
    end
    if changed == true then store(); nxt[o] = L.rem(L.add(cur, 1), depth)
    elseif changed == false then nxt[o] = cur
    else
      ops.when(changed, store)
      nxt[o] = ops.select(changed, L.rem(L.add(trace.lift(cur), 1), depth), trace.lift(cur))
    end
    any = L.either(any, changed)
  end
  ops.when(any, copy.commit_smem_to_gmem_group)
  return nxt
end

--- mgpu.emit_pipeline(body, { grid, in_specs, out_specs,
--- max_concurrent_steps = 1, init_carry, delay_release }) -> pipeline(refs...).
--- body(indices, in_smem..., out_smem..., carry) -> carry, where indices is
--- a table of the grid indices.  delay_release (here or per BlockSpec) keeps
--- an input's slot unreleased for that many more steps (for a body that
--- leaves a wgmma reading it in flight).  The pipeline returns the final
--- carry.
function M.emit_pipeline(body, opts)
  local p = common(body, opts or {}, "emit_pipeline", known_pipe)
  local req = int_opt(opts.max_concurrent_steps, 1, "emit_pipeline: max_concurrent_steps", 1)
  local depth = depth_of(p, req)
  local default_delay = int_opt(opts.delay_release, 0, "emit_pipeline: delay_release", 0)
  for i, s in ipairs(p.in_specs) do
    local d = delay_of(s, default_delay)
    if d >= depth then
      fail("INPUT_DELAY_TOO_LARGE", i, d, depth)
    end
    if s.collective_axes ~= nil then fail("MULTICAST_NEEDS_WS") end
  end
  local init_carry = opts.init_carry
  return function(...)
    local ins, outs = plans(p, { ... })
    local nsteps, grid = p.nsteps, p.grid
    local smem_in, smem_out, allocs = {}, {}, {}
    for i, pl in ipairs(ins) do
      if pl.space == "SMEM" then smem_in[#smem_in + 1] = i; allocs[#allocs + 1] = pl:smem(depth) end
    end
    for i, pl in ipairs(outs) do
      if pl.space == "SMEM" then smem_out[#smem_out + 1] = i; allocs[#allocs + 1] = pl:smem(depth) end
    end
    if #smem_in > 0 then allocs[#allocs + 1] = barrier.Barrier{ num_barriers = depth, num_arrivals = #smem_in } end
    local tmpl
    local results = compat.pack(smem.run_scoped(function(...)
      local bufs = { ... }
      local inbuf, outbuf = {}, {}
      for j, i in ipairs(smem_in) do inbuf[i] = bufs[j] end
      for j, i in ipairs(smem_out) do outbuf[i] = bufs[#smem_in + j] end
      local bars = bufs[#smem_in + #smem_out + 1]
      local function fetch(i, step)   -- input i's block of `step` into its slot
        local pl = ins[i]
        local slot = L.rem(step, depth)
        copy.copy_gmem_to_smem(pl:view(pl:indices(L.unravel(step, grid))), inbuf[i]:at(slot), bars:at(slot))
      end
      -- fn(step) for a step that exists; under a traced step count a constant step is traced too,
      -- so that its view (outside the array when the grid is short) is never built at trace time
      local function guarded(step, fn)
        local exists = L.lt(step, nsteps)
        if exists == true then fn(step)
        elseif exists ~= false then ops.when(exists, function() fn(trace.lift(step)) end) end
      end
      for _, i in ipairs(smem_in) do
        local d = delay_of(p.in_specs[i], default_delay)
        for s = 0, depth - d - 1 do guarded(s, function(step) fetch(i, step) end) end
      end
      local oslots, outputs = {}, {}
      for _, o in ipairs(smem_out) do oslots[o], outputs[o] = 0, { plan = outs[o], buf = outbuf[o] } end
      local carry = L.fori(0, nsteps, { c = init_carry, o = oslots }, function(step, st)
        local slot = L.rem(step, depth)
        local idx = L.unravel(step, grid)
        if #smem_in > 0 then barrier.barrier_wait(bars:at(slot)) end
        if #smem_out > 0 then copy.wait_smem_to_gmem(depth - 1, { wait_read_only = true }) end
        local inrefs, outrefs = {}, {}
        for i, pl in ipairs(ins) do
          inrefs[i] = pl.space == "SMEM" and inbuf[i]:at(slot) or pl:view(pl:indices(idx))
        end
        for o, pl in ipairs(outs) do
          outrefs[o] = pl.space == "SMEM" and outbuf[o]:at(st.o[o]) or pl:view(pl:indices(idx))
        end
        local args = body_args(p, idx, inrefs, outrefs)
        if init_carry ~= nil then args[#args + 1] = st.c end
        local nc = p.body(compat.unpack(args, 1, #args))
        if init_carry == nil then nc = nil end
        if #smem_in + #smem_out > 0 then copy.commit_smem() end   -- body's SMEM reads/writes before TMA
        local no = store_outputs(outputs, st.o, idx, step, nsteps, grid, depth)
        for _, i in ipairs(smem_in) do
          local t = L.add(step, depth - delay_of(p.in_specs[i], default_delay))
          guarded(t, function(step) fetch(i, step) end)
        end
        return { c = nc, o = no }
      end, "emit_pipeline body")
      if #smem_out > 0 then copy.wait_smem_to_gmem(0) end
      local leaves, t = L.pack_carry(carry.c)
      tmpl = t
      return compat.unpack(leaves, 1, #leaves)
    end, compat.unpack(allocs, 1, #allocs)))
    return L.unpack_carry(tmpl, results)
  end
end

-- -- emit_pipeline_warp_specialized -----------------------------------------------------

local known_ws = { grid = true, memory_registers = true, in_specs = true, out_specs = true, max_concurrent_steps = true,
                   wg_axis = true, num_compute_wgs = true, pipeline_state = true, manual_ready_barriers = true,
                   manual_consumed_barriers = true, compute_context = true, memory_thread_idx = true,
                   step_offset = true, memory_warps = true, before_release = true }

local WS = {}
WS.__index = WS

-- Registers per thread of each compute warpgroup next to a memory
-- warpgroup holding `memory_registers`.
local function compute_registers(memory_registers, num_compute_wgs)
  local n = math.min(256, (512 - memory_registers) / num_compute_wgs)
  return math.floor(n / 8) * 8
end

--- mgpu.emit_pipeline_warp_specialized(body, { grid, memory_registers,
--- in_specs, out_specs, max_concurrent_steps = 2, wg_axis, num_compute_wgs,
--- pipeline_state, manual_ready_barriers, manual_consumed_barriers,
--- compute_context, memory_thread_idx }) -> pipeline.
--- body(indices, in_smem..., out_smem..., [ready barriers...],
--- [consumed barriers...], [carry]) -> carry runs in the compute
--- warpgroups; with manual barriers the body waits on the ready ones and
--- every compute warpgroup arrives on every consumed one once per step.
--- With delay_release = d the consumed barriers handed to the body at step
--- s are those of step s - d's slot (as Pallas'), and the body arrives on
--- them at every step but the first d.
--- compute_context(run) runs only in compute warpgroups: it calls
--- run(init_carry), which runs the pipeline and returns the final carry.
--- step_offset (an mgpu extension, with pipeline_state): the steps the
--- earlier pipelines sharing the allocations ran, so that slots keep
--- rotating across them and the next tile's first fetch never waits on
--- the slot its predecessor released last.  With it, each pipeline's
--- step_offset must be the sum of the steps of those before it (the first
--- one's 0), and the grid may be traced or shorter than
--- max_concurrent_steps (a stream-K matmul's partial tiles).
--- memory_warps (an mgpu extension): 4 (the default) runs the memory
--- warpgroup's load loop on all its warps, 1 on its first warp only
--- (mgpu.single_warp), as CUTLASS's and cuBLAS's producers run.
--- before_release(pending) (an mgpu extension): called in each compute
--- warpgroup just before it releases an input slot, with the number of
--- later steps whose bodies have run since the body that used the slot
--- (delay_release in the loop, fewer at the end); a body that leaves an
--- asynchronous read of its slots in flight (a TMA store from them) waits
--- for it here: mgpu.wait_smem_to_gmem(pending, { wait_read_only = true })
--- when it issues one store per step.  Not with manual_consumed_barriers.
function M.emit_pipeline_warp_specialized(body, opts)
  opts = opts or {}
  local what = "emit_pipeline_warp_specialized"
  local p = setmetatable(common(body, opts, what, known_ws), WS)
  -- a chained pipeline (step_offset) shares its slots with the whole chain: its depth is not
  -- clamped to its own steps, and its waits follow the chain's steps
  p.chained = opts.step_offset ~= nil
  local requested = int_opt(opts.max_concurrent_steps, 2, what .. ": max_concurrent_steps", 1)
  p.depth = p.chained and depth_of({ what = what }, requested) or depth_of(p, requested)
  if opts.memory_registers == nil then fail("MEMORY_REGISTERS_REQUIRED", what) end
  p.memory_registers = compat.int(opts.memory_registers, what .. ": memory_registers")
  if p.memory_registers < 24 or p.memory_registers > 256 or p.memory_registers % 8 ~= 0 then
    fail("MEMORY_REGISTERS_BAD", what, p.memory_registers)
  end
  if type(opts.wg_axis) ~= "string" then fail("WG_AXIS_NOT_NAME", what) end
  p.wg_axis = opts.wg_axis
  if opts.num_compute_wgs == nil then fail("REQUIRED", what .. ": num_compute_wgs") end
  p.num_compute_wgs = int_opt(opts.num_compute_wgs, nil, what .. ": num_compute_wgs", 1)
  p.manual_ready = opts.manual_ready_barriers and true or false
  p.manual_consumed = opts.manual_consumed_barriers and true or false
  if opts.compute_context ~= nil and type(opts.compute_context) ~= "function" then
    fail("NOT_FUNCTION", what .. ": compute_context")
  end
  p.compute_context = opts.compute_context
  p.memory_thread_idx = opts.memory_thread_idx
  if opts.before_release ~= nil and type(opts.before_release) ~= "function" then
    fail("NOT_FUNCTION", what .. ": before_release")
  end
  if opts.before_release ~= nil and p.manual_consumed then fail("BEFORE_RELEASE_MANUAL", what) end
  p.before_release = opts.before_release
  p.memory_warps = int_opt(opts.memory_warps, 4, what .. ": memory_warps", 1)
  if p.memory_warps ~= 1 and p.memory_warps ~= 4 then fail("MEMORY_WARPS_BAD", what, p.memory_warps) end
  if #p.in_specs == 0 then fail("PIPELINE_NO_INPUT", what) end
  p.delay = delay_of(p.in_specs[1])
  for i, s in ipairs(p.in_specs) do
    if delay_of(s) ~= p.delay then fail("DELAY_DIFFERS", what, i) end
    if s.collective_axes ~= nil then
      -- a multicast slot is free once every block writing into it is done with it: the union of
      -- the inputs' axes, each input multicast along one (a cluster barrier hears from the blocks
      -- that differ along at most one of its axes, so not from a 2x2 group's diagonal)
      local axes = type(s.collective_axes) == "table" and s.collective_axes or { s.collective_axes }
      if #axes ~= 1 then fail("MULTICAST_ONE_AXIS", what, i) end
      p.mcast = p.mcast or {}
      local seen = false
      for _, x in ipairs(p.mcast) do seen = seen or x == axes[1] end
      if not seen then p.mcast[#p.mcast + 1] = axes[1] end
    end
    if s.memory_space ~= "SMEM" then fail("INPUT_NOT_SMEM", what, i) end
  end
  if p.delay >= p.depth then
    fail("DELAY_NOT_BELOW_DEPTH", what, p.delay, p.depth)
  end
  if #p.out_specs > 0 and p.num_compute_wgs > 1 then
    fail("OUT_SPECS_NEED_ONE_WG", what)
  end
  local st = opts.pipeline_state
  if st ~= nil then
    if type(st) == "number" then
      if st ~= 0 and st ~= 1 and st ~= 2 and st ~= 3 then fail("PIPELINE_STATE_UNKNOWN", what) end
    elseif not trace.is_value(st) then
      fail("PIPELINE_STATE_BAD", what)
    end
    if not p.chained then   -- (chained, it may be short or run a traced number of steps)
      if type(p.nsteps) ~= "number" then fail("PIPELINE_STATE_DYNAMIC_GRID", what) end
      if p.nsteps < p.depth then
        fail("PIPELINE_STATE_SHORT_GRID", what, p.depth, p.nsteps)
      end
    end
  end
  if st ~= nil and p.manual_consumed and p.delay > 0 then fail("PIPELINE_STATE_MANUAL_DELAY", what) end
  p.state = st
  p.offset = opts.step_offset or 0
  if p.chained and st == nil then fail("STEP_OFFSET_ALONE", what) end
  if type(p.offset) == "number" then p.offset = compat.int(p.offset, what .. ": step_offset")
  elseif not trace.is_value(p.offset) then fail("STEP_OFFSET_BAD", what) end
  return p
end

-- The slot of `step` (slots keep rotating across pipelines sharing an allocation).
function WS:slot(step) return L.rem(L.add(self.offset, step), self.depth) end

-- The slot k steps after `slot` (-depth < k < depth), without a remainder:
-- the loops carry their slot and move it with this.
function WS:slot_add(slot, k)
  local s = L.add(slot, k)
  local inside, other   -- whether s is a slot, and the slot it means when not
  if k > 0 then inside, other = L.lt(s, self.depth), L.sub(s, self.depth)
  else inside, other = L.lt(-1, s), L.add(s, self.depth) end
  if inside == true then return s elseif inside == false then return other end
  return ops.select(inside, trace.lift(s), trace.lift(other))
end

--- The SMEM and barriers the pipeline uses for these refs, as a table for
--- mgpu.run_scoped; pass what run_scoped hands back as
--- pipeline(refs..., { allocations = ... }).
function WS:get_allocations(...)
  local ins, outs = plans(self, { ... })
  local a = { ins = {}, outs = {} }
  for i, pl in ipairs(ins) do a.ins[i] = pl:smem(self.depth) end
  for i, pl in ipairs(outs) do a.outs[i] = pl:smem(self.depth) end
  local nready = self.manual_ready and #ins or 1
  a.ready = {}
  for i = 1, nready do
    a.ready[i] = barrier.Barrier{ num_barriers = self.depth, num_arrivals = self.manual_ready and 1 or #ins }
  end
  a.consumed = {}
  for i = 1, self.manual_consumed and #ins or 1 do
    local mcast = self.manual_consumed and self.in_specs[i].collective_axes or self.mcast
    if mcast then
      a.consumed[i] = barrier.ClusterBarrier{ collective_axes = mcast, num_barriers = self.depth,
                                              num_arrivals = self.num_compute_wgs }
    else
      a.consumed[i] = barrier.Barrier{ num_barriers = self.depth, num_arrivals = self.num_compute_wgs }
    end
  end
  return a
end

-- The code of the memory warpgroup: wait until a slot is consumed, refill it.
function WS:memory(ins, a)
  local depth, nsteps, grid = self.depth, self.nsteps, self.grid
  local st = self.state
  -- without a state the pipeline starts with free slots and drains at the end
  st = st or (M.PipelineState.START + M.PipelineState.STOP)
  local not_start = L.eq(L.rem(st, 2), 0)
  local drains = L.lt(1, st)
  wgmma.set_max_registers(self.memory_registers, { action = "decrease" })
  local function consumed(i) return a.consumed[self.manual_consumed and i or 1] end
  local function ready(i) return a.ready[self.manual_ready and i or 1] end
  -- the slot of step had an earlier use (in this pipeline, or in the chain before it)
  local function used_before(step)
    if self.chained then return L.lt(depth - 1, L.add(self.offset, step)) end
    return L.either(L.lt(depth - 1, step), not_start)
  end
  local function wait_slot(c, slot, step)     -- the slot's previous use is over
    ops.when(used_before(step), function() barrier.barrier_wait(c:at(slot)) end)
  end
  local function loads()
    L.fori(0, nsteps, { s = self:slot(0) }, function(step, carry)
      local slot = carry.s
      local idx = L.unravel(step, grid)
      for i, pl in ipairs(ins) do
        if i == 1 or self.manual_consumed then wait_slot(consumed(i), slot, step) end
        copy.copy_gmem_to_smem(pl:view(pl:indices(idx)), a.ins[i]:at(slot), ready(i):at(slot),
                               { collective_axes = pl.spec.collective_axes })
      end
      return { s = self:slot_add(slot, 1) }
    end, self.what)
    -- a manual body releases no slot for its last delay steps (it arrives on every step but the
    -- first delay), so those slots get no completion to wait for
    local released = self.manual_consumed and L.sub(nsteps, self.delay) or nsteps
    local function drain()   -- wait out the last uses (of the chain) so every completion is awaited
      L.fori(L.max(L.sub(nsteps, depth), L.sub(0, self.offset)), released, {}, function(step, carry)
        for i = 1, #a.consumed do barrier.barrier_wait(a.consumed[i]:at(self:slot(step))) end
        return carry
      end, self.what)
    end
    ops.when(drains, drain)
  end
  if self.memory_warps == 1 then ops.single_warp(loads) else loads() end
end

-- The code of a compute warpgroup: wait for a slot, run the body, release it.
function WS:compute(ins, outs, a)
  local depth, nsteps, grid, delay = self.depth, self.nsteps, self.grid, self.delay
  -- the slot is free (pending: the later steps whose bodies ran, for before_release)
  local function arrive(slot, pending)
    if self.before_release then self.before_release(pending) end
    barrier.barrier_arrive(a.consumed[1]:at(slot))
  end
  local function release(step, slot, pending)   -- (no step before 0)
    ops.when(L.lt(-1, step), function() arrive(slot, pending) end)
  end
  wgmma.set_max_registers(compute_registers(self.memory_registers, self.num_compute_wgs), { action = "increase" })
  local ran = false
  local function run(init_carry)
    if ran then fail("PIPELINE_RUN_TWICE", self.what) end
    ran = true
    local has_carry = self.compute_context ~= nil
    local oslot = {}
    for o = 1, #outs do oslot[o] = 0 end
    local final = L.fori(0, nsteps, { c = init_carry, o = oslot, s = self:slot(0) }, function(step, st)
      local slot = st.s
      local idx = L.unravel(step, grid)
      if not self.manual_ready then barrier.barrier_wait(a.ready[1]:at(slot)) end
      if #outs > 0 then copy.wait_smem_to_gmem(depth - 1, { wait_read_only = true }) end
      local inrefs, outrefs, bars = {}, {}, {}
      for i = 1, #ins do inrefs[i] = a.ins[i]:at(slot) end
      for o = 1, #outs do outrefs[o] = a.outs[o]:at(st.o[o]) end
      if self.manual_ready then
        local r = {}
        for i = 1, #ins do r[i] = a.ready[i]:at(slot) end
        bars[#bars + 1] = r
      end
      if self.manual_consumed then   -- the slot this step releases: the one delay steps back
        local cslot, c = delay == 0 and slot or self:slot_add(slot, -delay), {}
        for i = 1, #ins do c[i] = a.consumed[i]:at(cslot) end
        bars[#bars + 1] = c
      end
      local args = body_args(self, idx, inrefs, outrefs, bars)
      if has_carry then args[#args + 1] = st.c end
      local nc = self.body(compat.unpack(args, 1, #args))
      if not has_carry then nc = nil end
      if not self.manual_consumed then
        if delay == 0 then arrive(slot, 0) else release(L.sub(step, delay), self:slot_add(slot, -delay), delay) end
      end
      local no = {}
      if #outs > 0 then   -- one compute warpgroup: it stores its outputs itself
        copy.commit_smem()
        local outputs = {}
        for o, pl in ipairs(outs) do outputs[o] = { plan = pl, buf = a.outs[o] } end
        no = store_outputs(outputs, st.o, idx, step, nsteps, grid, depth)
      end
      return { c = nc, o = no, s = self:slot_add(slot, 1) }
    end, self.what)
    if not self.manual_consumed and delay > 0 then
      wgmma.wgmma_wait(0)   -- the delayed slots are free only once their wgmmas are done
      for k = delay, 1, -1 do release(L.sub(nsteps, k), self:slot(L.sub(nsteps, k)), k - 1) end
    end
    if #outs > 0 then copy.wait_smem_to_gmem(0) end
    return final.c
  end
  if self.compute_context then
    self.compute_context(run)
    if not ran then fail("PIPELINE_NOT_RUN", self.what) end
  else
    run(nil)
  end
end

--- pipeline(refs..., { allocations = ... }): inputs then outputs (GMEM
--- refs).  Without allocations the pipeline allocates its SMEM and barriers
--- for its own duration.
function WS:__call(...)
  local refs = compat.pack(...)
  local popts = {}
  -- the options follow the refs (which may be tables: nested specs)
  if refs.n == #self.in_tree.top + #self.out_tree.top + 1 and type(refs[refs.n]) == "table"
     and not trace.is_ref(refs[refs.n]) then
    popts = refs[refs.n]
    refs.n = refs.n - 1
    check_keys(popts, { allocations = true }, self.what .. " call")
  end
  local list = {}
  for i = 1, refs.n do list[i] = refs[i] end
  local ins, outs = plans(self, list)
  local spec = trace.tr().spec
  if spec.thread_name ~= self.wg_axis then
    fail("NOT_THREAD_AXIS", self.what .. ": wg_axis", self.wg_axis, tostring(spec.thread_name))
  end
  if spec.num_threads ~= self.num_compute_wgs + 1 then
    fail("PIPELINE_THREADS", self.what, spec.num_threads, self.num_compute_wgs + 1)
  end
  local mem = self.memory_thread_idx == nil and self.num_compute_wgs or
              compat.int(self.memory_thread_idx, self.what .. ": memory_thread_idx")
  if mem < 0 or mem >= spec.num_threads then
    fail("MEMORY_THREAD_OUTSIDE", self.what, mem, spec.num_threads)
  end
  if self.state ~= nil and popts.allocations == nil then
    fail("PIPELINE_STATE_NO_ALLOCATIONS", self.what)
  end
  local function go(a)
    local wg = ops.axis_index(self.wg_axis)
    ops.cond(ops.eq(wg, mem), function() self:memory(ins, a) end, function() self:compute(ins, outs, a) end)
  end
  if popts.allocations ~= nil then
    local a = popts.allocations
    if type(a) ~= "table" or type(a.ins) ~= "table" or type(a.ready) ~= "table" or type(a.consumed) ~= "table" then
      fail("PIPELINE_BAD_ALLOCATIONS", self.what)
    end
    go(a)
  else
    smem.run_scoped(self:get_allocations(compat.unpack(list, 1, #list)), go)
  end
end

return M
