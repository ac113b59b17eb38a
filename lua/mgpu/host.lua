--[[
mgpu.host -- f64 arrays in host memory for references and checks.  They
are the yardstick for kernels, so they compute plainly in double precision:
elementwise ops with NumPy broadcasting, reductions over one axis, row
slices, matmul, and relerr(out, ref) = ||out - ref|| / ||ref||.

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
-- core[name](...), its error (the engine's message, no position) raised at
-- the user's line.
local function hc(name, ...)
  local r = compat.pack(pcall(core()[name], ...))
  if not r[1] then compat.rethrow(r[2]) end
  return compat.unpack(r, 2, r.n)
end
local function wrap(h) return setmetatable({ h = h, shape = core().host_shape(h) }, Host) end
function M.is_host(x) return getmetatable(x) == Host end

--- A host copy of a device array (or a host array, returned as is).
function M.from(x)
  if M.is_host(x) then return x end
  if not array.is_array(x) then compat.fail("host.from: expected an mgpu array, got %s", type(x)) end
  array.no_data(x, "host.from")
  local h = hc("host_new", context.get(), x.shape)
  hc("host_download", h, x.buf, x.dtype)
  return wrap(h)
end

function M.zeros(shape)
  return wrap(hc("host_new", context.get(), compat.shape(shape, "host.zeros shape")))
end

function M.from_table(t, shape)
  local h = M.zeros(shape or #t)
  hc("host_set", h.h, 0, t)
  return h
end

--- A device array of `dtype` holding these values.
function Host:to_device(dtype)
  local a = array.empty(self.shape, dtype)
  if a.abstract then return a end
  hc("host_upload", self.h, a.buf, a.dtype)
  return a
end

function Host:to_table()
  return hc("host_get", self.h, 0, compat.numel(self.shape))
end

local function operand(x)
  if M.is_host(x) then return x.h end
  if type(x) == "number" then return x end
  if array.is_array(x) then return M.from(x).h end
  compat.fail("host arrays combine with host arrays, device arrays and numbers, not %s", type(x))
end

local function binop(name)
  return function(a, b)
    if type(a) == "number" then   -- number op host: lift the number
      local s = M.zeros({})
      hc("host_set", s.h, 0, { a })
      a = s
    end
    return wrap(hc("host_map", name, operand(a), operand(b)))
  end
end
Host.__add, Host.__sub, Host.__mul, Host.__div = binop("add"), binop("sub"), binop("mul"), binop("div")
Host.__unm = function(a) return wrap(hc("host_map", "neg", a.h)) end
Host.__tostring = function(a) return "mgpu.host" .. compat.shape_str(a.shape) end
function Host.max(a, b) return binop("max")(a, b) end
function Host.min(a, b) return binop("min")(a, b) end
for _, f in ipairs({ "exp", "log", "sqrt", "tanh", "abs" }) do
  Host[f] = function(a) return wrap(hc("host_map", f, a.h)) end
end

local codes = require("mgpu.trace").dtype_codes
--- Values rounded to a dtype (what storing them in that dtype keeps).
function Host:round(dtype)
  local c = codes[dtype]
  if not c then compat.fail("round: unknown dtype %s", tostring(dtype)) end
  return wrap(hc("host_map", "round", self.h, c))
end

local function reducer(name)
  return function(a, axis, keepdims)
    axis = axis == nil and -1 or compat.int(axis, name .. " axis")
    return wrap(hc("host_reduce", name, a.h, axis, keepdims and true or false))
  end
end
Host.sum, Host.mean, Host.amax, Host.amin = reducer("sum"), reducer("mean"), reducer("max"), reducer("min")

--- Rows [start, start + size) (0-based) along the first axis.
function Host:rows(start, size)
  return wrap(hc("host_slice", self.h, compat.int(start, "start"), compat.int(size, "size")))
end

function M.matmul(a, b) return wrap(hc("host_matmul", operand(a), operand(b))) end

--- ||out - ref|| / ||ref||; out and ref may be device or host arrays.
function M.relerr(out, ref)
  return hc("host_relerr", operand(out), operand(ref))
end

return M
