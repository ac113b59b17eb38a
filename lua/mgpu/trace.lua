--[[
mgpu.trace -- tracing a kernel body.  Refs and values are Lua objects whose
methods and metamethods append ops to the kernel being traced; plain Lua
numbers and control flow run at trace time.

Lua forces the results of ==, < and <= to booleans, so traced comparisons
are functions or methods (mgpu.lt(a, b), a:lt(b)).  A traced value is always
true in a Lua `if`: use mgpu.when / mgpu.cond for conditions known only on
the device.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local context = require "mgpu.context"

local M = {}
local fail = compat.fail

local Value = {}      -- scalars and arrays
local Ref = {}        -- references to memory
local DS = {}         -- mgpu.ds(start, size)
M.Value, M.Ref = Value, Ref

M.all = setmetatable({}, { __tostring = function() return "mgpu.all" end })

-- The trace being built: { core, b (builder), spec, values = {} }.
M.current = nil

local function tr()
  local t = M.current
  if not t then fail("NOT_TRACING") end
  return t
end
M.tr = tr

function M.is_value(x) return getmetatable(x) == Value end
function M.is_ref(x) return getmetatable(x) == Ref end

local function own(t, v)
  if v.tr ~= t then
    fail("FOREIGN_VALUE")
  end
end

--- Wrap result ids of the current trace as Value/Ref objects.
function M.wrap(t, id)
  local kind, dtype, shape, space = t.core.value(t.b, id)
  local mt = kind == "ref" and Ref or Value
  return setmetatable({ id = id, kind = kind, dtype = dtype, shape = shape, space = space, tr = t }, mt)
end

-- Each op counts against the trace-size limit (t.max_ops, set when the
-- trace starts): past it, tracing stops with an error at the op's line.
local function count_op(t, where)
  t.nops = (t.nops or 0) + 1
  if t.max_ops and t.nops > t.max_ops then compat.fail_at(where, "TRACE_TOO_BIG", t.spec.name, t.max_ops) end
end

--- Append op `name`; operands are Values/Refs.  Returns the wrapped results.
--- The op's location is the calling script line, or `where` when given.
function M.op(name, operands, ints, number, text, where)
  local t = tr()
  local ids = {}
  for i = 1, #(operands or {}) do
    local v = operands[i]
    own(t, v)
    ids[i] = v.id
  end
  where = where or compat.where()
  count_op(t, where)
  t.core.loc(t.b, where)
  local res = compat.pack(t.core.op(t.b, name, ids, ints, number, text))
  for i = 1, res.n do res[i] = M.wrap(t, res[i]) end
  return compat.unpack(res, 1, res.n)
end

--- A scalar constant.
function M.const(x, dtype)
  local t = tr()
  if type(x) == "boolean" then x, dtype = x and 1 or 0, "pred" end
  if type(x) ~= "number" then fail("CONST_NOT_NUMBER", type(x)) end
  dtype = dtype or (compat.is_int(x) and "i32" or "f32")
  local where = compat.where()
  count_op(t, where)
  t.core.loc(t.b, where)
  local id = t.core.op(t.b, "const", nil, { M.dtype_code(dtype) }, x)
  return M.wrap(t, id)
end

-- dtype name -> mgpu_dtype code (ORDER DTYPE)
local codes = { pred = 0, i8 = 1, i16 = 2, i32 = 3, i64 = 4, u8 = 5, u16 = 6, u32 = 7, u64 = 8,
                f16 = 9, bf16 = 10, f32 = 11, f64 = 12, f8e4m3 = 13, f8e5m2 = 14 }
M.dtype_codes = codes
function M.dtype_code(name)
  local c = codes[name]
  if not c then fail("NO_SUCH_DTYPE", tostring(name)) end
  return c
end

--- x as a Value: numbers and booleans become constants of `like`'s dtype
--- (of their own when like is no traced value: mgpu.rem(5, 3)).
function M.lift(x, like)
  local mt = getmetatable(x)
  if mt == Value then return x end
  if mt == Ref then fail("REF_AS_VALUE") end
  if type(x) == "number" then
    local dt = type(like) == "table" and rawget(like, "dtype") or nil
    if dt == "pred" then fail("NUMBER_WITH_PRED") end
    return M.const(x, dt)
  end
  if type(x) == "boolean" then return M.const(x) end
  fail("NOT_VALUE", type(x))
end

-- -- Values ---------------------------------------------------------------------

--- Bring two arrays to one shape when one is the other with dims removed
--- and only one choice of removed dims fits (x - x:max(1) on an (R, C)
--- array broadcasts the (R,) maxima over columns).
function M.broadcast_pair(a, b)
  if a.kind ~= "array" or b.kind ~= "array" or #a.shape == #b.shape then return a, b end
  local big, small, swap = a, b, false
  if #a.shape < #b.shape then big, small, swap = b, a, true end
  local found, n, R, r = nil, 0, #big.shape, #small.shape
  -- choose which dims of big small keeps: every increasing subsequence
  local function search(i, j, dims)
    if j > r then
      n = n + 1
      found = found or { compat.unpack(dims) }
      return
    end
    for d = i, R - (r - j) do
      if big.shape[d] == small.shape[j] then
        dims[j] = d - 1
        search(d + 1, j + 1, dims)
      end
    end
  end
  search(1, 1, {})
  if n == 0 then
    M.fail_shapes(a, b)
  elseif n > 1 then
    compat.fail("AMBIGUOUS_BROADCAST", compat.shape_str(a.shape), compat.shape_str(b.shape))
  end
  small = small:broadcast_in_dim(big.shape, found)
  if swap then return small, big end
  return big, small
end

function M.fail_shapes(a, b)
  compat.fail("NO_BROADCAST", compat.shape_str(a.shape), compat.shape_str(b.shape))
end

local function binop(name)
  return function(a, b)
    if getmetatable(a) ~= Value then a = M.lift(a, b) end
    if getmetatable(b) ~= Value then b = M.lift(b, a) end
    a, b = M.broadcast_pair(a, b)
    return M.op(name, { a, b })
  end
end

Value.__add = binop("add")
Value.__sub = binop("sub")
Value.__mul = binop("mul")
Value.__div = binop("div")     -- integers: truncating division, as in C and PTX
Value.__mod = binop("rem")     -- integers: C remainder (sign of the dividend)
Value.__idiv = function(a, b)  -- Lua 5.4 //: floor for floats, like / for integers
  local q = binop("div")(a, b)
  if q.dtype:sub(1, 1) == "f" or q.dtype == "bf16" then return M.op("floor", { q }) end
  return q
end
Value.__unm = function(a) return M.op("neg", { a }) end
Value.__pow = binop("pow")     -- floats: C99 pow
Value.__concat = function() fail("VALUE_CONCAT") end
Value.__lt = function() fail("VALUE_LT") end
Value.__le = function() fail("VALUE_LE") end
Value.__len = function(a) return a.shape[1] or 0 end
Value.__tostring = function(a)
  return string.format("mgpu.value(%s%s)", a.dtype, a.kind == "array" and compat.shape_str(a.shape) or "")
end

Value.__call = function() fail("VALUE_CALL") end

-- __index for values and refs: their methods, nil for the fields every one
-- has when unset, and an error naming any other name (a misspelt method
-- would otherwise be "attempt to call a nil value").
local fields = { id = true, kind = true, dtype = true, shape = true, tr = true }
local function index_of(methods, what)
  return function(_, key)
    local m = methods[key]
    if m ~= nil or fields[key] or type(key) ~= "string" then return m end
    fail("NO_MEMBER", what, key)
  end
end

local methods = {}
local refm = {}       -- the methods of refs (filled below)
M.ref_methods = refm  -- modules add ref methods here (distributed: on_device)
local value_index = index_of(methods, "traced arrays and scalars")
-- A scalar kernel argument (a number was passed) used as a ref names the
-- argument; any other missing name is an error naming it.
Value.__index = function(v, key)
  local m = methods[key]
  if m ~= nil then return m end
  local param = rawget(v, "param")
  if param and refm[key] ~= nil then
    fail("SCALAR_NOT_REF", param.kernel, param.index, tostring(key))
  end
  return value_index(v, key)
end

for _, name in ipairs({ "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor", "shl", "shr" }) do
  methods[name] = binop(name)
end
methods.maximum, methods.minimum = binop("max"), binop("min")

-- Reductions: x:sum() over everything, x:sum(1) or x:sum({0, 1}) over axes.
local function axes_of(a, axes, what)
  if getmetatable(axes) == Value then
    fail("REDUCTION_NOT_ELEMENTWISE", what,
         what == "max" and "maximum" or "minimum", what == "max" and "maximum" or "minimum", what)
  end
  if axes == nil then
    local all = {}
    for i = 1, #a.shape do all[i] = i - 1 end
    return all
  end
  if type(axes) == "number" then axes = { axes } end
  if type(axes) ~= "table" then compat.fail("BAD_AXES", what) end
  local out = {}
  for i = 1, #axes do out[i] = compat.int(axes[i], what .. " axis") end
  return out
end
for _, r in ipairs({ { "sum", "reduce_sum" }, { "max", "reduce_max" }, { "min", "reduce_min" } }) do
  methods[r[1]] = function(a, axes)
    if a.kind ~= "array" then fail("REDUCE_NOT_ARRAY", r[1], a.kind) end
    return M.op(r[2], { a }, axes_of(a, axes, r[1]))
  end
end
function methods.mean(a, axes)
  local ax = axes_of(a, axes, "mean")
  local n = 1
  for i = 1, #ax do n = n * (a.shape[ax[i] + 1] or 1) end
  return a:sum(ax) / n
end

--- The array (or scalar) repeated along new dims: operand dim i becomes
--- dim dims[i] (0-based) of `shape`.
function methods.broadcast_in_dim(a, shape, dims)
  shape = compat.shape(shape, "broadcast_in_dim shape")
  if a.kind == "scalar" then return M.op("broadcast", { a }, shape) end
  local ints = { #shape }
  for i = 1, #shape do ints[#ints + 1] = shape[i] end
  for i = 1, #(dims or {}) do ints[#ints + 1] = compat.int(dims[i], "broadcast_in_dim dim") end
  return M.op("broadcast_in_dim", { a }, ints)
end

function methods.reshape(a, shape)
  if a.kind ~= "array" then fail("RESHAPE_NOT_ARRAY") end
  return M.op("reshape", { a }, compat.shape(shape, "reshape shape"))
end
methods["band"], methods["bor"], methods["bxor"] = methods["and"], methods["or"], methods["xor"]
for _, name in ipairs({ "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "abs", "floor", "ceil", "neg", "not",
                       "sin", "cos", "erf", "logistic", "expm1", "log1p", "round", "round_away", "trunc", "sign",
                       "clz", "popcount" }) do
  methods[name] = function(a) return M.op(name, { a }) end
end
methods.bnot, methods.bitwise_not = methods["not"], methods["not"]
methods.pow = binop("pow")
methods.bitwise_and, methods.bitwise_or, methods.bitwise_xor = methods["and"], methods["or"], methods["xor"]
methods.shift_left = methods.shl

-- Logical and arithmetic right shifts whatever the signedness: through the
-- integer of the other signedness (bitcasts are free).
local flip = { i8 = "u8", i16 = "u16", i32 = "u32", i64 = "u64", u8 = "i8", u16 = "i16", u32 = "i32", u64 = "i64" }
local function shift_right(want_signed)
  return function(a, n)
    if getmetatable(n) ~= Value then n = M.lift(n, a) end
    local other = flip[a.dtype]
    if not other then fail("SHIFT_NOT_INTEGER", a.dtype) end
    if (a.dtype:sub(1, 1) == "i") == want_signed then return binop("shr")(a, n) end
    if n.dtype ~= a.dtype then return binop("shr")(a, n) end      -- let shr name the dtype mismatch
    return binop("shr")(a:bitcast(other), n:bitcast(other)):bitcast(a.dtype)
  end
end
methods.shift_right_logical = shift_right(false)
methods.shift_right_arithmetic = shift_right(true)

function methods.astype(a, dtype)
  if dtype == a.dtype then return a end
  return M.op("astype", { a }, { M.dtype_code(dtype) })
end

function methods.bitcast(a, dtype)
  return M.op("bitcast", { a }, { M.dtype_code(dtype) })
end

--- A scalar repeated over `shape`, or an array over new leading dims.
function methods.broadcast_to(a, shape)
  shape = compat.shape(shape, "broadcast_to shape")
  if a.kind == "scalar" then return M.op("broadcast", { a }, shape) end
  local dims = {}
  for i = 1, #a.shape do dims[i] = #shape - #a.shape + i - 1 end
  return a:broadcast_in_dim(shape, dims)
end

-- -- Refs and views -------------------------------------------------------------

function M.ds(start, size)
  size = compat.int(size, "ds size")
  if size < 1 then fail("LESS_THAN_ONE", "ds size", size) end
  if type(start) == "number" then
    start = compat.int(start, "ds start")
  elseif getmetatable(start) ~= Value then
    fail("DS_BAD_START", type(start))
  end
  return setmetatable({ start = start, size = size }, DS)
end
DS.__tostring = function(d) return string.format("ds(%s, %d)", tostring(d.start), d.size) end

local IDX_INT, IDX_DS, IDX_ALL = 0, 1, 2
local DYNAMIC = math.mininteger or -9223372036854775808

Ref.__index = index_of(refm, "refs")
local function ref_math() fail("REF_ARITHMETIC") end
for _, mm in ipairs({ "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__idiv", "__concat", "__lt", "__le" }) do
  Ref[mm] = ref_math
end
Ref.__call = function() fail("REF_CALL") end
Ref.__tostring = function(r) return string.format("mgpu.ref(%s%s)", r.dtype, compat.shape_str(r.shape)) end

--- A view: each index is an integer or traced scalar (the dimension is
--- dropped), mgpu.ds(start, size), or mgpu.all.  Missing trailing indices
--- mean mgpu.all.
-- A static start or index: beyond 2^53 it could not be exact (and -2^63
-- would read as the dynamic marker), so it is refused as out of range.
local function static_start(v, i, r)
  if v <= -2 ^ 53 or v >= 2 ^ 53 then
    fail("AT_OUT_OF_RANGE", v, i - 1, r.shape[i])
  end
  return v
end

function refm.at(r, ...)
  local n = select("#", ...)
  if n > #r.shape then
    fail("TOO_MANY_INDICES", #r.shape, n)
  end
  local ints, dyn = {}, {}
  for i = 1, n do
    local x = select(i, ...)
    local mt = getmetatable(x)
    if x == M.all then
      ints[#ints + 1], ints[#ints + 2], ints[#ints + 3] = IDX_ALL, 0, 0
    elseif mt == DS then
      local dynamic = getmetatable(x.start) == Value
      ints[#ints + 1], ints[#ints + 2], ints[#ints + 3] = IDX_DS, dynamic and DYNAMIC or static_start(x.start, i, r), x.size
      if dynamic then dyn[#dyn + 1] = x.start end
    elseif mt == Value then
      ints[#ints + 1], ints[#ints + 2], ints[#ints + 3] = IDX_INT, DYNAMIC, 1
      dyn[#dyn + 1] = x
    elseif type(x) == "number" then
      ints[#ints + 1], ints[#ints + 2], ints[#ints + 3] = IDX_INT, static_start(compat.int(x, "index " .. i), i, r), 1
    else
      fail("BAD_INDEX", i, type(x))
    end
  end
  return M.view(r, ints, dyn)
end

-- A ref made from ref `r` by op `name` remembers how (ints, dynamic starts,
-- the script line), so that loops can carry it as its indices (mgpu.refcarry).
local function derived(res, name, r, ints, dyn)
  rawset(res, "from", { op = name, ref = r, ints = ints, dyn = dyn or {}, where = compat.where() })
  return res
end

--- The view op of ref r: ints (kind, start, size) per index, starts equal
--- to the dynamic marker taken from dyn in order.
function M.view(r, ints, dyn)
  local operands = { r }
  for i = 1, #dyn do operands[#operands + 1] = dyn[i] end
  return derived(M.op("view", operands, ints), "view", r, ints, dyn)
end
M.DYNAMIC, M.IDX_ALL = DYNAMIC, IDX_ALL

--- A view with the dims permuted: dim j of the view is dim perm[j] (0-based).
function refm.transpose(r, perm)
  if type(perm) ~= "table" then fail("TRANSPOSE_PERM") end
  local ints = {}
  for i = 1, #perm do ints[i] = compat.int(perm[i], "transpose perm[" .. i .. "]") end
  return derived(M.op("transpose_ref", { r }, ints), "transpose_ref", r, ints)
end

--- The same SMEM elements in row-major order under another shape: the ref
--- must be contiguous and keep the dims its buffer tiles (only leading,
--- untiled dims merge or split); the engine names the dim that does not.
function refm.reshape(r, shape)
  local ints = compat.shape(shape, "reshape shape")
  return derived(M.op("reshape_ref", { r }, ints), "reshape_ref", r, ints)
end

--- Load the whole ref into registers (a scalar for a rank-0 ref);
--- opts.layout chooses the register layout.
function refm.load(r, opts)
  local text
  if opts ~= nil then
    if type(opts) ~= "table" then fail("LOAD_OPTIONS") end
    for key in pairs(opts) do if key ~= "layout" then fail("UNKNOWN_OPTION", "load", tostring(key)) end end
    text = require("mgpu.layout").text(opts.layout, "load layout")
  end
  return M.op("load", { r }, nil, nil, text)
end

--- Store a value (an array of the ref's shape, or a scalar for every element).
function refm.store(r, x)
  if getmetatable(x) ~= Value and getmetatable(x) ~= Ref and type(x) ~= "number" and type(x) ~= "boolean" then
    fail("STORE_BAD_VALUE", type(x))
  end
  if getmetatable(x) ~= Value then x = M.lift(x, r) end
  M.op("store", { r, x })
end

return M
