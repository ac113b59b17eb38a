--[[
mgpu.smem -- shared-memory scratch: allocation specs, their transforms, and
scopes (Pallas' plgpu.SMEM, TilingTransform, SwizzleTransform,
TransposeTransform, find_swizzle, run_scoped, transpose_ref).

  local T = mgpu.transforms
  local xf = { T.tiling{8, 64}, T.swizzle(128) }
  scratch_shapes = { mgpu.SMEM({64, 128}, "bf16", { transforms = xf }) }
  mgpu.run_scoped(function(buf) ... end, mgpu.SMEM({128}, "f32"))

Every allocation starts on a 1024-byte boundary; a kernel's SMEM is checked
against the device limit before any PTX is produced.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local context = require "mgpu.context"
local trace = require "mgpu.trace"

local M = {}
local fail = compat.fail

-- -- Transforms -----------------------------------------------------------------

local Transform = {}
Transform.__index = Transform
Transform.__tostring = function(t) return "mgpu.transforms." .. t.text end

-- "8,64" from a table of integers of at least `lo` each.
local function int_list(x, what, lo)
  if type(x) == "number" then x = { x } end
  if type(x) ~= "table" or #x == 0 then fail("NOT_INTEGERS", what) end
  local parts = {}
  for i = 1, #x do
    local v = compat.int(x[i], what .. "[" .. i .. "]")
    if v < lo then fail("ITEM_BELOW_MINIMUM", what, i, lo, v) end
    parts[i] = string.format("%d", v)
  end
  return table.concat(parts, ",")
end

M.transforms = {
  --- tiling{t0, t1, ...}: split the trailing dims into tiles stored contiguously.
  tiling = function(tile) return setmetatable({ text = "tiling(" .. int_list(tile, "tiling", 1) .. ")" }, Transform) end,
  --- swizzle(bytes): 32, 64 or 128 (16 = none); the minor dim must be exactly that many bytes.
  swizzle = function(bytes)
    bytes = compat.int(bytes, "swizzle")
    if bytes ~= 16 and bytes ~= 32 and bytes ~= 64 and bytes ~= 128 then
      fail("SWIZZLE_BYTES", bytes)
    end
    return setmetatable({ text = "swizzle(" .. bytes .. ")" }, Transform)
  end,
  --- transpose{p0, p1, ...}: store dim p[j] of the array as physical dim j (0-based).
  transpose = function(perm) return setmetatable({ text = "transpose(" .. int_list(perm, "transpose", 0) .. ")" }, Transform) end,
}
M.TilingTransform, M.SwizzleTransform, M.TransposeTransform =
  M.transforms.tiling, M.transforms.swizzle, M.transforms.transpose

function M.is_transform(x) return getmetatable(x) == Transform end

--- The largest swizzle (128, 64 or 32 bytes) dividing a minor dimension of
--- `bits` bits, or 16 (no swizzle) when none does.
function M.find_swizzle(bits)
  bits = compat.int(bits, "find_swizzle bits")
  for _, s in ipairs({ 128, 64, 32 }) do
    if bits > 0 and bits % (8 * s) == 0 then return s end
  end
  return 16
end

local function chain_text(list)
  if list == nil then return "" end
  if M.is_transform(list) then list = { list } end
  if type(list) ~= "table" then fail("TRANSFORMS_NOT_TABLE") end
  local parts = {}
  for i = 1, #list do
    if not M.is_transform(list[i]) then
      fail("BAD_TRANSFORM", i, type(list[i]))
    end
    parts[i] = list[i].text
  end
  return table.concat(parts, ";")
end

-- -- Allocation specs ---------------------------------------------------------------

local Spec = {}
Spec.__index = Spec
Spec.__tostring = function(s)
  return string.format("mgpu.SMEM(%s, %s%s)", compat.shape_str(s.shape), s.dtype,
                       s.transforms ~= "" and (", " .. s.transforms) or "")
end

--- mgpu.SMEM(shape, dtype, { transforms = {...} }): an SMEM scratch buffer,
--- allocated by scratch_shapes or mgpu.run_scoped.
function M.SMEM(shape, dtype, opts)
  dtype = context.memory_dtype(dtype, "SMEM")
  if opts ~= nil and type(opts) ~= "table" then fail("SMEM_OPTIONS") end
  for k in pairs(opts or {}) do
    if k ~= "transforms" then fail("UNKNOWN_OPTION", "SMEM", tostring(k)) end
  end
  return setmetatable({ shape = compat.shape(shape, "SMEM shape"), dtype = dtype,
                        transforms = chain_text(opts and opts.transforms), where = compat.where() }, Spec)
end

--- Allocate an SMEM spec in the kernel being traced; returns its ref.  The
--- allocation's location is where the spec was made (errors such as SMEM
--- over the limit point there).
Spec.__alloc = function(spec)
  local ints = { trace.dtype_code(spec.dtype) }
  for i = 1, #spec.shape do ints[i + 1] = spec.shape[i] end
  local ref = trace.op("smem_alloc", nil, ints, nil, spec.transforms, spec.where)
  rawset(ref, "spec", spec)   -- for descriptions in errors (mgpu.refcarry)
  return ref
end

--- Allocation specs are tables whose metatable has __alloc(spec) -> ref:
--- mgpu.SMEM, mgpu.Barrier, mgpu.ClusterBarrier, mgpu.ACC.
function M.is_spec(x)
  local mt = getmetatable(x)
  return type(mt) == "table" and mt.__alloc ~= nil
end
function M.alloc(spec) return getmetatable(spec).__alloc(spec) end

--- The keys of a table of specs in the order alloc_tree allocates them
--- (a deterministic trace; modules that make parameters for some specs
--- before tracing walk them in this order too).
function M.tree_keys(specs)
  local keys = {}
  for k in pairs(specs) do keys[#keys + 1] = k end
  table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
  return keys
end

--- Allocate a table of specs (nested tables allowed) in key order; returns
--- a table of refs of the same shape.
function M.alloc_tree(specs, what)
  local keys = M.tree_keys(specs)
  local out = {}
  for _, k in ipairs(keys) do
    local v = specs[k]
    if M.is_spec(v) then out[k] = M.alloc(v)
    elseif type(v) == "table" and getmetatable(v) == nil then out[k] = M.alloc_tree(v, what)
    else fail("BAD_SCRATCH_ENTRY", what, tostring(k)) end
  end
  return out
end

-- -- Scopes -------------------------------------------------------------------------

--- mgpu.run_scoped(fn, spec, ...) calls fn(ref, ...) with freshly allocated
--- SMEM that ends with the scope; mgpu.run_scoped({ name = spec, ... }, fn)
--- calls fn with a table of refs of the same shape (nested tables too).  Returns fn's results
--- (scalars and arrays; refs cannot escape).
function M.run_scoped(a, ...)
  local fn, specs, named
  local b = ...
  if type(a) == "function" then fn, specs = a, compat.pack(...)   -- (no allocations is fine)
  elseif type(a) == "table" and not M.is_spec(a) and type(b) == "function" then fn, named = b, a
  else fail("RUN_SCOPED_USAGE") end
  trace.op("scoped", {})
  local args
  if named then
    args = { M.alloc_tree(named, "run_scoped"), n = 1 }
  else
    args = { n = specs.n }
    for i = 1, specs.n do
      if not M.is_spec(specs[i]) then fail("RUN_SCOPED_ALLOCATION", i) end
      args[i] = M.alloc(specs[i])
    end
  end
  local r = compat.pack(fn(compat.unpack(args, 1, args.n)))
  local out = {}
  for i = 1, r.n do
    if trace.is_ref(r[i]) then fail("RUN_SCOPED_RESULT_REF", i) end
    out[i] = trace.is_value(r[i]) and r[i] or trace.lift(r[i])
  end
  return trace.op("yield", out)
end

--- A view of ref with its dims permuted: dim j of the view is dim perm[j]
--- (0-based) of ref.  A transposed SMEM ref is how an MMA operand is marked
--- MN-major.
function M.transpose_ref(ref, perm)
  if not trace.is_ref(ref) then fail("TRANSPOSE_REF_NOT_REF") end
  return ref:transpose(perm)
end

--- The linear rank (%cluster_ctarank, cluster axis 0 fastest) of the cluster's block whose index
--- along each axis of block_id is given there (numbers or traced integers) and this block's along
--- the others: a traced i32.  `what` names the caller in errors.
function M.cluster_rank(block_id, what)
  local spec = trace.tr().spec
  local names, sizes = spec.cluster_names or {}, spec.cluster or {}
  local axis = {}
  for i, n in ipairs(names) do axis[n] = i end
  for n in pairs(block_id) do
    if not axis[n] then fail("CLUSTER_AXIS_UNKNOWN", what, tostring(n), #names > 0 and table.concat(names, ", ") or "none") end
  end
  local rank, stride = nil, 1
  for i, n in ipairs(names) do
    local idx = block_id[n]
    if idx == nil then
      idx = trace.op("cluster_idx", {}, { i - 1 })
    elseif type(idx) == "number" then
      if idx ~= math.floor(idx) or idx < 0 or idx >= sizes[i] then fail("CLUSTER_INDEX_RANGE", what, tostring(idx), n, sizes[i] - 1) end
      idx = trace.const(idx, "i32")
    elseif trace.is_value(idx) and idx.kind == "scalar" and idx.dtype:match("^[iu]") then
      if idx.dtype ~= "i32" then idx = idx:astype("i32") end
    else
      fail("CLUSTER_INDEX_KIND", what, n)
    end
    local term = stride == 1 and idx or idx * stride
    rank = rank and rank + term or term
    stride = stride * sizes[i]
  end
  return rank or trace.const(0, "i32")
end

--- The same view of SMEM ref `ref` in another block of the cluster
--- (distributed shared memory; Pallas' plgpu.cluster_ref): block_id maps
--- cluster axis names to that block's index along them (numbers or traced
--- integers); axes left out keep this block's index.  Only loads, stores and
--- views take the result.  Order the accesses with an mgpu.ClusterBarrier: in
--- a kernel that uses cluster_ref its arrivals release, and its waits
--- acquire, at cluster scope, so a write before an arrival is seen by a read
--- after the matching wait in any block of the cluster.
function M.cluster_ref(ref, block_id)
  if not trace.is_ref(ref) then fail("CLUSTER_REF_NOT_REF") end
  if ref.space ~= "smem" then fail("CLUSTER_REF_NOT_SMEM", ref.space) end
  if type(block_id) ~= "table" then fail("CLUSTER_REF_BLOCK_ID") end
  return trace.op("cluster_ref", { ref, M.cluster_rank(block_id, "cluster_ref") })
end

return M
