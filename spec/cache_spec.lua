-- The on-disk kernel cache shared by processes (the GPU path, run against
-- spec/c/fake_cuda.c, a stand-in driver: the interpreter never uses the
-- cache): eight processes compiling the same kernels into one directory at
-- once all succeed and leave whole entries only, which a later process
-- loads.  (Odd entries and settings: spec/c/test_cache.c, fuzz/fuzz_cache.c.)
local util = dofile("spec/support/util.lua")

local fake = os.getenv("MGPU_FAKE_CUDA")
local describe_fake = fake and describe or pending

-- Six kernels of different IR, each compiled and launched once.
local script = [[
local mgpu = require "mgpu"
for s = 1, 6 do
  local k = mgpu.kernel{ name = "k" .. s, out_shape = mgpu.shape({ 256 }, "f32"),
                         body = function(x, o) o:store(x:load() * s + s) end }
  k(mgpu.iota(256, "f32"))
end
print("done")
]]

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p " .. d))
  return d
end

local function count(s, plain)
  local n, at = 0, 1
  while true do
    local i = s:find(plain, at, true)
    if not i then return n end
    n, at = n + 1, i + #plain
  end
end

describe_fake("the kernel cache (a stand-in driver)", function()
  it("takes eight processes compiling the same kernels at once and keeps whole entries", function()
    local dir, p = tmpdir(), util.script(script)
    local env = string.format("env -u MGPU_INTERPRET MGPU_LIBCUDA=%s MGPU_CACHE_DIR=%s MGPU_DEBUG=cache", fake, dir)
    local cmd = {}
    for i = 1, 8 do
      cmd[i] = string.format("(%s timeout 120 %s %s > %s/out%d 2>&1; echo \"exit=$?\" >> %s/out%d) &", env, util.bin, p,
                             dir, i, dir, i)
    end
    util.output(table.concat(cmd, " ") .. " wait")
    local misses = 0
    for i = 1, 8 do
      local f = assert(io.open(dir .. "/out" .. i)); local out = f:read("*a"); f:close()
      assert.matches("done\nexit=0\n$", out)
      assert.are.equal(0, count(out, "corrupt"), out)
      assert.are.equal(0, count(out, "disabled"), out)
      misses = misses + count(out, "cache miss")
      os.remove(dir .. "/out" .. i)
    end
    assert.is_true(misses >= 6, "each kernel compiled at least once")
    local names = util.output("ls -A " .. dir)
    assert.are.equal(6, count(names, ".mgc"), names)   -- one whole entry per kernel, no temp file left
    assert.are.equal(0, count(names, ".tmp"), names)
    local out = util.output(env .. " " .. util.bin .. " " .. p)   -- a later process loads them all
    assert.are.equal(6, count(out, "cache hit"), out)
    assert.are.equal(0, count(out, "cache miss"), out)
    os.remove(p)
    os.execute("rm -rf " .. dir)
  end)
end)
