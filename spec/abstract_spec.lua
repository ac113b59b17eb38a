-- Abstract arrays (mgpu.abstract, mgpu.shape values) and compile-only mode
-- (mgpu --emit-ptx, MGPU_COMPILE_ONLY=1): nothing is allocated, kernels
-- compile and return abstract outputs, reading data is an error.
local mgpu = require "mgpu"
local util = dofile("spec/support/util.lua")
local bin, script = util.bin, util.script
local function run(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"rc=$?\"")
  local out = p:read("a"); p:close()
  return out, tonumber(out:match("rc=(%d+)%s*$"))
end

local twice = mgpu.kernel{ name = "twice", grid = function(x) return { mgpu.cdiv(x.size, 256) } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  body = function(x, o)
    local b = mgpu.ds(mgpu.program_id(0) * 256, 256)
    o:at(b):store(x:at(b):load() * 2)
  end }

describe("abstract arrays", function()
  it("lower takes mgpu.abstract and mgpu.shape values at any size", function()
    local a = mgpu.abstract({ 1073741824 }, "bf16")
    assert.is_true(mgpu.is_abstract(a))
    assert.are.equal("mgpu.abstract(bf16[1073741824])", tostring(a))
    local l = twice:lower(a)
    assert.matches("%.entry twice%(", l.ptx)
    local l2 = twice:lower(mgpu.shape({ 4096 }, "f32"))
    assert.matches("f32%[4096%]", l2.ir)
  end)

  it("cannot be run or read outside compile-only mode", function()
    local a = mgpu.abstract({ 256 }, "f32")
    assert.has_error(function() twice(a) end)
    local ok, err = pcall(twice, a)
    assert.is_false(ok)
    assert.matches("argument 1 is an abstract array", err)
    ok, err = pcall(function() return a:to_table() end)
    assert.matches("compile%-only: no data", err)
    ok, err = pcall(mgpu.host.from, a)
    assert.matches("host.from: compile%-only: no data", err)
    assert.is_true(mgpu.is_abstract(a:reshape({ 16, 16 })))
    assert.is_true(mgpu.is_abstract(a:copy("bf16")))
  end)
end)

describe("compile-only mode", function()
  local body = [[
local mgpu = require "mgpu"
assert(mgpu.compile_only())
local k = mgpu.kernel{ name = "twice", grid = function(x) return { mgpu.cdiv(x.size, 256) } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  body = function(x, o) local b = mgpu.ds(mgpu.program_id(0) * 256, 256); o:at(b):store(x:at(b):load() * 2) end }
local n = 1 << 34     -- 64 GB of f32: only abstract arrays can be this big here
local xs = { mgpu.random.uniform(n), mgpu.random.normal(n), mgpu.zeros(n), mgpu.full(n, 1), mgpu.empty(n),
             mgpu.iota(n), mgpu.from_table({ 1, 2, 3 }), mgpu.array({ { 1, 2 }, { 3, 4 } }) }
for i, x in ipairs(xs) do assert(mgpu.is_abstract(x), "constructor " .. i .. " allocated") end
local z = k(xs[1])
assert(mgpu.is_abstract(z) and z.size == n and z.dtype == "f32")
assert(mgpu.is_abstract(k(mgpu.shape({ 512 }, "bf16"))))
local ok, err = pcall(function() return z:to_table() end)
assert(not ok and err:match("compile%-only: no data"), err)
ok, err = pcall(mgpu.host.from, z)
assert(not ok and err:match("compile%-only: no data"), err)
ok, err = pcall(mgpu.bench, function() k(xs[1]) end)
assert(not ok and err:match("bench: nothing runs in compile%-only mode"), err)
print("compile-only ok")
]]

  it("MGPU_COMPILE_ONLY=1 makes constructors abstract and kernel calls compile only", function()
    local out, rc = run("MGPU_COMPILE_ONLY=1 " .. bin .. " " .. script(body))
    assert.are.equal(0, rc, out)
    assert.matches("compile%-only ok", out)
  end)

  it("--emit-ptx implies compile-only and writes the PTX", function()
    local dir = os.tmpname() .. "_ptx"
    local out, rc = run(bin .. " --emit-ptx " .. dir .. " " .. script(body))
    assert.are.equal(0, rc, out)
    local f = assert(io.open(dir .. "/twice.ptx"))
    assert.matches("%.entry twice%(", f:read("a")); f:close()
    os.remove(dir .. "/twice.ptx"); os.remove(dir .. "/twice.2.ptx"); os.remove(dir)
  end)
end)
