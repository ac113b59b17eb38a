--[[
mgpu.array -- arrays in device memory (host memory in interpret mode):
constructors, element access and copies.  Elements are row-major.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local context = require "mgpu.context"
local format = require "mgpu.format"

local M = {}

local Array = {}
Array.__index = Array
M.Array = Array

-- The core's functions, raising their errors at the script's line (a read
-- of an array after a kernel faulted names the kernel there, for example).
local function pass(ok, ...)
  if not ok then compat.rethrow((...)) end
  return ...
end
local located = setmetatable({}, { __index = function(t, name)
  local f = context.core[name]
  if type(f) ~= "function" then return f end
  local g = function(...) return pass(pcall(f, ...)) end
  rawset(t, name, g)
  return g
end })
local function core() return located end

local function check_dtype(dtype, what)
  dtype = dtype or "f32"
  if type(dtype) ~= "string" or not core().dtype_size(dtype) then
    compat.fail("UNKNOWN_DTYPE", what, tostring(dtype))
  end
  return dtype
end

-- "40000 GB", "1.5 MB", "512 bytes" (powers of 1000, as memory is sold).
local function human_bytes(n)
  local units = { { 1e9, "GB" }, { 1e6, "MB" }, { 1e3, "KB" } }
  for _, u in ipairs(units) do
    if n >= u[1] then
      local v = n / u[1]
      return (v >= 100 and string.format("%.0f", v) or string.format("%.3g", v)) .. " " .. u[2]
    end
  end
  return string.format("%.0f bytes", n)
end

-- Compile-only mode (mgpu --emit-ptx, MGPU_COMPILE_ONLY=1): constructors
-- allocate nothing and return abstract arrays (shape and dtype only),
-- unless mgpu.configure{ abstract_arrays = false } (tools whose references
-- read their small inputs even when only compiling).
local function compile_only() return context.info().mode == "compile" end
M.compile_only = compile_only

local function new(shape, dtype, what, alloc)
  local n = compat.numel(shape)
  local bytes = n * core().dtype_size(dtype)
  local self = setmetatable({ shape = shape, dtype = dtype, size = n, nbytes = bytes }, Array)
  if compile_only() and context.config.abstract_arrays ~= false then self.abstract = true; return self end
  local fbytes = core().dtype_size(dtype) + 0.0       -- in floating point: integers could wrap
  for i = 1, #shape do fbytes = fbytes * shape[i] end
  local ok, buf = false, "more than any memory holds"
  if fbytes < 2 ^ 53 then
    context.track(bytes, not alloc and context.info().mode == "gpu")
    local make_buf = alloc or context.core.buffer   -- the raw core: its message is wrapped below
    ok, buf = pcall(make_buf, context.get(), bytes)
    if not ok and tostring(buf):match("^out of memory") then   -- unreachable arrays may hold it: collect, try again
      collectgarbage(); collectgarbage()
      ok, buf = pcall(make_buf, context.get(), bytes)
    end
  else
    bytes = fbytes
  end
  if not ok then      -- "file:line: zeros: cannot allocate 40 GB (40000000000 bytes) for f32[10000000000]: ..."
    local msg = tostring(buf):gsub("^out of memory allocating %d+ bytes %((.*)%)$", "out of memory; %1")
    compat.fail("ALLOCATION_FAILED", what or "array", human_bytes(bytes), bytes, dtype, compat.shape_str(shape), msg)
  end
  self.buf = buf
  return self
end
local function make(shape, dtype, what, alloc)
  dtype = check_dtype(dtype, what)
  return new(compat.shape(shape, what .. " shape"), dtype, what, alloc)
end

--- An array with unspecified contents.
function M.empty(shape, dtype) return make(shape, dtype, "empty") end

--- An array with unspecified contents whose allocation errors name `what`
--- (a kernel's outputs).
function M.empty_for(what, shape, dtype) return make(shape, dtype, what) end

function M.is_array(x) return getmetatable(x) == Array end

--- mgpu.symmetric(shape, dtype): a zeroed array of the symmetric heap, at the
--- same place on every device, so kernels reach other devices' copies with
--- ref:on_device(d).  Collective: every device makes the same ones in order.
function M.symmetric(shape, dtype)
  local where = compat.where()
  local a = make(shape, dtype, "symmetric", function(ctx, bytes)   -- named for the check that devices agree
    local name = string.format("%s%s (%d bytes) at %s", dtype or "f32", compat.shape_str(compat.shape(shape, "symmetric")),
                               bytes, where)
    return context.core.symmetric(ctx, bytes, name)
  end)
  a.symmetric = true
  return a
end

--- An array description without memory (shape and dtype only), for
--- tracing kernels ahead of their data: an abstract array.
function M.spec(shape, dtype, what)
  what = what or "spec"
  dtype = check_dtype(dtype, what)
  shape = compat.shape(shape, what .. " shape")
  local n = compat.numel(shape)
  return setmetatable({ shape = shape, dtype = dtype, size = n, nbytes = n * core().dtype_size(dtype), abstract = true }, Array)
end

--- mgpu.abstract(shape, dtype): an abstract array (no memory), accepted by
--- k:lower(...) and, in compile-only mode, by kernel calls.
function M.abstract(shape, dtype) return M.spec(shape, dtype, "abstract") end

function M.is_abstract(x) return M.is_array(x) and x.abstract == true end

-- The error for reading an abstract array's elements.
local function no_data(self, what)
  if self.abstract then
    compat.fail("ABSTRACT_NO_DATA", what, self.dtype, compat.shape_str(self.shape))
  end
end
M.no_data = no_data

-- Fill unless abstract; an engine error is said as `what`'s.
local function fill(a, what, ...)
  if a.abstract then return a end
  local ok, err = pcall(context.core.buffer_fill, a.buf, ...)
  if not ok then compat.rethrow((tostring(err):gsub("^mgpu_buffer_fill:", what .. ":"))) end
  return a
end

function M.zeros(shape, dtype)
  local a = make(shape, dtype, "zeros")
  return fill(a, "zeros", "value", a.dtype, a.size, 0)
end

function M.full(shape, value, dtype)
  if type(value) ~= "number" and type(value) ~= "boolean" then compat.fail("FULL_NOT_NUMBER") end
  local a = make(shape, dtype, "full")
  return fill(a, "full", "value", a.dtype, a.size, value == true and 1 or value == false and 0 or value)
end

-- x, or `default` when nil; an error naming `what` unless a finite number.
local function num(x, default, what)
  if x == nil then return default end
  if type(x) ~= "number" or x ~= x or x == math.huge or x == -math.huge then
    compat.fail("NOT_FINITE", what, type(x) == "number" and tostring(x) or type(x))
  end
  return x
end

--- Elements 0, 1, 2, ... (times `step`, plus `start`) in row-major order.
function M.iota(shape, dtype, start, step)
  start, step = num(start, 0, "iota: start"), num(step, 1, "iota: step")
  local a = make(shape, dtype, "iota")
  return fill(a, "iota", "iota", a.dtype, a.size, start, step)
end

-- Seeds: explicit ones reproduce; omitted ones are fresh for every call.
local seed_counter = os.time() * 1000 + math.floor((os.clock() * 1e6) % 1000)
local function seed_of(seed, what)
  if seed == nil then seed_counter = seed_counter + 1; return seed_counter end
  return compat.int(seed, what .. ": seed")
end

-- An array for random numbers: any dtype but pred (whose values are not numbers).
local function make_random(shape, dtype, what)
  if dtype == "pred" then compat.fail("RANDOM_PRED", what) end
  return make(shape, dtype, what)
end

M.random = {}
--- Uniform in [lo, hi) (default [0, 1)).
function M.random.uniform(shape, dtype, seed, lo, hi)
  lo, hi = num(lo, 0, "random.uniform: lo"), num(hi, 1, "random.uniform: hi")
  local a = make_random(shape, dtype, "random.uniform")
  return fill(a, "random.uniform", "uniform", a.dtype, a.size, lo, hi, seed_of(seed, "random.uniform"))
end
--- Normal with the given mean and standard deviation (default 0, 1).
function M.random.normal(shape, dtype, seed, mean, std)
  mean, std = num(mean, 0, "random.normal: mean"), num(std, 1, "random.normal: std")
  local a = make_random(shape, dtype, "random.normal")
  return fill(a, "random.normal", "normal", a.dtype, a.size, mean, std, seed_of(seed, "random.normal"))
end

-- "t[2][1]" for a 1-based index path.
local function path_str(path, n)
  local parts = { "t" }
  for i = 1, n or #path do parts[#parts + 1] = "[" .. path[i] .. "]" end
  return table.concat(parts)
end

local function what_is(x)
  if type(x) == "table" then return string.format("a table of %d", #x) end
  if type(x) == "number" or type(x) == "boolean" then return "a " .. type(x) end
  return type(x) == "nil" and "nil" or ("a " .. type(x) .. " (" .. compat.describe(x) .. ")")
end

-- The shape given by nested tables (their first rows) and the elements in
-- row-major order; an error naming the first row whose length or kind
-- differs from the first row at its depth.
local function flatten(t, what)
  local shape, probe, seen = {}, t, {}
  while type(probe) == "table" do
    if seen[probe] then compat.fail("TABLE_CONTAINS_ITSELF", what, string.rep("[1]", #shape)) end
    seen[probe] = true
    shape[#shape + 1] = #probe; probe = probe[1]
  end
  local flat, path = {}, {}
  local function walk(x, depth)
    if depth > #shape then
      if type(x) ~= "number" and type(x) ~= "boolean" and not compat.is_int64(x) then
        compat.fail("ELEMENT_NOT_NUMBER", what, path_str(path), what_is(x))
      end
      flat[#flat + 1] = x
      return
    end
    if type(x) ~= "table" or #x ~= shape[depth] then
      local first = {}
      for i = 1, depth - 1 do first[i] = 1 end
      compat.fail("RAGGED_TABLE", what, path_str(path, depth - 1), what_is(x), depth == 1 and "t" or path_str(first),
                  shape[depth], shape[depth] == 1 and "element" or "elements")
    end
    for i = 1, #x do
      path[depth] = i
      walk(x[i], depth + 1)
    end
    path[depth] = nil
  end
  walk(t, 1)
  return flat, shape
end

-- The 1-based index path of 0-based row-major element `flat` of `shape`.
local function index_path(flat, shape)
  local path = {}
  for d = #shape, 1, -1 do
    path[d] = flat % shape[d] + 1
    flat = math.floor(flat / shape[d])
  end
  return path
end

local function from_table(t, dtype, shape, what)
  if type(t) ~= "table" then compat.fail("NOT_NUMBERS", what, type(t)) end
  if next(t) == nil and shape == nil then compat.fail("EMPTY_TABLE", what) end
  local flat, nested = t, { #t }   -- nested: the shape the table's nesting gives (for messages)
  if type(t[1]) == "table" then
    flat, nested = flatten(t, what)
    shape = shape or nested
  end
  shape = compat.shape(shape or #flat, what .. " shape")
  if compat.numel(shape) ~= #flat then
    compat.fail("VALUES_DO_NOT_FILL", what, #flat, compat.shape_str(shape))
  end
  local a = make(shape, dtype, what)
  if a.abstract then return a end
  local ok, err = pcall(context.core.buffer_set, a.buf, a.dtype, 0, flat)
  if not ok then
    err = tostring(err)
    local i = tonumber(err:match("element (%d+) is not a number"))
    if i then compat.fail("ELEMENT_NOT_NUMBER", what, path_str({ i }), what_is(flat[i])) end
    local at, rest = err:match("^mgpu_buffer_set_[fi]64: element (%d+) is (.*)$")   -- a value the dtype cannot hold
    if at then compat.fail("ELEMENT_DOES_NOT_FIT", what, path_str(index_path(tonumber(at), nested)), rest) end
    compat.fail("FAILED_WITH", what, err)
  end
  return a
end

--- An array from a table of numbers: flat (shape defaults to {#t}) or
--- nested (the nesting gives the shape; `shape` may reshape it).
function M.from_table(t, dtype, shape) return from_table(t, dtype, shape, "from_table") end

--- mgpu.array(t, dtype): a flat table, a nested table (its nesting gives
--- the shape), or another array (copied).
function M.array(t, dtype)
  if M.is_array(t) then return t:copy(dtype) end
  if type(t) ~= "table" then compat.fail("ARRAY_FROM_BAD", type(t)) end
  return from_table(t, dtype, nil, "array")
end

--- The elements as a flat Lua table (booleans for pred).
function Array:to_table()
  no_data(self, "to_table")
  local out, step, n = {}, 1048576, self.size
  local first = 0
  while first < n do
    local cnt = math.min(step, n - first)
    local part = core().buffer_get(self.buf, self.dtype, first, cnt)
    for i = 1, cnt do out[first + i] = part[i] end
    first = first + cnt
  end
  return out
end

--- The elements as nested tables following the shape (numpy's tolist):
--- a[i][j] is element (i, j), 1-based; a rank-0 array gives its number.
function Array:tolist()
  local flat, shape = self:to_table(), self.shape
  if #shape == 0 then return flat[1] end
  local pos = 0
  local function build(depth)
    local out = {}
    if depth == #shape then
      for i = 1, shape[depth] do out[i] = flat[pos + i] end
      pos = pos + shape[depth]
    else
      for i = 1, shape[depth] do out[i] = build(depth + 1) end
    end
    return out
  end
  return build(1)
end

--- Element at a 1-based index (flat) or 1-based multi-index.
function Array:get(...)
  local idx = { ... }
  local flat = 0
  if #idx == 1 then
    flat = compat.int(idx[1], "index") - 1
  elseif #idx == #self.shape then
    for i = 1, #idx do
      local v = compat.int(idx[i], "index " .. i)
      if v < 1 or v > self.shape[i] then compat.fail("INDEX_OUT_OF_RANGE", i, v, self.shape[i]) end
      flat = flat * self.shape[i] + (v - 1)
    end
  else
    compat.fail("GET_ARITY", #self.shape, #idx)
  end
  if flat < 0 or flat >= self.size then compat.fail("FLAT_INDEX_OUT_OF_RANGE", flat + 1, self.size) end
  no_data(self, "get")
  return core().buffer_get(self.buf, self.dtype, flat, 1)[1]
end

--- A copy, converted to `dtype` when given.
function Array:copy(dtype)
  dtype = dtype and check_dtype(dtype, "copy") or self.dtype
  if self.abstract then return M.spec(self.shape, dtype, "copy") end
  local out = new(self.shape, dtype, "copy")
  if out.abstract then no_data(out, "copy") end
  if dtype == self.dtype then
    core().buffer_copy(out.buf, 0, self.buf, 0, self.nbytes)
  else
    local step, first = 1048576, 0
    while first < self.size do
      local cnt = math.min(step, self.size - first)
      local ok, err = pcall(context.core.buffer_set, out.buf, dtype, first, core().buffer_get(self.buf, self.dtype, first, cnt))
      if not ok then   -- a value the dtype cannot hold: its flat index, 1-based
        local at, rest = tostring(err):match("^mgpu_buffer_set_[fi]64: element (%d+) is (.*)$")
        if at then compat.fail("ELEMENT_DOES_NOT_FIT", "copy", tonumber(at) + 1, rest) end
        compat.rethrow(err)
      end
      first = first + cnt
    end
  end
  return out
end

--- A copy of rows [start, start + size) (0-based) along the first axis: a band of a large
--- result checked on the host without downloading all of it.
function Array:rows(start, size)
  if not M.is_array(self) then compat.fail("ROWS_NOT_ARRAY") end
  start, size = compat.rows_args(self.shape, start, size)
  local shape, row_bytes = { size }, core().dtype_size(self.dtype)
  for i = 2, #self.shape do shape[i], row_bytes = self.shape[i], row_bytes * self.shape[i] end
  if self.abstract then return M.spec(shape, self.dtype, "rows") end
  local out = new(shape, self.dtype, "rows")
  if out.abstract then no_data(out, "rows") end
  if out.nbytes > 0 then core().buffer_copy(out.buf, 0, self.buf, start * row_bytes, out.nbytes) end
  return out
end

--- The same memory seen with another shape of the same size.
function Array:reshape(shape)
  shape = compat.shape(shape, "reshape")
  if compat.numel(shape) ~= self.size then
    compat.fail("RESHAPE_SIZE", compat.shape_str(shape), self.size)
  end
  return setmetatable({ shape = shape, dtype = self.dtype, size = self.size, nbytes = self.nbytes, buf = self.buf,
                        abstract = self.abstract }, Array)
end

--- A DLPack tensor (DLManagedTensor*, as a light userdata or FFI pointer)
--- viewing this array's memory; the consumer calls its deleter (one kept
--- back is freed with mgpu.dlpack_free, or keeps the memory alive).
function Array:to_dlpack()
  no_data(self, "to_dlpack")
  return core().dlpack_export(self.buf, self.dtype, self.shape)
end

--- An array over a DLPack tensor's memory (no copy); the tensor's deleter
--- runs when the array is collected.
--- A DLManagedTensor pointer comes as a light userdata or an FFI pointer; a
--- full userdata (one with a metatable, such as io.stdout) is not one.
-- tensor, or an error naming `what` when it is not a DLManagedTensor pointer.
local function dlpack_arg(tensor, what)
  local mt = type(tensor) == "userdata" and getmetatable(tensor)
  if (type(tensor) ~= "userdata" and type(tensor) ~= "cdata") or mt then
    local kind = mt and type(mt) == "table" and rawget(mt, "__name") or type(tensor)
    compat.fail("NOT_DLPACK", what, tostring(kind))
  end
  return tensor
end

-- Re-raises an engine error of mgpu_dlpack_<fn> under the Lua name `what`.
local function dlpack_rethrow(err, fn, what)
  compat.rethrow((tostring(err):gsub("mgpu_dlpack_" .. fn .. ":", what .. ":", 1)))
end

function M.from_dlpack(tensor)
  dlpack_arg(tensor, "from_dlpack")
  local ok, buf, dtype, shape = pcall(core().dlpack_import, context.get(), tensor)
  if not ok then dlpack_rethrow(buf, "import", "from_dlpack") end
  local n = compat.numel(shape)
  return setmetatable({ shape = shape, dtype = dtype, size = n, nbytes = n * core().dtype_size(dtype), buf = buf }, Array)
end

--- Run the deleter of a DLPack tensor that no consumer took (a:to_dlpack()
--- kept back).  A tensor that mgpu.from_dlpack imported is refused: its
--- array's collection runs the deleter.
function M.dlpack_free(tensor)
  local ok, err = pcall(core().dlpack_free, context.get(), dlpack_arg(tensor, "dlpack_free"))
  if not ok then dlpack_rethrow(err, "free", "dlpack_free") end
end

-- Arrays hold data; arithmetic and comparisons on them are traced inside a
-- kernel body (on the refs' loaded values), not on the host.
local function no_host_math()
  compat.fail("HOST_ARITHMETIC")
end
for _, mm in ipairs({ "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__idiv", "__concat", "__lt", "__le" }) do
  Array[mm] = no_host_math
end

--- "mgpu.array(f32[2,3], {{0, 1, 2}, {3, 4, 5}})": the dtype, shape and
--- elements (mgpu.format: at most about a thousand read, the middle of a
--- large array elided); an abstract array has no elements to show.
function Array:__tostring()
  local head = string.format("%s(%s%s", self.abstract and "mgpu.abstract" or "mgpu.array", self.dtype,
                             compat.shape_str(self.shape))
  if self.abstract then return head .. ")" end
  return format.array(head, self.shape, self.dtype, function(first, count)
    return context.core.buffer_get(self.buf, self.dtype, first, count)
  end)
end

return M
