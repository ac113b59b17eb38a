--[[
mgpu.host -- f64 arrays in host memory for references and checks.  They
are the yardstick for kernels, so they compute plainly in double precision:
elementwise ops with NumPy broadcasting, reductions over one axis, row
slices, transposes, matmul, and relerr(out, ref) = ||out - ref|| / ||ref||.

  local ref = mgpu.host.from(x) + mgpu.host.from(y)
  assert(mgpu.host.relerr(z, ref) < 1e-6)
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local context = require "mgpu.context"
local array = require "mgpu.array"

local M = {}
local Host = {}
Host.__index = Host
M.Host = Host

local function core() return context.core end
local fail = compat.fail

-- core.<name>(...), with a failure raised at the user's line.
local function call(name, ...)
  local r = compat.pack(pcall(core()[name], ...))
  if not r[1] then compat.rethrow(r[2]) end
  return compat.unpack(r, 2, r.n)
end

local function wrap(h)
  local shape = core().host_shape(h)
  context.track(8 * compat.numel(shape))
  return setmetatable({ h = h, shape = shape }, Host)
end
function M.is_host(x) return getmetatable(x) == Host end

-- What `x` is, for errors: "a device array", "a number", ...
local function what(x)
  if array.is_array(x) then return "a device array" end
  if M.is_host(x) then return "a host array" end
  return type(x)
end

-- `self` of a method must be a host array (h:sum(), not h.sum()).
local function need_host(x, method)
  if not M.is_host(x) then
    fail("HOST_NOT_HOST", method, method, what(x))
  end
  return x
end

--- A host copy of a device array (or a host array, returned as is).
function M.from(x)
  if M.is_host(x) then return x end
  if not array.is_array(x) then fail("HOST_FROM_NOT_ARRAY", type(x)) end
  array.no_data(x, "host.from")
  local h = call("host_new", context.get(), x.shape)
  call("host_download", h, x.buf, x.dtype)
  return wrap(h)
end

function M.zeros(shape)
  shape = compat.shape(shape, "host.zeros: shape")
  if #shape > 8 then fail("HOST_RANK", compat.shape_str(shape)) end
  return wrap(call("host_new", context.get(), shape))
end

function M.from_table(t, shape)
  if type(t) ~= "table" then fail("NOT_NUMBERS", "host.from_table", type(t)) end
  for i = 1, #t do
    if type(t[i]) ~= "number" then fail("HOST_VALUE_NOT_NUMBER", i, type(t[i])) end
  end
  local h = M.zeros(shape or #t)
  local n = compat.numel(h.shape)
  if #t ~= n then
    fail("HOST_VALUE_COUNT", #t, compat.shape_str(h.shape), n)
  end
  call("host_set", h.h, 0, t)
  return h
end

--- A device array of `dtype` holding these values.
function Host:to_device(dtype)
  need_host(self, "to_device")
  local a = array.empty(self.shape, dtype)
  if a.abstract then return a end
  call("host_upload", self.h, a.buf, a.dtype)
  return a
end

function Host:to_table()
  need_host(self, "to_table")
  return call("host_get", self.h, 0, compat.numel(self.shape))
end

local function operand(x, name)
  if M.is_host(x) then return x.h end
  if type(x) == "number" then return x end
  if array.is_array(x) then return M.from(x).h end
  fail("HOST_BAD_OPERAND", name, type(x))
end

local function binop(name)
  return function(a, b)
    if not M.is_host(a) and not M.is_host(b) then   -- Host.max(x, y) with neither a host array
      fail("HOST_OPERANDS", name, what(a), what(b))
    end
    if type(a) == "number" then   -- number op host: lift the number
      local s = M.zeros({})
      call("host_set", s.h, 0, { a })
      a = s
    end
    return wrap(call("host_map", name, operand(a, name), operand(b, name)))
  end
end
Host.__add, Host.__sub, Host.__mul, Host.__div = binop("add"), binop("sub"), binop("mul"), binop("div")
Host.__unm = function(a) return wrap(call("host_map", "neg", a.h)) end
Host.__tostring = function(a) return "mgpu.host" .. compat.shape_str(a.shape) end
function Host.max(a, b) return binop("max")(a, b) end
function Host.min(a, b) return binop("min")(a, b) end
for _, f in ipairs({ "exp", "log", "sqrt", "tanh", "abs" }) do
  Host[f] = function(a) return wrap(call("host_map", f, need_host(a, f).h)) end
end

local codes = require("mgpu.trace").dtype_codes
--- Values rounded to a dtype (what storing them in that dtype keeps).
function Host:round(dtype)
  need_host(self, "round")
  local c = codes[dtype]
  if not c then fail("UNKNOWN_DTYPE", "round", tostring(dtype)) end
  return wrap(call("host_map", "round", self.h, c))
end

local function reducer(name, method)
  return function(a, axis, keepdims)
    need_host(a, method)
    axis = axis == nil and -1 or compat.int(axis, method .. " axis")
    if axis < -#a.shape or axis >= #a.shape then
      fail("HOST_AXIS", method, axis, compat.shape_str(a.shape))
    end
    return wrap(call("host_reduce", name, a.h, axis, keepdims and true or false))
  end
end
Host.sum, Host.mean, Host.amax, Host.amin = reducer("sum", "sum"), reducer("mean", "mean"), reducer("max", "amax"), reducer("min", "amin")

--- Rows [start, start + size) (0-based) along the first axis.
function Host:rows(start, size)
  need_host(self, "rows")
  start, size = compat.rows_args(self.shape, start, size)
  return wrap(call("host_slice", self.h, start, size))
end

--- The transpose of a 2-D array.
function Host:transpose()
  need_host(self, "transpose")
  return wrap(call("host_transpose", self.h))
end

local function host_operand(x, what_for)
  if M.is_host(x) or array.is_array(x) then return M.from(x) end
  fail("HOST_NOT_ARRAY", what_for, type(x))
end

function M.matmul(a, b)
  a, b = host_operand(a, "host.matmul"), host_operand(b, "host.matmul")
  return wrap(call("host_matmul", a.h, b.h))
end

--- ||out - ref|| / ||ref||; out and ref may be device or host arrays.
function M.relerr(out, ref)
  out, ref = host_operand(out, "relerr"), host_operand(ref, "relerr")
  return call("host_relerr", out.h, ref.h)
end

return M
