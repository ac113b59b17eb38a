-- Memory stays flat: tools/memcheck.lua at a small size (500 launches,
-- 5,000 device and host allocations in the interpreter) keeps the resident
-- set's growth of every phase under a bound, and tools/soak.lua (a session
-- of calls with ever-changing shapes) at 2,000 calls keeps it steady.
local util = dofile("spec/support/util.lua")

describe("resident memory", function()
  it("stays flat over launches and allocate/free cycles", function()
    if os.getenv("MGPU_SANITIZED") then   -- ASan keeps freed memory (quarantine, size-class caches); its leak check covers this
      pending("resident memory is not measured under the sanitizers")
      return
    end
    local out = util.output("MGPU_INTERPRET=1 MGPU_MEMCHECK_LIMIT_MB=16 " .. util.bin .. " tools/memcheck.lua 500 5000; echo status=$?")
    assert.matches("status=0", out)
    local phases = 0
    for name, growth in out:gmatch("memcheck: ([%w%s%(%)/_]-)%s+%d+%s+RSS[^\n]-%(([%+%-]?[%d%.]+) MB%)") do
      phases = phases + 1
      assert.is_true(tonumber(growth) < 16, name .. " grew by " .. growth .. " MB")
    end
    assert.are.equal(4, phases)
  end)

  it("stays steady over a session of calls with changing shapes (tools/soak.lua)", function()
    if os.getenv("MGPU_SANITIZED") then
      pending("resident memory is not measured under the sanitizers")
      return
    end
    -- about 1,000 shapes, more than a kernel keeps specializations for: it once kept every one
    local out = util.output("MGPU_INTERPRET=1 MGPU_SOAK_LIMIT_MB=8 " .. util.bin .. " tools/soak.lua 2000; echo status=$?")
    assert.matches("status=0", out)
    local before, after = out:match("RSS ([%d%.]+) MB %-> ([%d%.]+) MB")
    assert.is_truthy(before, out)
    assert.is_true(tonumber(after) - tonumber(before) < 8, out)
  end)

  it("keeps a kernel's most recent specializations and traces an evicted one again", function()
    local mgpu = require "mgpu"
    local kernel = require "mgpu.kernel"
    local k = mgpu.kernel{ out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
                           body = function(x, o) o:store(x:load() + 1) end }
    for n = 1, kernel.MAX_ENTRIES + 20 do assert.are.equal(n, k(mgpu.iota(n, "i32")):get(n)) end
    local kept = 0
    for _ in pairs(k.cache) do kept = kept + 1 end
    assert.are.equal(kernel.MAX_ENTRIES, kept)
    assert.are.equal(3, k(mgpu.iota(3, "i32")):get(3))   -- evicted long ago: traced again
  end)
end)
