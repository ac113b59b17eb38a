--[[
mgpu.loops -- loops over grids for persistent kernels (Pallas' nd_loop,
planar_snake) and the pieces pipelines share: integer arithmetic that
folds when both sides are known at trace time, row-major unravelling of a
grid index, and loop carries of any shape.

  local final = mgpu.nd_loop({ m_tiles * n_tiles }, { collective_axes = "sm", init_carry = 0 },
    function(info, count)
      local mi, ni = mgpu.planar_snake(info.index[1], { m_tiles, n_tiles }, 1, 8)
      ...
      return count + 1
    end)

A carry is a traced value, a number (it becomes a traced constant), a ref
(passed through unchanged), or a table of those (nested tables keep their
shape).  The body returns the next carry, of the same shape.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"
local ops = require "mgpu.ops"

local M = {}
local fail = compat.fail
local is_value = trace.is_value

-- -- Integers known now or on the device ---------------------------------------------

local function known(x) return type(x) == "number" end
function M.add(a, b) if known(a) and known(b) then return a + b end return trace.lift(a, b) + b end
function M.sub(a, b) if known(a) and known(b) then return a - b end return trace.lift(a, b) - b end
function M.mul(a, b)
  if known(a) and known(b) then return a * b end
  if a == 1 then return b end
  if b == 1 then return a end
  return trace.lift(a, b) * b
end
--- Division of non-negative integers (truncating).
function M.div(a, b)
  if known(a) and known(b) then return math.floor(a / b) end
  if b == 1 then return a end
  return ops.div(a, b)
end
--- Remainder of non-negative integers.
function M.rem(a, b)
  if known(a) and known(b) then return a % b end
  if b == 1 then return 0 end
  return ops.rem(a, b)
end
function M.max(a, b) if known(a) and known(b) then return math.max(a, b) end return ops.max(a, b) end
function M.min(a, b) if known(a) and known(b) then return math.min(a, b) end return ops.min(a, b) end
--- a < b: a Lua boolean when both are known, else a traced pred.
function M.lt(a, b) if known(a) and known(b) then return a < b end return ops.lt(a, b) end
function M.eq(a, b) if known(a) and known(b) then return a == b end return ops.eq(a, b) end
function M.ne(a, b) if known(a) and known(b) then return a ~= b end return ops.ne(a, b) end
--- a or b on conditions (Lua booleans or traced preds).
function M.either(a, b)
  if a == true or b == true then return true end
  if a == false then return b end
  if b == false then return a end
  return a["or"](a, b)
end

--- An integer count from a grid entry: a number, or a traced i32 scalar.
function M.count(x, what)
  if is_value(x) then
    if x.kind ~= "scalar" or (x.dtype ~= "i32" and x.dtype ~= "u32") then
      fail("NOT_INT_OR_I32", what)
    end
    return x
  end
  local n = compat.int(x, what)
  if n < 1 then fail("LESS_THAN_ONE", what, n) end
  return n
end

--- A grid as a list of counts (numbers or traced scalars), and their product.
function M.grid(g, what)
  if type(g) == "number" or is_value(g) then g = { g } end
  if type(g) ~= "table" then fail("NOT_SIZES", what) end
  local out, total = {}, 1
  for i = 1, #g do
    out[i] = M.count(g[i], what .. "[" .. i .. "]")
    total = M.mul(total, out[i])
  end
  return out, total
end

--- The indices (a table, one per axis) of row-major linear index `lin`.
function M.unravel(lin, grid)
  local idx = {}
  for i = #grid, 1, -1 do
    if i == 1 then idx[i] = lin
    else
      idx[i] = M.rem(lin, grid[i])
      lin = M.div(lin, grid[i])
    end
  end
  return idx
end

-- -- Carries ------------------------------------------------------------------------

-- A carry is flattened into traced leaves (which the loop carries) and a
-- template holding everything else.
local function flatten(x, leaves)
  if is_value(x) then leaves[#leaves + 1] = x; return { leaf = #leaves } end
  if type(x) == "number" or type(x) == "boolean" then
    leaves[#leaves + 1] = trace.lift(x)
    return { leaf = #leaves }
  end
  if type(x) == "table" and getmetatable(x) == nil then
    local keys = {}
    for k in pairs(x) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local t = { keys = keys, sub = {} }
    for i, k in ipairs(keys) do t.sub[i] = flatten(x[k], leaves) end
    return t
  end
  return { const = x }
end

local function unflatten(t, leaves)
  if t.leaf then return leaves[t.leaf] end
  if t.keys then
    local x = {}
    for i, k in ipairs(t.keys) do x[k] = unflatten(t.sub[i], leaves) end
    return x
  end
  return t.const
end

-- The leaves of `x`, which must have the template's shape.
local function leaves_like(t, x, out, what)
  if t.leaf then
    if is_value(x) then out[#out + 1] = x
    elseif type(x) == "number" or type(x) == "boolean" then out[#out + 1] = x
    else fail("CARRY_SHAPE_VALUE", what, type(x)) end
    return
  end
  if t.keys then
    if type(x) ~= "table" or getmetatable(x) ~= nil then fail("CARRY_SHAPE_TABLE", what, type(x)) end
    local n = 0
    for _ in pairs(x) do n = n + 1 end
    if n ~= #t.keys then fail("CARRY_SHAPE_KEYS", what) end
    for i, k in ipairs(t.keys) do leaves_like(t.sub[i], x[k], out, what) end
    return
  end
  if x ~= t.const then fail("CARRY_CONSTANT", what, tostring(t.const)) end
end

--- A carry as (traced leaves, template); M.unpack_carry rebuilds it.
function M.pack_carry(x)
  local leaves = {}
  local t = flatten(x, leaves)
  return leaves, t
end
function M.unpack_carry(t, leaves) return unflatten(t, leaves) end

-- The next carry's leaves, as traced values, from a body's result.
local function next_leaves(tmpl, leaves, nxt, what)
  local out = {}
  leaves_like(tmpl, nxt, out, what)
  for j = 1, #out do
    if not is_value(out[j]) then out[j] = trace.lift(out[j], leaves[j]) end
  end
  return compat.unpack(out, 1, #leaves)
end

-- smem.run_scoped(allocs, fn) where fn(s) returns a loop's final carry (anything without one: init
-- nil): the carry leaves the scope as its traced leaves and is rebuilt on init's template.
local function scoped_carry(allocs, init, fn)
  local smem = require "mgpu.smem"
  local r = compat.pack(smem.run_scoped(allocs, function(s)
    local final = fn(s)
    if init == nil then return end
    local leaves = M.pack_carry(final)
    return compat.unpack(leaves, 1, #leaves)
  end))
  if init == nil then return end
  local _, tmpl = M.pack_carry(init)
  return M.unpack_carry(tmpl, r)
end

--- fori(lo, hi) with a carry of any shape: body(i, carry) -> carry.
--- Returns the final carry.  A loop known to run no steps is not emitted.
function M.fori(lo, hi, init, body, what)
  if known(lo) and known(hi) and hi <= lo then return init end
  local leaves = {}
  local tmpl = flatten(init, leaves)
  local res = compat.pack(ops.fori(lo, hi, function(i, ...)
    return next_leaves(tmpl, leaves, body(i, unflatten(tmpl, { ... })), what)
  end, compat.unpack(leaves, 1, #leaves)))
  return unflatten(tmpl, res)
end

--- while_loop with a carry of any shape: cond(carry) -> pred,
--- body(carry) -> carry.  Returns the final carry.
function M.while_(cond, body, init, what)
  local leaves = {}
  local tmpl = flatten(init, leaves)
  local res = compat.pack(ops.while_loop(function(...) return cond(unflatten(tmpl, { ... })) end, function(...)
    return next_leaves(tmpl, leaves, body(unflatten(tmpl, { ... })), what)
  end, compat.unpack(leaves, 1, #leaves)))
  return unflatten(tmpl, res)
end

-- -- Persistent loops ---------------------------------------------------------------

-- The flat index and size of the named axes (row-major over them).
local function collective(axes, what)
  if type(axes) == "string" then axes = { axes } end
  if type(axes) ~= "table" or #axes == 0 then fail("COLLECTIVE_AXES_NOT_GRID", what) end
  local idx, size = 0, 1
  for _, name in ipairs(axes) do
    local n = ops.axis_size(name)
    idx = M.add(M.mul(idx, n), ops.axis_index(name))
    size = M.mul(size, n)
  end
  return idx, size
end

--- mgpu.nd_loop(grid, { collective_axes, tiling, init_carry }, body): the
--- grid's points, in row-major order, split round robin over the blocks
--- along collective_axes (block w takes points w, w + W, w + 2W, ...).
--- body(info, carry) -> carry, where info = { index = {...} (0-based),
--- local_index, num_local_steps }.  With `tiling` the grid is walked tile by
--- tile (tiles of that shape, row-major inside); a traced grid dimension
--- must then be a multiple of its tile.  Returns the final carry.
function M.nd_loop(grid, opts, body)
  local what = "nd_loop"
  if type(opts) == "function" and body == nil then opts, body = {}, opts end
  if type(opts) ~= "table" then fail("ND_LOOP_OPTIONS", what) end
  if type(body) ~= "function" then fail("NOT_FUNCTION", what .. ": the body") end
  compat.check_keys(opts, { collective_axes = true, tiling = true, init_carry = true }, what)
  local g, total = M.grid(grid, what .. " grid")
  local walk = g
  if opts.tiling ~= nil then
    local tiling = opts.tiling
    if type(tiling) ~= "table" or #tiling ~= #g then fail("TILING_PER_AXIS", what, #g) end
    walk = {}
    for i = 1, #g do
      local t = compat.int(tiling[i], what .. " tiling[" .. i .. "]")
      if t < 1 then fail("BELOW_MINIMUM", what .. " tiling[" .. i .. "]", 1, t) end
      -- a traced grid dim must be a multiple of its tile (as in Pallas, not checked)
      if known(g[i]) and g[i] % t ~= 0 then fail("TILING_NOT_DIVIDING", what, i, t, i, g[i]) end
      walk[i], walk[#g + i] = M.div(g[i], t), t
    end
  end
  local w, nw = 0, 1
  if opts.collective_axes ~= nil then w, nw = collective(opts.collective_axes, what) end
  -- block w runs ceil((total - w) / nw) steps
  local steps = M.div(M.sub(M.add(total, nw), M.add(w, 1)), nw)
  local has_carry = opts.init_carry ~= nil
  local final = M.fori(0, steps, has_carry and opts.init_carry or {}, function(i, carry)
    local lin = M.add(w, M.mul(i, nw))
    local idx = M.unravel(lin, walk)
    if #walk ~= #g then
      local untiled = {}
      for d = 1, #g do untiled[d] = M.add(M.mul(idx[d], walk[#g + d]), idx[#g + d]) end
      idx = untiled
    end
    local info = { index = idx, local_index = i, num_local_steps = steps }
    if has_carry then return body(info, carry) end
    body(info)
    return carry
  end, what)
  if has_carry then return final end
end

-- -- Cluster launch control (Blackwell) ------------------------------------------------

--- mgpu.TryClusterCancelResult(n): SMEM for n answers of try_cluster_cancel
--- (u32 {n, 4}, 16 bytes each; {4} without n).
function M.TryClusterCancelResult(n)
  local smem = require "mgpu.smem"
  if n == nil then return smem.SMEM({ 4 }, "u32") end
  n = compat.int(n, "TryClusterCancelResult n")
  if n < 1 then fail("LESS_THAN_ONE", "TryClusterCancelResult n", n) end
  return smem.SMEM({ n, 4 }, "u32")
end

--- mgpu.try_cluster_cancel(result, barrier): ask to cancel the launch of a
--- cluster not yet started and take its work (Blackwell).  Every warpgroup
--- of every block calls it: each arrives on the barrier (num_arrivals = the
--- warpgroups), and the answer (16 bytes) lands in result in every block of
--- the cluster with the barrier's completion.
function M.try_cluster_cancel(result, barrier)
  for i, x in ipairs({ result, barrier }) do
    if not trace.is_ref(x) then fail("ARGUMENT_NOT_REF", "try_cluster_cancel", i, type(x)) end
  end
  trace.op("cluster_cancel", { result, barrier })
end

--- mgpu.query_cluster_cancel(result, grid_names) -> indices, ok: the
--- canceled cluster's index along each named grid axis (a table, in the
--- order of grid_names) and whether a cluster was canceled (a traced pred).
function M.query_cluster_cancel(result, grid_names)
  if not trace.is_ref(result) then fail("ARGUMENT_NOT_REF", "query_cluster_cancel", 1, type(result)) end
  if type(grid_names) == "string" then grid_names = { grid_names } end
  if type(grid_names) ~= "table" then fail("GRID_NAMES_MISSING", "query_cluster_cancel") end
  local spec = trace.tr().spec
  local res = compat.pack(trace.op("cancel_query", { result }))
  local idx = {}
  for i, name in ipairs(grid_names) do
    for j, n in ipairs(spec.grid_names or {}) do if n == name then idx[i] = res[j] end end
    if not idx[i] then
      fail("CANCEL_GRID_NAME", "query_cluster_cancel", tostring(name), table.concat(spec.grid_names or {}, ", "))
    end
  end
  return idx, res[res.n]
end

-- grid_names as a list, which must name every axis of the launch grid.
local function launch_names(grid_names, what)
  if type(grid_names) == "string" then grid_names = { grid_names } end
  if type(grid_names) ~= "table" or #grid_names == 0 then fail("GRID_NAMES_MISSING", what) end
  local spec = trace.tr().spec
  local named = {}
  for _, n in ipairs(grid_names) do named[n] = true end
  local launch = trace.tr().grid or {}
  for i = 1, #launch do
    local n = (spec.grid_names or {})[i]
    if not (n and named[n]) then
      fail("GRID_AXIS_UNNAMED", what, i - 1, n and ("'" .. n .. "'") or "unnamed")
    end
  end
  return grid_names
end

-- dynamic_scheduling_loop on Blackwell: every block starts with its own
-- place in the grid, and while it runs item n asks (cluster launch control)
-- for the next cluster to start instead, double-buffered: answers land in
-- two slots, a slot's request waits until every warpgroup of the cluster
-- has read its last answer ("used").
local function clc_loop(grid_names, opts, body, what)
  local barrier = require "mgpu.barrier"
  local spec = trace.tr().spec
  if opts.grid ~= nil then fail("CLC_GRID", what) end
  local nthreads = spec.num_threads or 1
  if nthreads > 1 and opts.thread_axis == nil then fail("CLC_THREAD_AXIS", what, nthreads) end
  if nthreads > 1 and opts.thread_axis ~= spec.thread_name then
    fail("NOT_THREAD_AXIS", what .. ": thread_axis", tostring(opts.thread_axis), tostring(spec.thread_name))
  end
  local cblocks = 1
  for _, n in ipairs(spec.cluster or {}) do cblocks = cblocks * n end
  if cblocks > 1 and opts.cluster_axes == nil then fail("CLC_CLUSTER_AXES", what, cblocks) end
  local has_carry = opts.init_carry ~= nil
  local used = cblocks > 1 and barrier.ClusterBarrier{ collective_axes = opts.cluster_axes, num_barriers = 2, num_arrivals = nthreads }
               or barrier.Barrier{ num_barriers = 2, num_arrivals = nthreads }
  return scoped_carry({
    result = M.TryClusterCancelResult(2),
    got = barrier.Barrier{ num_barriers = 2, num_arrivals = nthreads },
    used = used,
  }, opts.init_carry, function(s)
    local start = {}
    for i, n in ipairs(grid_names) do start[i] = ops.axis_index(n) end
    local init = { idx = start, ok = true, step = 0, c = has_carry and opts.init_carry or {} }
    local final = M.while_(function(st) return st.ok end, function(st)
      local slot = M.rem(st.step, 2)
      ops.when(M.lt(1, st.step), function() barrier.barrier_wait(s.used:at(slot)) end)
      M.try_cluster_cancel(s.result:at(slot), s.got:at(slot))
      local info, c = { index = st.idx, local_index = st.step }, st.c
      if has_carry then c = body(info, st.c) else body(info) end
      barrier.barrier_wait(s.got:at(slot))
      local idx, ok = M.query_cluster_cancel(s.result:at(slot), grid_names)
      barrier.barrier_arrive(s.used:at(slot))
      return { idx = idx, ok = ok, step = st.step + 1, c = c }
    end, init, what)
    -- the last (up to) two answers' reads were never awaited: await them, so every phase is
    M.fori(0, M.min(final.step, 2), {}, function(slot, carry)
      barrier.barrier_wait(s.used:at(slot))
      return carry
    end, what)
    return final.c
  end)
end

--- mgpu.dynamic_scheduling_loop(grid_names, { counter, grid, thread_axis,
--- cluster_axes, init_carry }, body): work items handed out at run time, so
--- that blocks that finish early take more.  On Blackwell (target sm_100a)
--- it is built on cluster launch control, as in Pallas: the launch grid is
--- the work, each cluster starts with its own item and, while it runs one,
--- cancels the launch of a cluster not yet started and takes its item next;
--- the blocks of a cluster take items together (cluster_axes: every cluster
--- axis name), counter is not used, and info has index and local_index.
--- On Hopper (no cluster launch control)
--- every block claims items from a GMEM counter with atomics:
---   counter: a GMEM i32 ref of at least 2 elements (its first two are
---     used), zero at every launch; the last block to finish sets it back
---     to zero, so launches can follow each other (not run concurrently)
---     with one counter.  Every loop of a kernel needs its own counter: a
---     second loop on the same one would run nothing (refused when both are
---     known at trace time).  Interpreted, a counter taken from a kernel
---     argument at a constant offset is checked to be zero at launch.
---   grid_names: the launch-grid axes (all of them); without `grid` their
---     sizes are the work (Pallas' form: blocks that find no work left
---     exit), with `grid` (sizes, an mgpu extension) the blocks are
---     persistent workers and `grid` is the work.
---   thread_axis: with several warpgroups, the last one along it claims
---     for the block and publishes each item through SMEM (two slots, so
---     the claim of the next item overlaps the current one).
--- body(info, carry) -> carry with info = { index = {...} (row-major over
--- the work, 0-based), local_index (the block's count of items so far),
--- is_last (a traced pred: no further item for this block) }.  Returns the
--- final carry.
-- The ref a chain of views starts from and ref r's element offset in it,
-- row-major; the offset is nil when a start is traced or the chain
-- transposes or reshapes.
local function origin(r)
  local off = 0
  while rawget(r, "from") do
    local f = rawget(r, "from")
    if f.op ~= "view" then off = nil
    elseif off then
      local stride = 1
      for d = #f.ref.shape, 1, -1 do
        local start = f.ints[3 * d - 1]   -- (kind, start, size) per index, dims past the indices whole
        if start == trace.DYNAMIC then off = nil; break end
        if start then off = off + start * stride end
        stride = stride * f.ref.shape[d]
      end
    end
    r = f.ref
  end
  return r, off
end

-- Two loops on one counter: the second's blocks would find every item taken
-- until the first's last block resets it, and run nothing.  Refused when
-- both counters are known to overlap; a counter read straight from a kernel
-- argument is noted for the interpreter's check that it is zero at launch.
local function claim_counter(counter, what)
  local t = trace.tr()
  local root, off = origin(counter)
  t.dyn_counters = t.dyn_counters or {}
  for _, c in ipairs(t.dyn_counters) do
    if c.root == root.id and off and c.off and off < c.off + 2 and c.off < off + 2 then
      fail("SHARED_COUNTER", what, c.where)
    end
  end
  t.dyn_counters[#t.dyn_counters + 1] = { root = root.id, off = off, where = compat.where(), slot = rawget(root, "slot") }
end

function M.dynamic_scheduling_loop(grid_names, opts, body)
  local what = "dynamic_scheduling_loop"
  if type(opts) == "function" and body == nil then opts, body = {}, opts end
  if type(opts) ~= "table" then fail("DYNAMIC_LOOP_OPTIONS", what) end
  if type(body) ~= "function" then fail("NOT_FUNCTION", what .. ": the body") end
  compat.check_keys(opts, { counter = true, grid = true, thread_axis = true, init_carry = true, cluster_axes = true }, what)
  if trace.tr().target == "sm_100a" then return clc_loop(launch_names(grid_names, what), opts, body, what) end
  if opts.cluster_axes ~= nil then fail("NO_CLUSTER_AXES", what) end
  local counter = opts.counter
  if counter == nil then
    fail("NO_COUNTER", what)
  end
  if not trace.is_ref(counter) or counter.space ~= "gmem" or counter.dtype ~= "i32" or #counter.shape ~= 1 or
     counter.shape[1] < 2 then
    fail("BAD_COUNTER", what)
  end
  claim_counter(counter, what)
  grid_names = launch_names(grid_names, what)
  local spec = trace.tr().spec
  local cluster_blocks = 1
  for _, n in ipairs(spec.cluster or {}) do cluster_blocks = cluster_blocks * n end
  if cluster_blocks > 1 then
    fail("NO_CLUSTER_SCHEDULING", what)
  end
  local workers = 1
  local sizes = {}
  for i, n in ipairs(grid_names) do
    sizes[i] = ops.axis_size(n)
    workers = M.mul(workers, sizes[i])
  end
  local work, total = sizes, workers
  if opts.grid ~= nil then work, total = M.grid(opts.grid, what .. " grid") end
  local nthreads = spec.num_threads or 1
  local has_carry = opts.init_carry ~= nil
  local c_next, c_done = counter:at(0), counter:at(1)
  local function claim() return ops.atomic_add(c_next, 1) end
  local function finish()   -- the last block out resets the counter for the next launch
    local done = ops.atomic_add(c_done, 1)
    ops.when(ops.eq(done, M.sub(workers, 1)), function()
      ops.atomic_exchange(c_next, 0)
      ops.atomic_exchange(c_done, 0)
    end)
  end
  local function step(j, cur, nxt, carry)
    local info = { index = M.unravel(cur, work), local_index = j, is_last = ops.le(total, nxt) }
    if has_carry then return body(info, carry) end
    body(info)
    return carry
  end
  -- the final carry and the number of items run
  local function loop(first, next_of)
    local init = { j = 0, cur = first, c = has_carry and opts.init_carry or {} }
    local final = M.while_(function(s) return ops.lt(s.cur, total) end, function(s)
      local nxt = next_of(s.j)
      return { j = s.j + 1, cur = nxt, c = step(s.j, s.cur, nxt, s.c) }
    end, init, what)
    return final.c, final.j
  end
  if nthreads == 1 then
    local final = loop(claim(), function() return claim() end)
    finish()
    if has_carry then return final end
    return
  end
  if opts.thread_axis == nil then
    fail("THREAD_AXIS_MISSING", what, nthreads)
  end
  if opts.thread_axis ~= spec.thread_name then
    fail("NOT_THREAD_AXIS", what .. ": thread_axis", tostring(opts.thread_axis), tostring(spec.thread_name))
  end
  local smem, barrier, copy = require "mgpu.smem", require "mgpu.barrier", require "mgpu.copy"
  local wg = ops.axis_index(opts.thread_axis)
  local claimer = ops.eq(wg, nthreads - 1)
  return scoped_carry({
    ids = smem.SMEM({ 2 }, "i32"),
    claimed = barrier.Barrier{ num_barriers = 2 },
    used = barrier.Barrier{ num_barriers = 2, num_arrivals = nthreads - 1 },
    drained = barrier.Barrier{},
  }, opts.init_carry, function(s)
    -- Item n sits in slot n % 2; the claimer rewrites a slot once the others have read it.
    -- commit_smem's warpgroup barrier keeps every thread's SMEM access before the arrival,
    -- also when the kernel turns automatic barriers off.
    local function publish(n)
      local slot = M.rem(n, 2)
      ops.when(M.lt(1, n), function() barrier.barrier_wait(s.used:at(slot)) end)
      local id = claim()
      s.ids:at(slot):store(id)
      copy.commit_smem()
      barrier.barrier_arrive(s.claimed:at(slot))
      return id
    end
    local function read(n)
      local slot = M.rem(n, 2)
      barrier.barrier_wait(s.claimed:at(slot))
      local id = s.ids:at(slot):load()
      copy.commit_smem()
      barrier.barrier_arrive(s.used:at(slot))
      return id
    end
    local function item(n) return ops.cond(claimer, function() return publish(n) end, function() return read(n) end) end
    local final, steps = loop(item(0), function(j) return item(M.add(j, 1)) end)
    -- Items 0..steps were published; the reads of the last two were never awaited.  The
    -- claimer awaits them (so every phase is awaited and the loop can run again), and the
    -- others stay in the scope until it has: its barriers live in the scope's SMEM.
    ops.when(claimer, function()
      ops.when(M.lt(0, steps), function() barrier.barrier_wait(s.used:at(M.rem(M.sub(steps, 1), 2))) end)
      barrier.barrier_wait(s.used:at(M.rem(steps, 2)))
      finish()
      barrier.barrier_arrive(s.drained)
    end)
    ops.when(ops.ne(wg, nthreads - 1), function() barrier.barrier_wait(s.drained) end)
    return final
  end)
end

--- mgpu.planar_snake(lin, {m, n}, minor_dim, tile_width) -> i, j: a linear
--- index mapped into an (m, n) grid so that neighbours share rows and
--- columns: the minor dim (0 or 1) is cut into strips of tile_width, each
--- strip is walked along the major dim, and every other strip backwards.
--- A last, narrower strip covers what the full strips leave.  A constant
--- index must lie in [0, m*n); a traced one outside it gives a point
--- outside the grid (undefined: GMEM accesses through it are masked by the
--- bounds checks, SMEM ones the interpreter reports).
function M.planar_snake(lin, shape, minor_dim, tile_width)
  local what = "planar_snake"
  if type(shape) ~= "table" or #shape ~= 2 then fail("SNAKE_SHAPE", what) end
  minor_dim = compat.int(minor_dim, what .. " minor_dim")
  if minor_dim ~= 0 and minor_dim ~= 1 then fail("SNAKE_MINOR_DIM", what, minor_dim) end
  tile_width = compat.int(tile_width, what .. " tile_width")
  if tile_width < 1 then fail("LESS_THAN_ONE", what .. ": tile_width", tile_width) end
  local s1, s2 = M.count(shape[1], what .. " shape[1]"), M.count(shape[2], what .. " shape[2]")
  local major = minor_dim == 0 and s2 or s1
  local minor = minor_dim == 0 and s1 or s2
  if not known(lin) and not is_value(lin) then fail("SNAKE_INDEX", what) end
  if known(lin) then
    lin = compat.int(lin, what .. " index")
    if known(s1) and known(s2) and (lin < 0 or lin >= s1 * s2) then
      fail("SNAKE_INDEX_RANGE", what, lin, s1, s2, s1 * s2 - 1)
    end
  end
  local strip = M.div(lin, tile_width * major)   -- (tile_width * major: folds when both are known)
  local function coords(l, width)
    local mi = M.add(M.mul(strip, tile_width), M.rem(l, width))
    local ma = M.rem(M.div(l, width), major)
    local odd = M.rem(strip, 2)
    if known(odd) then
      if odd == 1 then ma = M.sub(M.sub(major, 1), ma) end
    else
      ma = ops.select(ops.eq(odd, 0), trace.lift(ma, odd), M.sub(M.sub(major, 1), ma))
    end
    return mi, ma
  end
  local nfull = M.div(minor, tile_width)
  local full_elems = M.mul(M.mul(nfull, tile_width), major)
  local mi, ma = coords(lin, tile_width)
  local rest = M.sub(minor, M.mul(nfull, tile_width))
  if not (known(rest) and rest == 0) then
    local pmi, pma = coords(M.sub(lin, full_elems), M.max(rest, 1))
    local full = M.lt(lin, full_elems)
    if full == false then mi, ma = pmi, pma
    elseif full ~= true then
      mi = ops.select(full, trace.lift(mi, full_elems), pmi)
      ma = ops.select(full, trace.lift(ma, full_elems), pma)
    end
  end
  if minor_dim == 0 then return mi, ma end
  return ma, mi
end

return M
