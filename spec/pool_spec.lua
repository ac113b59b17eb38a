-- Device memory through the driver's stream-ordered pool, run against
-- spec/c/fake_cuda.c (MGPU_FAKE_CUDA names it), which counts the pool's
-- calls: arrays come from it and go back to it, mgpu.empty_cache() trims it,
-- and MGPU_POOL=off or a device without pools means cuMemAlloc / cuMemFree.
local util = dofile("spec/support/util.lua")

local fake = os.getenv("MGPU_FAKE_CUDA")

local function run(env)
  local cmd = string.format("env -u MGPU_INTERPRET MGPU_LIBCUDA=%s MGPU_CACHE=off FAKE_CUDA_POOL_REPORT=1 %s " ..
                            "timeout 60 %s spec/faults/pool.lua 2>&1; echo \"exit=$?\"", fake, env, util.bin)
  local out = util.output(cmd)
  return out, tonumber(out:match("exit=(%d+)%s*$"))
end

local describe_fake = fake and describe or pending

describe_fake("device memory (a stand-in driver)", function()
  it("comes from the stream-ordered pool and goes back to it; empty_cache trims it", function()
    local out, code = run("")
    assert.are.equal(0, code, out)
    local allocs, frees, trims = out:match("fake_cuda pool: (%d+) allocs, (%d+) frees, (%d+) trims")
    assert.is_not_nil(allocs, out)
    assert.is_true(tonumber(allocs) >= 51, out)     -- x and the 50 outputs
    assert.is_true(tonumber(frees) >= 50, out)      -- the dropped outputs, collected
    assert.is_true(tonumber(trims) >= 1, out)
  end)

  it("uses cuMemAlloc with MGPU_POOL=off or without pool support", function()
    for _, env in ipairs({ "MGPU_POOL=off", "MGPU_POOL=0", "FAKE_CUDA_NO_POOLS=1" }) do
      local out, code = run(env)
      assert.are.equal(0, code, out)
      assert.is_nil(out:find("fake_cuda pool:", 1, true), env .. ": " .. out)
      assert.is_not_nil(out:find("done", 1, true), out)
    end
  end)
end)

describe_fake("an allocation that finds the device full", function()
  it("collects unreachable arrays and tries again", function()
    local cmd = string.format("env -u MGPU_INTERPRET MGPU_LIBCUDA=%s MGPU_CACHE=off timeout 60 %s spec/faults/many.lua 2>&1; " ..
                              "echo \"exit=$?\"", fake, util.bin)
    local out = util.output(cmd)
    assert.is_not_nil(out:find("done", 1, true), out)
    assert.is_not_nil(out:find("exit=0", 1, true), out)
  end)
end)
