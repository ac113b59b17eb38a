--[[
mgpu.barrier -- mbarriers in SMEM (Pallas' plgpu.Barrier, ClusterBarrier,
barrier_arrive, barrier_wait).

  scratch_shapes = { mgpu.Barrier{ num_arrivals = 1, num_barriers = 4 } }
  mgpu.barrier_wait(bars:at(slot))

A barrier completes a phase when it has received num_arrivals arrivals (one
per warpgroup calling barrier_arrive, or per TMA copy) and every byte its
copies announced.  Each warpgroup tracks the phase it expects next, so
every warpgroup that waits on a barrier must wait on each of its
completions.  Barriers live for the whole kernel and are initialised when it
starts.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"

local M = {}
local fail = compat.fail

local Spec = {}
Spec.__index = Spec
Spec.__tostring = function(s)
  return string.format("mgpu.%s{num_barriers = %d, num_arrivals = %d}", s.cluster_axes and "ClusterBarrier" or "Barrier",
                       s.num_barriers, s.num_arrivals)
end

local function options(opts, what, extra)
  opts = opts or {}
  if type(opts) ~= "table" then fail("EXPECTS_OPTIONS", what) end
  for k in pairs(opts) do
    if k ~= "num_arrivals" and k ~= "num_barriers" and k ~= "orders_tensor_core" and k ~= extra then
      fail("UNKNOWN_OPTION", what, tostring(k))
    end
  end
  local n = compat.int(opts.num_barriers or 1, what .. " num_barriers")
  local a = compat.int(opts.num_arrivals or 1, what .. " num_arrivals")
  if n < 1 or n > 32 then fail("BARRIER_COUNT", what, n) end
  if a < 1 then fail("BARRIER_ARRIVALS", what, a) end
  return n, a
end

--- mgpu.Barrier{ num_arrivals = 1, num_barriers = 1, orders_tensor_core = false }:
--- an array of mbarriers; orders_tensor_core (Blackwell) fences tcgen05 work
--- before each arrival and after each wait (barriers MMAs commit to, and
--- those between TMEM readers and writers).
function M.Barrier(opts)
  local n, a = options(opts, "Barrier")
  return setmetatable({ num_barriers = n, num_arrivals = a, orders_tensor_core = opts and opts.orders_tensor_core and true,
                        where = compat.where() }, Spec)
end

--- mgpu.ClusterBarrier{ collective_axes = {...}, num_arrivals, num_barriers }:
--- receives arrivals from every block of the cluster along those axes.
function M.ClusterBarrier(opts)
  local n, a = options(opts, "ClusterBarrier", "collective_axes")
  if opts == nil or opts.collective_axes == nil then fail("REQUIRED", "ClusterBarrier: collective_axes") end
  return setmetatable({ num_barriers = n, num_arrivals = a, cluster_axes = opts.collective_axes,
                        orders_tensor_core = opts.orders_tensor_core and true, where = compat.where() }, Spec)
end

--- The bit mask of cluster axes named by `axes` (a name or a table of names);
--- errors are located at `where` when given (the spec's line), else at the caller.
function M.cluster_mask(axes, what, where)
  local function fail(...) compat.fail_at(where, ...) end
  if axes == nil then return 0 end
  if type(axes) == "string" then axes = { axes } end
  if type(axes) ~= "table" then fail("CLUSTER_AXES_NOT_NAMES", what) end
  local names = trace.tr().spec.cluster_names or {}
  local mask, seen = 0, {}
  for _, a in ipairs(axes) do
    local found = false
    for i, n in ipairs(names) do
      if n == a then
        if not seen[i] then mask = mask + 2 ^ (i - 1) end   -- (no bit operators in LuaJIT)
        seen[i], found = true, true
      end
    end
    if not found then
      fail("NOT_CLUSTER_AXIS", what, tostring(a), #names > 0 and table.concat(names, ", ") or "none")
    end
  end
  return math.floor(mask)
end

Spec.__alloc = function(s)
  local mask = s.cluster_axes and M.cluster_mask(s.cluster_axes, "ClusterBarrier", s.where) or 0
  local ints = { s.num_barriers, s.num_arrivals, mask }
  if s.orders_tensor_core then ints[4] = 1 end   -- (Hopper kernels' IR stays as it was)
  return trace.op("barrier_alloc", nil, ints, nil, nil, s.where)
end

local function one(b, what)
  if not trace.is_ref(b) then fail("NOT_BARRIER", what, type(b)) end
  return b
end

--- One arrival on the barrier from this warpgroup (after a warpgroup
--- barrier, so its SMEM writes are done).
function M.barrier_arrive(b) trace.op("barrier_arrive", { one(b, "barrier_arrive") }) end

--- Wait until the barrier completes the phase this warpgroup expects.
function M.barrier_wait(b) trace.op("barrier_wait", { one(b, "barrier_wait") }) end

return M
