--[[
mgpu.blockspec -- which block of an array a pipeline step works on (Pallas'
BlockSpec, Element, squeezed dims, GMEM / SMEM memory spaces).

  mgpu.BlockSpec{ {128, 64}, function(i, k) return i, k end, transforms = xf }
  mgpu.BlockSpec{ {mgpu.squeezed, 256}, function(b, j) return b, j end }   -- dim 1 squeezed
  mgpu.BlockSpec{ {mgpu.Element(64), 128}, function(i) return i * 48, 0 end } -- dim 1 by element offset

An index map takes the grid indices as arguments (0-based, one per grid
axis) and returns one index per array dim: a block number for blocked dims,
the element for squeezed dims, the element offset for Element dims.  A block
reaching past the array's end is zero-filled when loaded and clipped when
stored (the copy engine does both).
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"

local M = {}
local fail = compat.fail

--- Memory spaces for BlockSpec.memory_space: mgpu.GMEM, or mgpu.SMEM (the
--- same function that allocates SMEM scratch, as in Pallas).
--- Called, mgpu.GMEM(shape, dtype) is GMEM scratch for scratch_shapes: an
--- array the kernel keeps between launches (zero at the first, then what the
--- last launch left), for workspaces such as a matmul's partial tiles.
local Scratch = { __hidden = true }
Scratch.__index = Scratch
Scratch.__alloc = function(spec) return require("mgpu.distributed").take_hidden(spec, "GMEM_SCRATCH_IN_RUN_SCOPED") end
M.GMEM = setmetatable({}, {
  __tostring = function() return "mgpu.GMEM" end,
  __call = function(_, shape, dtype)
    dtype = require("mgpu.context").memory_dtype(dtype, "GMEM")
    return setmetatable({ shape = compat.shape(shape, "GMEM shape"), dtype = dtype, where = compat.where() }, Scratch)
  end })
local function space_of(x)
  if x == nil or x == "SMEM" or x == require("mgpu.smem").SMEM then return "SMEM" end
  if x == M.GMEM or x == "GMEM" then return "GMEM" end
  if x == "TMEM" or x == require("mgpu.tcgen05").TMEM then fail("TMEM_BLOCKSPEC") end
  return nil
end
M.MemorySpace = { GMEM = M.GMEM, SMEM = require("mgpu.smem").SMEM, TMEM = require("mgpu.tcgen05").TMEM }

--- A block dim of size 1 that the body does not see (Pallas' None / pl.squeezed).
M.squeezed = setmetatable({}, { __tostring = function() return "mgpu.squeezed" end })

local Element = {}
Element.__index = Element
Element.__tostring = function(e) return string.format("mgpu.Element(%d)", e.size) end

--- A block dim of `n` elements indexed by element offset instead of block number.
function M.Element(n)
  n = compat.int(n, "Element size")
  if n < 1 then fail("LESS_THAN_ONE", "Element size", n) end
  return setmetatable({ size = n }, Element)
end

local Spec = {}
Spec.__index = Spec
Spec.__tostring = function(s)
  local parts = {}
  for i = 1, s.nkeys do
    local d = s.block_shape[i]
    parts[i] = d == nil and "mgpu.squeezed" or tostring(d)
  end
  return string.format("mgpu.BlockSpec{%s}", s.block_shape and ("{" .. table.concat(parts, ", ") .. "}") or "whole array")
end

local known = { block_shape = true, index_map = true, memory_space = true, transforms = true, delay_release = true,
                collective_axes = true, [1] = true, [2] = true }

--- mgpu.BlockSpec{ block_shape, index_map, memory_space = "SMEM"|"GMEM",
--- transforms, delay_release, collective_axes }.  block_shape and
--- index_map may also be given positionally.  Without block_shape the block
--- is the whole array; without index_map every index is 0.
function M.BlockSpec(opts)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then fail("EXPECTS_OPTIONS", "BlockSpec") end
  compat.check_keys(opts, known, "BlockSpec")
  local shape = opts.block_shape or opts[1]
  local imap = opts.index_map or opts[2]
  local s = setmetatable({ where = compat.where() }, Spec)
  if shape ~= nil then
    if type(shape) ~= "table" then fail("NOT_SIZES", "BlockSpec: block_shape") end
    local nkeys = 0
    for k in pairs(shape) do
      if type(k) ~= "number" or k < 1 or k ~= math.floor(k) then fail("BLOCK_SHAPE_NOT_LIST") end
      nkeys = math.max(nkeys, k)
    end
    local dims = {}
    for i = 1, nkeys do
      local d = shape[i]
      if d == nil or d == M.squeezed then dims[i] = nil
      elseif getmetatable(d) == Element then dims[i] = d
      else
        dims[i] = compat.int(d, "BlockSpec block_shape[" .. i .. "]")
        if dims[i] < 1 then fail("ITEM_LESS_THAN_ONE", "BlockSpec: block_shape", i, dims[i]) end
      end
    end
    s.block_shape, s.nkeys = dims, nkeys
  end
  if imap ~= nil and type(imap) ~= "function" then fail("NOT_FUNCTION", "BlockSpec: index_map") end
  s.index_map = imap
  local space = space_of(opts.memory_space)
  if not space then fail("BLOCKSPEC_SPACE", tostring(opts.memory_space)) end
  s.memory_space = space
  s.transforms = opts.transforms
  s.delay_release = opts.delay_release and compat.int(opts.delay_release, "BlockSpec delay_release")
  if s.delay_release and s.delay_release < 0 then fail("BLOCKSPEC_DELAY_NEGATIVE") end
  s.collective_axes = opts.collective_axes
  return s
end

function M.is_spec(x) return getmetatable(x) == Spec end

-- -- Trees of specs (Pallas' pytrees) -------------------------------------------------

-- The keys of a plain table in a fixed order: list entries by index, then
-- the other keys sorted by their text.
local function tree_keys(t)
  local keys, named = {}, {}
  for k in pairs(t) do
    if type(k) == "number" and k >= 1 and k == math.floor(k) and k <= #t then keys[#keys + 1] = k
    else named[#named + 1] = k end
  end
  table.sort(keys)
  table.sort(named, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(named) do keys[#keys + 1] = k end
  return keys
end

local function tree_node(x, flat, what)
  if M.is_spec(x) then flat[#flat + 1] = x; return { leaf = #flat } end
  if type(x) ~= "table" or getmetatable(x) ~= nil then fail("NOT_BLOCKSPEC", what, #flat + 1, type(x)) end
  local node = { keys = tree_keys(x), sub = {} }
  for i, k in ipairs(node.keys) do node.sub[i] = tree_node(x[k], flat, what) end
  return node
end

--- Specs given as one spec, or a table of specs and tables of specs nested
--- to any depth: (the specs in order, the tree).  nil: no specs.  A tree's
--- top-level entries stand for the pipeline's positional arguments.
function M.tree(specs, what)
  if specs == nil then return {}, { top = {} } end
  if M.is_spec(specs) then return { specs }, { top = { { leaf = 1 } } } end
  if type(specs) ~= "table" or getmetatable(specs) ~= nil then fail("NOT_BLOCKSPECS", what) end
  local flat, top = {}, {}
  for i = 1, #specs do top[i] = tree_node(specs[i], flat, what) end
  for k in pairs(specs) do
    if type(k) ~= "number" or k < 1 or k > #specs or k ~= math.floor(k) then fail("NOT_BLOCKSPECS", what) end
  end
  return flat, { top = top }
end

local function leaves_of(node, x, out, what)
  if node.leaf then out[#out + 1] = x; return end
  if type(x) ~= "table" or getmetatable(x) ~= nil then fail("SPEC_TREE_ARGUMENT", what, "a table", type(x)) end
  local n = 0
  for _ in pairs(x) do n = n + 1 end
  if n ~= #node.keys then fail("SPEC_TREE_ARGUMENT", what, #node.keys .. " entries", n .. " entries") end
  for i, k in ipairs(node.keys) do leaves_of(node.sub[i], x[k], out, what) end
end

--- The leaves of the arguments args[first..], one per top-level entry of
--- `tree`, each nested as its specs are.
function M.tree_leaves(tree, args, first, what)
  local out = {}
  for i, node in ipairs(tree.top) do leaves_of(node, args[first + i - 1], out, what .. " argument " .. i) end
  return out
end

local function rebuild(node, flat)
  if node.leaf then return flat[node.leaf] end
  local x = {}
  for i, k in ipairs(node.keys) do x[k] = rebuild(node.sub[i], flat) end
  return x
end

--- Appends to `out` the top-level entries of `tree` rebuilt from the flat
--- values (one per spec), nested as the specs are.
function M.tree_build(tree, flat, out)
  for _, node in ipairs(tree.top) do out[#out + 1] = rebuild(node, flat) end
  return out
end

--- An error unless index map `fn` takes `ngrid` arguments (vararg maps pass),
--- located at `where` (the BlockSpec's line) when given.
function M.check_arity(fn, ngrid, what, where)
  local info = debug.getinfo(fn, "u")
  if info and info.nparams and not info.isvararg and info.nparams ~= ngrid then
    compat.fail_at(where, "INDEX_MAP_ARITY", what, info.nparams, info.nparams == 1 and "" or "s", ngrid)
  end
end

-- -- Plans: a spec applied to one array -------------------------------------------

local Plan = {}
Plan.__index = Plan

--- The spec applied to `ref` (a GMEM ref) for a grid of `ngrid` axes: per
--- dim { kind = "block"|"squeezed"|"element", size }, the SMEM block shape
--- (squeezed dims removed) and the index map.  `what` names the operand.
function M.plan(spec, ref, ngrid, what)
  if not trace.is_ref(ref) then fail("NOT_REF", what, type(ref)) end
  local rank = #ref.shape
  local dims, block = {}, {}
  if spec.block_shape then
    if spec.nkeys > rank then
      fail("BLOCK_RANK_ABOVE", what, spec.nkeys, compat.shape_str(ref.shape), rank)
    end
    if spec.nkeys < rank and spec.block_shape[spec.nkeys] ~= nil then
      fail("BLOCK_RANK_BELOW", what, spec.nkeys, compat.shape_str(ref.shape), rank)
    end
  end
  for i = 1, rank do
    local d
    if spec.block_shape then d = spec.block_shape[i] else d = ref.shape[i] end
    if d == nil then dims[i] = { kind = "squeezed", size = 1 }
    elseif getmetatable(d) == Element then dims[i] = { kind = "element", size = d.size }
    else dims[i] = { kind = "block", size = d } end
    if dims[i].kind ~= "squeezed" then block[#block + 1] = dims[i].size end
  end
  if #block == 0 then fail("BLOCK_ALL_SQUEEZED", what) end
  local imap = spec.index_map
  if imap then M.check_arity(imap, ngrid, what, spec.where) end
  return setmetatable({ spec = spec, ref = ref, dims = dims, block = block, index_map = imap, what = what,
                        space = spec.memory_space }, Plan)
end

--- The block indices (one per array dim) of grid point `indices` (a table).
function Plan:indices(indices)
  if not self.index_map then
    local zeros = {}
    for i = 1, #self.dims do zeros[i] = 0 end
    return zeros
  end
  local r = compat.pack(self.index_map(compat.unpack(indices)))
  local function fail(...) compat.fail_at(self.spec.where, ...) end   -- at the BlockSpec's line
  if r.n ~= #self.dims then
    fail("INDEX_MAP_RESULTS", self.what, r.n, r.n == 1 and "" or "s", #self.dims, compat.shape_str(self.ref.shape))
  end
  for i = 1, r.n do
    local v = r[i]
    if type(v) == "number" then r[i] = compat.int(v, self.what .. " index_map result " .. i)
    elseif not trace.is_value(v) or v.kind ~= "scalar" then
      fail("INDEX_MAP_RESULT_TYPE", self.what, i, trace.is_value(v) and "an array" or type(v))
    end
  end
  r.n = nil
  return r
end

--- The GMEM view of block `bidx` (from Plan:indices).
function Plan:view(bidx)
  local idx = {}
  for i, d in ipairs(self.dims) do
    local v = bidx[i]
    if d.kind == "squeezed" then idx[i] = v
    elseif d.kind == "element" then idx[i] = trace.ds(v, d.size)
    else idx[i] = trace.ds(v * d.size, d.size) end
  end
  return self.ref:at(compat.unpack(idx))
end

--- The SMEM allocation spec holding `slots` blocks.
function Plan:smem(slots)
  local shape = { slots }
  for i = 1, #self.block do shape[i + 1] = self.block[i] end
  return require("mgpu.smem").SMEM(shape, self.ref.dtype, { transforms = self.spec.transforms })
end

return M
