--[[
Helpers of the Pallas conformance suite (spec/conformance/*_conf.lua): one
object per JAX test class that declares its tests under their JAX names,
builds kernels the way the class's `self.kernel` / `self.pallas_call` do,
marks divergences, and checks results against references computed on the
host in double precision.

  local C = dofile("spec/conformance/support/conf.lua")
  local cls = C.class("PallasCallTest", function(name, ...) return _ENV[name](...) end)
  cls.test("test_add_one", function() ... end)
  cls.diverge("test_x", 3, "pallas_call with no specs", "run_scoped: allocation 1", function() ... end)

A divergence runs its body: the error it raises must contain the expected
text and makes the test pending ("divergence N: what; error"); a body that
passes, or fails differently, fails the test, so a fixed divergence is seen
at once and its pending can be dropped.

With MGPU_CONF_PTX_DIR set, the first kernel each passing test runs also
writes its PTX (k:lower with the same arguments) there, for the ptxas
check (tools/ptxas_all.sh, the ctest conformance_ptxas).
]]
require("mgpu.compat").mark_lib()
local mgpu = require "mgpu"
local compat = require "mgpu.compat"

local C = { mgpu = mgpu, T = mgpu.transforms, L = mgpu.Layout }

-- -- Kernels ------------------------------------------------------------------

local ptx_dir = os.getenv("MGPU_CONF_PTX_DIR")
local current = "?"          -- the running test's full name (PTX file names)
local in_divergence = false  -- the running test shows a divergence: its kernels are not checked
-- The PTX written so far, shared by every class file (each loads this file with dofile).
local ptx_state = package.loaded["mgpu.conformance.ptx"] or { seen = {}, tests = {}, count = 0 }
package.loaded["mgpu.conformance.ptx"] = ptx_state

-- Write the PTX of kernel k for these arguments: the first kernel of each JAX test (its first
-- parameter set that passes) in each class, once per code, which keeps the ptxas check to a few
-- hundred files.
local function record_ptx(w, k, ...)
  local test = current:match("^[^(]*")
  if not ptx_dir or w.ptx_done or in_divergence or ptx_state.tests[test] then return end
  w.ptx_done = true
  ptx_state.tests[test] = true
  local ptx = k:lower(...).ptx
  local code = ptx:gsub("\n%s*//[^\n]*", "")      -- kernels differing only in their line comments
  if ptx_state.seen[code] then return end
  ptx_state.seen[code] = true
  ptx_state.count = ptx_state.count + 1
  local name = string.format("%s/%04d-%s.ptx", ptx_dir, ptx_state.count, current:gsub("[^%w_.=-]", "_"):sub(1, 120))
  local f = assert(io.open(name, "w"))
  f:write(ptx)
  f:close()
end

--- A kernel object (mgpu.kernel or mgpu.pallas_call) whose calls also write
--- their PTX for the ptxas check.
function C.wrap(k)
  local w = { raw = k }
  function w.lower(_, ...) return k:lower(...) end
  function w.call_into(_, outs, ...)
    local r = k:call_into(outs, ...)
    record_ptx(w, k, ...)
    return r
  end
  return setmetatable(w, { __call = function(_, ...)
    local r = compat.pack(k(...))
    record_ptx(w, k, ...)
    return compat.unpack(r, 1, r.n)
  end })
end

-- A plain options table merged with the class's lowering semantics, as
-- PallasTest.kernel replaces the compiler params' lowering_semantics.
local function params(p, semantics)
  local opts = {}
  for k, v in pairs(p or {}) do opts[k] = v end
  opts.lowering_semantics = semantics
  return mgpu.CompilerParams(opts)
end

local function copy(t)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  return o
end

-- -- Test classes ---------------------------------------------------------------

--- A JAX test class: cls.test / cls.diverge declare its tests (busted `it`s
--- named "Class.test_name"), cls.kernel / cls.pallas_call build kernels
--- under its lowering semantics ("Lane", JAX's default, or "Warpgroup" for
--- the *WGTest classes).
--- `busted` calls the spec file's busted functions by name (they change
--- with the block running, so they are looked up at each call).
function C.class(name, busted, opts)
  opts = opts or {}
  local cls = { name = name, semantics = opts.semantics or "Lane" }
  local function it(...) return busted("it", ...) end
  local function pending(...) return busted("pending", ...) end

  function cls.params(p) return params(p, cls.semantics) end

  --- mgpu.kernel{...} with compiler_params given as a plain table.
  function cls.kernel(spec)
    local s = copy(spec)
    s.compiler_params = params(spec.compiler_params, cls.semantics)
    return C.wrap(mgpu.kernel(s))
  end

  --- PallasTest.pallas_call: an int grid is a 1-tuple, and missing in_specs
  --- / out_specs mean one whole-array BlockSpec per input / output (the
  --- number of inputs is the call's argument count).
  function cls.pallas_call(spec)
    local built = {}
    local nout = getmetatable(spec.out_shape) and 1 or #spec.out_shape
    local function kernel_for(nin)
      local w = built[nin]
      if not w then
        local s = copy(spec)
        if type(s.grid) == "number" then s.grid = { s.grid } end
        local function fill(specs, n)
          if specs == nil then
            local l = {}
            for i = 1, n do l[i] = mgpu.BlockSpec{} end
            return l
          end
          return specs
        end
        s.in_specs, s.out_specs = fill(s.in_specs, nin), fill(s.out_specs, nout)
        s.compiler_params = params(spec.compiler_params, cls.semantics)
        w = C.wrap(mgpu.pallas_call(s))
        built[nin] = w
      end
      return w
    end
    return setmetatable({ lower = function(_, ...) return kernel_for(select("#", ...)):lower(...) end },
                        { __call = function(_, ...) return kernel_for(select("#", ...))(...) end })
  end

  local function declare(tname, fn, divergent)
    local full = name .. "." .. tname
    it(full, function()
      current, in_divergence = full, divergent
      fn()
    end)
  end

  --- A test expected to pass.
  function cls.test(tname, fn) declare(tname, fn, false) end

  --- A test that shows a divergence from Pallas: `id` is the number of a
  --- known divergence (issue 27) or "new-<name>"; `expect` is a plain
  --- substring of the error it raises today (or a list of alternatives).
  function cls.diverge(tname, id, what, expect, fn)
    declare(tname, function()
      local ok, err = pcall(fn)
      local tag = "divergence " .. tostring(id) .. ": " .. what
      if ok then
        error(tag .. ": the test passes now; make it a plain cls.test", 0)
      end
      err = tostring(err)
      local alts = type(expect) == "table" and expect or { expect }
      local found = #alts == 0
      for _, e in ipairs(alts) do found = found or err:find(e, 1, true) ~= nil end
      if not found then
        error(tag .. ": expected an error containing '" .. table.concat(alts, "' or '") .. "', got: " .. err, 0)
      end
      pending(tag .. "; " .. (err:match("^[^\n]*")))
    end, true)
  end

  --- cls.test when `div` is nil, else cls.diverge with div = { id, what, expect }
  --- (for tests that diverge under one lowering semantics only).
  function cls.check(tname, div, fn)
    if div then cls.diverge(tname, div[1], div[2], div[3], fn) else cls.test(tname, fn) end
  end

  return cls
end

-- -- Inputs ---------------------------------------------------------------------

--- Fresh uniform numbers in [lo, hi) (integers for integer dtypes).
function C.uniform(shape, dtype, lo, hi) return mgpu.random.uniform(shape, dtype or "f32", nil, lo or 0, hi or 1) end
--- Fresh normal numbers.
function C.normal(shape, dtype) return mgpu.random.normal(shape, dtype or "f32") end
--- Elements 0, 1, 2, ... (jnp.arange(n).reshape(shape)).
function C.iota(shape, dtype) return mgpu.iota(shape, dtype or "f32") end

-- -- Checks ---------------------------------------------------------------------

--- The elements of a device array (row-major, 1-based) or a table.
function C.flat(x)
  if mgpu.is_array(x) then return x:to_table() end
  return x
end

--- f(v, i) for every element of a table (i 1-based).
function C.map(t, f)
  t = C.flat(t)
  local o = {}
  for i = 1, #t do o[i] = f(t[i], i) end
  return o
end

--- The elements of several tables (or arrays) one after another.
function C.concat(...)
  local o = {}
  for i = 1, select("#", ...) do
    for _, v in ipairs(C.flat((select(i, ...)))) do o[#o + 1] = v end
  end
  return o
end

--- A bitwise operation on two 32-bit integers (unsigned view), bit by bit:
--- op(x, y) on bits 0/1, e.g. function(x, y) return x * y end for AND.
function C.bitop(a, b, op)
  a, b = a % 4294967296, b % 4294967296
  local r, bit = 0, 1
  for _ = 1, 32 do
    r = r + op(a % 2, b % 2) * bit
    a, b, bit = math.floor(a / 2), math.floor(b / 2), bit * 2
  end
  return r
end

--- Each value of a table rounded to `dtype` (what an array of it holds).
function C.round(t, dtype)
  t = C.flat(t)
  if dtype == "f64" or dtype:sub(1, 1) == "i" or dtype:sub(1, 1) == "u" then return t end
  return mgpu.host.from_table(t, { #t }):round(dtype):to_table()
end

-- Elements equal, NaN equal to NaN.
local function same(a, b) return a == b or (a ~= a and b ~= b) end

--- Every element of `got` equals `want` (np.testing.assert_array_equal).
function C.equal(got, want, what)
  got, want = C.flat(got), C.flat(want)
  assert(#got == #want, string.format("%s: %d elements, expected %d", what or "result", #got, #want))
  for i = 1, #want do
    if not same(got[i], want[i]) then
      error(string.format("%s: element %d (1-based) is %s, expected %s", what or "result", i,
                          tostring(got[i]), tostring(want[i])), 2)
    end
  end
end

--- |got - want| <= atol + rtol |want| elementwise, infinities equal
--- (np.testing.assert_allclose).
function C.close(got, want, rtol, atol, what)
  got, want = C.flat(got), C.flat(want)
  rtol, atol = rtol or 1e-7, atol or 0
  assert(#got == #want, string.format("%s: %d elements, expected %d", what or "result", #got, #want))
  for i = 1, #want do
    local g, w = got[i], want[i]
    if not (same(g, w) or math.abs(g - w) <= atol + rtol * math.abs(w)) then
      error(string.format("%s: element %d (1-based) is %.9g, expected %.9g (rtol %g, atol %g)", what or "result", i,
                          g, w, rtol, atol), 2)
    end
  end
end

--- ||got - want|| / ||want|| below tol.
function C.relerr(got, want, tol, what)
  got, want = C.flat(got), C.flat(want)
  assert(#got == #want, string.format("%s: %d elements, expected %d", what or "result", #got, #want))
  local num, den = 0, 0
  for i = 1, #want do
    num = num + (got[i] - want[i]) ^ 2
    den = den + want[i] ^ 2
  end
  local e = math.sqrt(num) / math.max(math.sqrt(den), 1e-300)
  if not (e <= tol) then
    error(string.format("%s: relative error %.3g exceeds %.3g", what or "result", e, tol), 2)
  end
  return e
end

--- The error fn(...) raises (a string); fails when it raises none.
function C.err_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error")
  return tostring(err)
end

--- The toolkit's ptxas (MGPU_PTXAS, else /usr/local/cuda/bin/ptxas or PATH),
--- as C.ptxas(ptx) -> what it prints assembling the PTX for sm_90a with -v;
--- nil when there is none.
local function find_ptxas()
  for _, p in ipairs({ os.getenv("MGPU_PTXAS") or "", "/usr/local/cuda/bin/ptxas" }) do
    local f = p ~= "" and io.open(p)
    if f then f:close(); return p end
  end
  local p = io.popen("command -v ptxas 2>/dev/null")
  local path = p:read("*l")
  p:close()
  return path ~= "" and path or nil
end
local ptxas_bin = find_ptxas()
if ptxas_bin then
  function C.ptxas(ptx)
    local path = os.tmpname()
    local f = assert(io.open(path .. ".ptx", "w"))
    f:write(ptx)
    f:close()
    local p = io.popen(ptxas_bin .. " -arch=sm_90a -v " .. path .. ".ptx -o " .. path .. ".cubin 2>&1")
    local out = p:read("*a")
    p:close()
    os.remove(path .. ".ptx"); os.remove(path .. ".cubin"); os.remove(path)
    return out
  end
end

--- What a script prints on stdout when the mgpu command runs it in the
--- interpreter (for tests of debug_print output), and its stderr.
function C.run_script(body)
  local path = os.tmpname()
  local f = assert(io.open(path .. ".lua", "w"))
  f:write(body)
  f:close()
  local bin = os.getenv("MGPU_BIN") or "build/mgpu"
  local p = assert(io.popen(bin .. " --interpret " .. path .. ".lua 2>" .. path .. ".err"))
  local out = p:read("*a")
  p:close()
  local e = io.open(path .. ".err")
  local err = e and e:read("*a") or ""
  if e then e:close() end
  os.remove(path .. ".lua"); os.remove(path .. ".err"); os.remove(path)
  return out, err
end

return C
