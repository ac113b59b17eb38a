--[[
mgpu.ops -- the functions available inside a kernel body: indices, math,
comparisons, select, conversions and structured control flow.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"
local refcarry = require "mgpu.refcarry"

local M = {}
local fail = compat.fail
local op, lift, is_value = trace.op, trace.lift, trace.is_value

-- -- Indices ------------------------------------------------------------------

--- Index of this block along grid axis `axis` (0-based), an i32 scalar.
function M.program_id(axis)
  axis = compat.int(axis, "program_id axis")
  local ids = trace.tr().program_ids            -- inside a pallas_call body: its whole grid
  if ids then
    if axis < 0 or axis >= #ids then fail("AXIS_OUTSIDE_GRID", "program_id", axis, #ids) end
    local v = ids[axis + 1]
    return type(v) == "number" and trace.const(v) or v
  end
  return op("program_id", nil, { axis })
end

--- Number of blocks along grid axis `axis`.
function M.num_programs(axis)
  axis = compat.int(axis, "num_programs axis")
  local g = trace.tr().pallas_grid              -- inside a pallas_call: its whole grid
  if g then
    if axis < 0 or axis >= #g then fail("AXIS_OUTSIDE_GRID", "num_programs", axis, #g) end
    return trace.const(g[axis + 1])
  end
  return op("num_programs", nil, { axis })
end

-- Which axis `name` is: "grid", "thread" or "cluster", and its 0-based index.
local function find_axis(name)
  local spec = trace.tr().spec
  for i, n in ipairs(spec.grid_names or {}) do
    if n == name then return "grid", i - 1 end
  end
  if spec.thread_name and spec.thread_name == name then return "thread", 0 end
  for i, n in ipairs(spec.cluster_names or {}) do
    if n == name then return "cluster", i - 1 end
  end
  local names = table.concat(spec.grid_names or {}, ", ")
  local cnames = table.concat(spec.cluster_names or {}, ", ")
  fail("UNKNOWN_AXIS_NAME", tostring(name),
       names ~= "" and names or "none", cnames ~= "" and cnames or "none", spec.thread_name or "none")
end

-- The names of a tuple of axes ({ "x", "y" }), or nil for one name.
local function axis_tuple(name, what)
  if type(name) ~= "table" then return nil end
  if #name == 0 then fail("AXIS_NAMES_EMPTY", what) end
  for j = 1, #name do
    if type(name[j]) ~= "string" then fail("AXIS_NAME_NOT_STRING", what, j, type(name[j])) end
  end
  return name
end

--- Index along a named axis: a grid axis (grid_names), the warpgroup axis
--- (thread_name) or a cluster axis (cluster_names).  A table of names
--- gives the row-major flat index over those axes (the last varies fastest).
function M.axis_index(name)
  local tuple = axis_tuple(name, "axis_index")
  if tuple then
    local idx = M.axis_index(tuple[1])
    for j = 2, #tuple do idx = idx * M.axis_size(tuple[j]) + M.axis_index(tuple[j]) end
    return idx
  end
  local kind, i = find_axis(name)
  if kind == "grid" then return M.program_id(i) end
  if kind == "thread" then return op("thread_id") end
  return op("cluster_idx", {}, { i })
end

--- Size of a named axis: a traced scalar for grid axes, a number for the
--- warpgroup and cluster axes.  A table of names gives their product.
function M.axis_size(name)
  local tuple = axis_tuple(name, "axis_size")
  if tuple then
    local n = M.axis_size(tuple[1])
    for j = 2, #tuple do n = n * M.axis_size(tuple[j]) end
    return n
  end
  local kind, i = find_axis(name)
  local spec = trace.tr().spec
  if kind == "grid" then return M.num_programs(i) end
  if kind == "thread" then return spec.num_threads end
  return spec.cluster[i + 1]
end

-- -- Elementwise --------------------------------------------------------------

local function unary(name, host)
  return function(x)
    if type(x) == "number" and host then return host(x) end
    return op(name, { lift(x) })
  end
end

M.exp = unary("exp", math.exp)
M.exp2 = unary("exp2", function(x) return 2 ^ x end)
M.log = unary("log", math.log)
M.log2 = unary("log2", function(x) return math.log(x) / math.log(2) end)
M.sqrt = unary("sqrt", math.sqrt)
M.rsqrt = unary("rsqrt", function(x) return 1 / math.sqrt(x) end)
M.tanh = unary("tanh", function(x) local e = math.exp(2 * x); return (e - 1) / (e + 1) end)
M.abs = unary("abs", math.abs)
M.floor = unary("floor", math.floor)
M.ceil = unary("ceil", math.ceil)

-- Lua-number forms of the functions Lua's math library lacks (double precision).
local huge = math.huge
-- e^(-a^2) with a^2 split exactly into hi + lo (Veltkamp), so its rounding costs nothing
local function h_expmsq(a)
  local c = a * 134217729
  local ah = c - (c - a)
  local al = a - ah
  local hi = a * a
  local lo = ((ah * ah - hi) + 2 * ah * al) + al * al
  return math.exp(-hi) * (1 - lo)
end
local function h_erf(x)       -- within about 6 ulp of double
  if x ~= x or x == 0 then return x end   -- NaN, and zeros keep their sign
  local a, r = math.abs(x), 1
  if a < 0.5 then             -- 2/sqrt(pi) sum (-1)^n a^(2n+1) / (n! (2n+1))
    local term, sum, n = a, a, 0
    repeat
      n = n + 1
      term = -term * a * a / n
      sum = sum + term / (2 * n + 1)
    until math.abs(term) <= 1e-17 * sum
    r = sum * 1.1283791670955126
  elseif a < 2 then           -- 2/sqrt(pi) e^(-a^2) sum 2^n a^(2n+1) / (2n+1)!!: positive terms
    local term, sum, n = a, a, 0
    repeat
      n = n + 1
      term = term * 2 * a * a / (2 * n + 1)
      sum = sum + term
    until term <= 1e-17 * sum
    r = sum * h_expmsq(a) * 1.1283791670955126
  elseif a < 6 then           -- 1 - erfc by its continued fraction (1 from 6 on)
    local f = 0
    for k = 150, 1, -1 do f = (k / 2) / (a + f) end
    r = 1 - h_expmsq(a) / (a + f) * 0.5641895835477563
  end
  return x < 0 and -r or r
end
local function h_expm1(x)     -- (e^x - 1) x / ln(e^x): Kahan's correction
  local u = math.exp(x)
  if x == 0 or u == huge or x > 40 then return x == 0 and x or u end
  if u == 1 then return x end
  if u - 1 == -1 then return -1 end
  return (u - 1) * x / math.log(u)
end
local function h_log1p(x)
  local u = 1 + x
  if u == 1 or u == huge then return u == 1 and x or u end
  if u - 1 == x then return math.log(u) end
  return math.log(u) * x / (u - 1)
end
local function h_round(x)     -- half to even
  if x ~= x or math.abs(x) >= 2 ^ 52 then return x end
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return f
end
local function h_trunc(x) return x >= 0 and math.floor(x) or -math.floor(-x) end

--- Accurate to 1 ulp by default (f32, f16, bf16; computed in f64 on the
--- GPU; f64 within 1 or 2 ulp, src/ptx/ptx_math64.c); CompilerParams{
--- approx_math = true } uses the hardware approximations for f32, f16 and
--- bf16 (exp, exp2, log, log2 then flush f32 subnormal inputs and results
--- to zero).  Bounds: see src/ptx/ptx_math.c, ptx_math64.c and ptx_arith.c.
M.sin = unary("sin", math.sin)
M.cos = unary("cos", math.cos)
M.erf = unary("erf", h_erf)
M.logistic = unary("logistic", function(x)   -- sigmoid; e^x / (1 + e^x) below 0 (no overflow)
  if x < 0 then local t = math.exp(x); return t / (1 + t) end
  return 1 / (1 + math.exp(-x))
end)
M.expm1 = unary("expm1", h_expm1)
M.log1p = unary("log1p", h_log1p)
--- Exact: round (half to even), round_away (half away from zero), trunc,
--- sign (-1, 0 or 1; floats keep +-0 and NaN; 0 or 1 for unsigned).
M.round = unary("round", h_round)
M.round_away = unary("round_away", function(x)
  local t = h_trunc(x)
  if math.abs(x - t) >= 0.5 then t = t + (x < 0 and -1 or 1) end
  return t
end)
M.trunc = unary("trunc", h_trunc)
M.sign = unary("sign", function(x) return (x ~= x or x == 0) and x or (x > 0 and 1 or -1) end)
--- Integers: leading zeros and set bits within the dtype's width (as jax.lax.clz, population_count).
M.clz = unary("clz")
M.popcount = unary("popcount")
M.population_count = M.popcount
M.bitwise_not = unary("not")

local function binary(name, host)
  return function(a, b)
    if type(a) == "number" and type(b) == "number" and host then return host(a, b) end
    if not is_value(a) then a = lift(a, b) end
    if not is_value(b) then b = lift(b, a) end
    return op(name, { a, b })
  end
end

--- Elementwise max/min: NaN when either operand is NaN (as jax.lax.max);
--- the sign of max(-0, +0) is unspecified.  x:max(axes) reduces.
M.max = binary("max", function(a, b) return (a ~= a or b ~= b) and 0 / 0 or math.max(a, b) end)
M.min = binary("min", function(a, b) return (a ~= a or b ~= b) and 0 / 0 or math.min(a, b) end)
M.maximum, M.minimum = M.max, M.min
--- x^y for floats with C99's special cases (also x ^ y on traced values).
M.pow = binary("pow", function(a, b) return a ^ b end)
M.bitwise_and = binary("and")
M.bitwise_or = binary("or")
M.bitwise_xor = binary("xor")
--- Shifts of integers; amounts outside [0, bits) give 0 (left, logical) or
--- the sign (arithmetic).  shift_right_logical/arithmetic ignore whether
--- the dtype is signed (x:shr(n) is arithmetic for signed dtypes).
M.shift_left = binary("shl")
function M.shift_right_logical(a, b) return lift(a, is_value(b) and b or nil):shift_right_logical(b) end
function M.shift_right_arithmetic(a, b) return lift(a, is_value(b) and b or nil):shift_right_arithmetic(b) end
M.lt = binary("lt")
M.le = binary("le")
M.gt = binary("gt")
M.ge = binary("ge")
M.eq = binary("eq")
M.ne = binary("ne")
--- Integer division truncating toward zero (float division for floats).
M.div = binary("div")
M.rem = binary("rem")

--- Ceiling division of non-negative integers, numbers or traced scalars.
function M.cdiv(a, b)
  if type(a) == "number" and type(b) == "number" then return compat.cdiv(a, b) end
  return (lift(a, b) + b - 1) / b
end

--- Elementwise choice: a where cond is true, else b.
function M.select(cond, a, b)
  cond = lift(cond)
  if not is_value(a) then a = lift(a, is_value(b) and b or nil) end
  if not is_value(b) then b = lift(b, a) end
  return op("select", { cond, a, b })
end
M.where = M.select

--- An array of `shape` filled with a scalar (a number takes `dtype`,
--- default f32).
function M.broadcast(value, shape, dtype)
  local v = is_value(value) and value or trace.const(value, dtype or (type(value) == "boolean" and "pred" or "f32"))
  return v:broadcast_to(shape)
end

--- The array constructors inside a kernel body (as jnp.zeros, jnp.full and
--- jnp.arange in a Pallas kernel): traced arrays, usable as loop carries.
--- mgpu.empty gives zeros there; iota is row-major, times step plus start.
M.in_kernel = {}
function M.in_kernel.zeros(shape, dtype) return M.broadcast(0, compat.shape(shape, "zeros shape"), dtype or "f32") end
M.in_kernel.empty = M.in_kernel.zeros
function M.in_kernel.full(shape, value, dtype)
  shape = compat.shape(shape, "full shape")
  if is_value(value) then
    local v = value:broadcast_to(shape)
    return dtype and v:astype(dtype) or v
  end
  if type(value) ~= "number" and type(value) ~= "boolean" then fail("FULL_NOT_NUMBER") end
  return M.broadcast(value, shape, dtype or (type(value) == "boolean" and "pred" or "f32"))
end
function M.in_kernel.iota(shape, dtype, start, step)
  shape = compat.shape(shape, "iota shape")
  local flat, stride = nil, 1
  for d = #shape, 1, -1 do
    local i = M.broadcasted_iota("i32", shape, d - 1)
    if stride ~= 1 then i = i * stride end
    flat = flat and flat + i or i
    stride = stride * shape[d]
  end
  flat = flat:astype(dtype or "f32")
  if (step or 1) ~= 1 then flat = flat * step end
  if (start or 0) ~= 0 then flat = flat + start end
  return flat
end

--- Reductions as functions: mgpu.sum(x, axes) is x:sum(axes).
function M.sum(x, axes) return lift(x):sum(axes) end
function M.mean(x, axes) return lift(x):mean(axes) end
function M.reduce_max(x, axes) return lift(x):max(axes) end
function M.reduce_min(x, axes) return lift(x):min(axes) end
function M.broadcast_in_dim(x, shape, dims) return lift(x):broadcast_in_dim(shape, dims) end
function M.reshape(x, shape) return lift(x):reshape(shape) end

--- Indices along `dim` of an array of `shape` (Pallas' broadcasted_iota).
function M.broadcasted_iota(dtype, shape, dim, opts)
  shape = compat.shape(shape, "broadcasted_iota shape")
  dim = compat.int(dim, "broadcasted_iota dim")
  local ints = { trace.dtype_code(dtype), dim }
  for i = 1, #shape do ints[#ints + 1] = shape[i] end
  local text = opts and require("mgpu.layout").text(opts.layout, "broadcasted_iota layout")
  return op("iota", nil, ints, nil, text)
end

--- The same array with a chosen register layout (a constraint for
--- inference, under Warpgroup semantics).
function M.layout_cast(x, layout)
  return op("layout_cast", { lift(x) }, nil, nil, require("mgpu.layout").text(layout, "layout_cast layout"))
end

--- Print, when the kernel is compiled, the layout chosen for x:
--- mgpu.print_layout("x: %s", x).
function M.print_layout(fmt, x)
  if type(fmt) ~= "string" then fail("PRINT_LAYOUT_FORMAT") end
  if not trace.is_value(x) then fail("PRINT_LAYOUT_VALUE") end
  local t = trace.tr()
  t.print_layouts = t.print_layouts or {}
  table.insert(t.print_layouts, { fmt = fmt, id = x.id })
end

function M.astype(x, dtype)
  return lift(x):astype(dtype)
end

--- Print from the device (Pallas' pl.debug_print): one {} per value ({{
--- and }} are braces).  Scalars print one line per warpgroup; a single
--- array prints one line per element, "{}" becoming "[i, j]: value".
--- Floats print as %f, integers as %d / %u.  The interpreter prints the
--- same lines, block by block, warpgroup by warpgroup.
function M.debug_print(fmt, ...)
  if type(fmt) ~= "string" then fail("DEBUG_PRINT_FORMAT", type(fmt)) end
  local args = compat.pack(...)
  local vals = {}
  for i = 1, args.n do
    local x = args[i]
    if trace.is_ref(x) then fail("DEBUG_PRINT_REF", i) end
    if not is_value(x) and type(x) ~= "number" and type(x) ~= "boolean" then
      fail("DEBUG_PRINT_VALUE", i, type(x))
    end
    vals[i] = lift(x)
  end
  op("debug_print", vals, nil, nil, fmt)
end

-- -- Atomics on GMEM ---------------------------------------------------------------

local sems = { relaxed = 0, acquire = 1, release = 2, acq_rel = 3 }
local scopes = { cta = 0, cluster = 1, gpu = 2, sys = 3 }

local function atomic(name, code, operands)
  return function(ref, ...)
    local what = "atomic_" .. name
    if not trace.is_ref(ref) then fail("ATOMIC_NOT_REF", what) end
    local args = compat.pack(...)
    local opts = args[operands + 1] or {}
    if type(opts) ~= "table" then fail("ATOMIC_OPTIONS", what) end
    for k in pairs(opts) do
      if k ~= "sem" and k ~= "scope" then fail("UNKNOWN_OPTION", what, tostring(k)) end
    end
    local sem, scope = sems[opts.sem or "acq_rel"], scopes[opts.scope or "gpu"]
    if not sem then fail("ATOMIC_SEM", what, tostring(opts.sem)) end
    if not scope then fail("ATOMIC_SCOPE", what, tostring(opts.scope)) end
    local ops_ = { ref }
    for i = 1, operands do
      if args[i] == nil then fail("ATOMIC_MISSING_VALUE", what, operands, operands == 1 and "" or "s") end
      ops_[i + 1] = lift(args[i], ref)
    end
    return op("atomic", ops_, { code, sem, scope })
  end
end

--- mgpu.atomic_add(ref, v, { sem, scope }) and exchange, max, min, and,
--- or, xor: a read-modify-write of one GMEM element, done once per
--- warpgroup; returns the old value to every thread.  sem: relaxed,
--- acquire, release, acq_rel (default); scope: cta, cluster, gpu
--- (default), sys.  mgpu.atomic_cas(ref, expected, new, opts) stores new
--- where the element holds expected.
M.atomic_add = atomic("add", 0, 1)
M.atomic_exchange = atomic("exchange", 1, 1)
M.atomic_cas = atomic("cas", 2, 2)
M.atomic_max = atomic("max", 3, 1)
M.atomic_min = atomic("min", 4, 1)
M.atomic_and = atomic("and", 5, 1)
M.atomic_or = atomic("or", 6, 1)
M.atomic_xor = atomic("xor", 7, 1)

-- -- Control flow -------------------------------------------------------------

--- Run fn() on the first warp of the warpgroup only; warps 1-3 skip it and
--- wait for it at a warpgroup barrier at the end, so afterwards all four
--- have seen what it did.  For scalar work, barrier waits and TMA copies (a
--- producer loop, as CUTLASS and cuBLAS run it): an array, wgmma,
--- setmaxnreg, an SMEM store, commit, arrival, atomic or copy wait inside
--- is an error at its line, and so is waiting on one barrier both inside
--- and outside single_warp (each thread follows the phases it waited for).
--- The interpreter runs it as the warpgroup (one agent).
function M.single_warp(fn)
  if type(fn) ~= "function" then fail("SINGLE_WARP_NOT_FUNCTION") end
  op("single_warp", {})
  fn()
  op("yield", {})
end

--- Run fn() on the device only where the scalar `cond` is true.  A Lua
--- boolean decides at trace time instead.
function M.when(cond, fn)
  if type(fn) ~= "function" then fail("WHEN_NOT_FUNCTION") end
  if type(cond) == "boolean" then
    if cond then fn() end
    return
  end
  if not is_value(cond) and type(cond) ~= "number" then
    fail("BAD_CONDITION", "when", type(cond))
  end
  op("if", { lift(cond) })
  fn()
  op("yield", {})
end

local function values_of(results, n, like, what)
  local out = {}
  for i = 1, n do
    local v = results[i]
    if v == nil then fail("RESULT_COUNT", what, i - 1, n) end
    out[i] = is_value(v) and v or lift(v, like and like[i])
  end
  return out
end

-- The parameter names of fn from its `first`-th on (n of them) as "a,b",
-- for error messages about carried values; nil when there are none.
local flat_names = setmetatable({}, { __mode = "k" })   -- bodies over flattened carries -> their names
local function param_names(fn, first, n)
  if flat_names[fn] then return flat_names[fn] end
  if not debug or not debug.getlocal then return nil end
  local names, any = {}, false
  for j = 1, n do
    local ok, name = pcall(debug.getlocal, fn, first + j - 1)
    names[j] = ok and type(name) == "string" and name:match("^[%a_][%w_]*$") and name or ""
    any = any or names[j] ~= ""
  end
  return any and table.concat(names, ",") or nil
end

local function type_str(v) return v.dtype .. (v.kind == "array" and compat.shape_str(v.shape) or "") end

-- One traced step of a loop unrolled at trace time: fn(iv, carry...) with
-- the same checks a loop body's yield has.
local function step_now(fn, iv, carry, what)
  local r = compat.pack(fn(iv, compat.unpack(carry, 1, #carry)))
  if r.n ~= #carry then fail("CARRY_COUNT", what, r.n, #carry) end
  local nxt = values_of(r, #carry, carry, what)
  for j = 1, #carry do
    local a, b = nxt[j], carry[j]
    if a.kind ~= b.kind or a.dtype ~= b.dtype or not compat.same_shape(a.shape or {}, b.shape or {}) then
      fail("CARRY_TYPE", what, type_str(a), j, type_str(b))
    end
  end
  return nxt
end

-- A for op from lov to hiv by step carrying `carry`; body(iv, carry) -> carry.
local function emit_for(lov, hiv, step, carry, names, body)
  local operands = { lov, hiv, step }
  for j = 1, #carry do operands[3 + j] = carry[j] end
  local args = compat.pack(op("for", operands, nil, nil, names))
  local cur = {}
  for j = 2, args.n do cur[j - 1] = args[j] end
  local res = compat.pack(op("yield", body(args[1], cur)))
  local out = {}
  for j = 1, res.n do out[j] = res[j] end
  return out
end

--- A loop on the device: fn(i, carry...) for i = lo, ..., hi-1, returning
--- the next carry (scalars, arrays, refs as in while_loop); fori returns
--- the final carry.  A last argument
--- { unroll = n } traces n copies of the body per iteration (the steps
--- left over run after it); { unroll = true } unrolls the whole loop at
--- trace time, which needs lo and hi as Lua numbers.  Unrolling calls fn
--- once per copy while tracing.
M.MAX_UNROLL = 65536     -- the most copies of a body that unroll = true traces

function M.fori(lo, hi, fn, ...)
  if type(fn) ~= "function" then fail("FORI_NOT_FUNCTION") end
  local inits = compat.pack(...)
  local unroll = 1
  local last = inits[inits.n]
  if inits.n > 0 and type(last) == "table" and getmetatable(last) == nil then
    for key in pairs(last) do
      if key ~= "unroll" then fail("FORI_UNKNOWN_OPTION", tostring(key)) end
    end
    if last.unroll == true then unroll = true
    elseif last.unroll ~= nil and last.unroll ~= false then
      unroll = compat.int(last.unroll, "fori unroll")
      if unroll < 1 then fail("FORI_UNROLL_SMALL", unroll) end
      if unroll > M.MAX_UNROLL then fail("FORI_UNROLL_LARGE", unroll, M.MAX_UNROLL) end
    end
    inits.n = inits.n - 1
  end
  for _, b in ipairs({ { lo, "lo" }, { hi, "hi" } }) do
    if type(b[1]) ~= "number" and not is_value(b[1]) then
      fail("FORI_BAD_BOUND", b[2], type(b[1]))
    end
  end
  local static = type(lo) == "number" and type(hi) == "number"
  if unroll == true and not static then
    fail("FORI_UNROLL_DYNAMIC")
  end
  if unroll == true and static and hi - lo > M.MAX_UNROLL then
    fail("FORI_UNROLL_STEPS", hi - lo, hi - lo, M.MAX_UNROLL)
  end
  local lov, hiv = lift(lo), lift(hi)
  if lov.dtype ~= hiv.dtype then
    if not is_value(lo) then lov = lift(lo, hiv) elseif not is_value(hi) then hiv = lift(hi, lov) end
  end
  local plan, flat = refcarry.plan(inits, inits.n, "fori", param_names(fn, 2, inits.n))
  if plan then   -- refs carried as their indices (mgpu.refcarry)
    local body = function(i, ...) return refcarry.flatten(plan, compat.pack(fn(i, refcarry.unflatten(plan, { ... }))), "fori body") end
    flat_names[body] = plan.names
    flat[plan.n + 1] = { unroll = unroll }
    return refcarry.unflatten(plan, compat.pack(M.fori(lo, hi, body, compat.unpack(flat, 1, plan.n + 1))))
  end
  local carry = {}
  for i = 1, inits.n do carry[i] = lift(inits[i]) end
  local names = param_names(fn, 2, inits.n)
  local function steps_now(from, to)   -- trace-time steps from..to-1 (Lua numbers)
    for i = from, to - 1 do carry = step_now(fn, trace.const(i, lov.dtype), carry, "fori body") end
  end
  if static then
    lo, hi = compat.int(lo, "fori lo"), compat.int(hi, "fori hi")
    local trips = math.max(hi - lo, 0)
    if unroll == true or trips <= unroll and unroll > 1 then
      steps_now(lo, hi)
      return compat.unpack(carry, 1, inits.n)
    end
  end
  local function body(n)   -- n copies of fn per iteration of a loop stepping by n
    return function(iv, cur)
      for u = 0, n - 1 do
        local i = u == 0 and iv or iv + u
        if n == 1 then
          local r = compat.pack(fn(i, compat.unpack(cur, 1, #cur)))
          if r.n ~= #cur then fail("CARRY_COUNT", "fori body", r.n, #cur) end
          cur = values_of(r, #cur, cur, "fori body")
        else
          cur = step_now(fn, i, cur, "fori body")
        end
      end
      return cur
    end
  end
  if unroll == 1 then
    return compat.unpack(emit_for(lov, hiv, lift(1, lov), carry, names, body(1)), 1, inits.n)
  end
  if static then   -- the loop over whole groups of unroll steps, then the rest at trace time
    local main = lo + math.floor((hi - lo) / unroll) * unroll
    carry = emit_for(lov, lift(main, lov), lift(unroll, lov), carry, names, body(unroll))
    steps_now(main, hi)
    return compat.unpack(carry, 1, inits.n)
  end
  -- device bounds: groups of unroll steps up to lo + (span / unroll) * unroll, then a plain loop
  local span = M.max(hiv - lov, lift(0, lov))
  local main = lov + span / unroll * unroll
  carry = emit_for(lov, main, lift(unroll, lov), carry, names, body(unroll))
  carry = emit_for(main, hiv, lift(1, lov), carry, names, body(1))
  return compat.unpack(carry, 1, inits.n)
end

--- A loop on the device that runs while cond_fn(carried...) is true:
--- body_fn(carried...) returns the next carried values, and while_loop
--- returns the final ones.  Carried values are scalars, arrays (Lua
--- numbers become scalars of the matching kind) or refs (carried as the
--- indices of their views, mgpu.refcarry).
function M.while_loop(cond_fn, body_fn, ...)
  if type(cond_fn) ~= "function" then fail("WHILE_COND_NOT_FUNCTION") end
  if type(body_fn) ~= "function" then fail("WHILE_BODY_NOT_FUNCTION") end
  local inits = compat.pack(...)
  local plan, flat = refcarry.plan(inits, inits.n, "while_loop", param_names(body_fn, 1, inits.n))
  if plan then   -- refs carried as their indices (mgpu.refcarry)
    local body = function(...) return refcarry.flatten(plan, compat.pack(body_fn(refcarry.unflatten(plan, { ... }))), "while_loop body") end
    flat_names[body] = plan.names
    return refcarry.unflatten(plan, compat.pack(M.while_loop(function(...) return cond_fn(refcarry.unflatten(plan, { ... })) end,
                                                             body, compat.unpack(flat, 1, plan.n))))
  end
  local operands = {}
  for i = 1, inits.n do operands[i] = lift(inits[i]) end
  local args = compat.pack(op("while", operands, nil, nil, param_names(body_fn, 1, inits.n)))
  local c = cond_fn(compat.unpack(args, 1, args.n))
  if type(c) == "boolean" then fail("WHILE_COND_BOOLEAN") end
  if not is_value(c) then fail("WHILE_COND_NOT_TRACED", type(c)) end
  op("yield", { c })
  local r = compat.pack(body_fn(compat.unpack(args, 1, args.n)))
  if r.n ~= inits.n then fail("CARRIED_COUNT", "while_loop: body_fn", r.n, inits.n) end
  return op("yield", values_of(r, inits.n, args, "while_loop body"))
end

--- Device-side if/else producing values: both branches must return the
--- same number of values of the same types.
function M.cond(c, ftrue, ffalse)
  if type(ftrue) ~= "function" then fail("COND_TRUE_NOT_FUNCTION", type(ftrue)) end
  if type(ffalse) ~= "function" then fail("COND_FALSE_NOT_FUNCTION", type(ffalse)) end
  if type(c) == "boolean" then
    if c then return ftrue() end
    return ffalse()
  end
  if not is_value(c) and type(c) ~= "number" then
    fail("BAD_CONDITION", "cond", type(c))
  end
  op("if", { lift(c) })
  local t = compat.pack(ftrue())
  local tv = values_of(t, t.n, nil, "cond true branch")
  op("else", tv)
  local f = compat.pack(ffalse())
  if f.n ~= t.n then fail("COND_BRANCH_COUNT", t.n, f.n) end
  local fv = values_of(f, f.n, tv, "cond false branch")
  for j = 1, f.n do
    if type_str(fv[j]) ~= type_str(tv[j]) or fv[j].kind ~= tv[j].kind then
      fail("COND_BRANCH_TYPE", type_str(fv[j]), j, type_str(tv[j]))
    end
  end
  return op("yield", fv)
end

--- mgpu.named_scope("name", fn, ...): a profiled region (CompilerParams
--- profile_space / profile_dir); without profiling it just calls fn.
M.named_scope = require("mgpu.profile").named_scope

return M
