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
