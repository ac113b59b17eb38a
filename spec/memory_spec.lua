-- Memory stays flat: tools/memcheck.lua at a small size (500 launches,
-- 5,000 device and host allocations in the interpreter) keeps the resident
-- set's growth of every phase under a bound.
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
end)

describe("GMEM views wider than their array", function()
  it("mask every element when a traced offset can never fit them (stores on a GPU wrote past the array)", function()
    -- ds(pid * 256, 256) along a dim of 3: no offset keeps the view inside, so the fast unmasked
    -- path must not be taken; the interpreter drops the stores outside, and so must the PTX
    local k = mgpu.kernel{ name = "wide", grid = { 3 }, out_shape = mgpu.shape({ 3, 256 }, "f16"),
      body = function(x, o)
        local b = mgpu.ds(mgpu.program_id(0) * 256, 256)
        o:at(b):store(x:at(b):load())
      end }
    local p = k:lower(mgpu.abstract({ 3, 256 }, "f16")).ptx
    local masked, plain = 0, 0
    for _ in p:gmatch("@%%p%d+ st%.global") do masked = masked + 1 end
    for _ in p:gmatch("\n%s*st%.global") do plain = plain + 1 end
    assert.are.equal(0, plain)
    assert.is_true(masked > 0)
    local x = mgpu.random.normal({ 3, 256 }, "f16")
    assert.are.same(x:to_table(), k(x):to_table())
  end)
end)
