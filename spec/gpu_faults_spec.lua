-- What the mgpu command does when a GPU kernel faults or never ends, run
-- against spec/c/fake_cuda.c, a stand-in CUDA driver (MGPU_FAKE_CUDA names
-- it; MGPU_LIBCUDA loads it) whose kernel `oops` faults with
-- FAKE_CUDA_FAULT=oops or hangs with FAKE_CUDA_HANG=oops: the error names
-- the kernel at the script line, the command exits non-zero, the REPL makes
-- a fresh context and goes on, and the watchdog (MGPU_TIMEOUT_MS,
-- mgpu.configure{ timeout_ms }) bounds a kernel that never ends, on the
-- "GPU" and in the interpreter; and how launches go on a "GPU" (the bench's
-- lead kernel, programmatic dependent launch).  The scripts are in
-- spec/faults/.
local util = dofile("spec/support/util.lua")

local fake = os.getenv("MGPU_FAKE_CUDA")

-- Output and exit status of the mgpu command run with the fake driver and
-- the extra environment `env` (a string of NAME=value words).
local function run(env, args)
  local cmd = string.format("env -u MGPU_INTERPRET MGPU_LIBCUDA=%s MGPU_CACHE=off %s timeout 60 %s %s 2>&1; echo \"exit=$?\"",
                            fake, env, util.bin, args)
  local out = util.output(cmd)
  return out:gsub("exit=%d+%s*$", ""), tonumber(out:match("exit=(%d+)%s*$"))
end

-- run(env, args), checking that the command exited with status `want`; returns its output.
local function ran(env, args, want)
  local out, code = run(env, args)
  assert.are.equal(want, code, out)
  return out
end

local function has(s, plain) return s:find(plain, 1, true) ~= nil end

local describe_fake = fake and describe or pending

describe_fake("GPU faults (a stand-in driver)", function()
  it("run normally without a fault", function()
    ran("", "spec/faults/fault.lua", 0)
  end)

  it("name the faulting kernel at the line that sees it, and exit non-zero", function()
    local out = ran("FAKE_CUDA_FAULT=oops", "spec/faults/fault.lua", 1)
    assert.is_true(has(out, "spec/faults/fault.lua:5: kernel 'oops' faulted: an illegal memory access was " ..
                            "encountered (CUDA error 700, reported by cuMemcpyDtoH); the GPU context is lost"), out)
  end)

  it("the REPL says the context was lost, makes a fresh one and goes on", function()
    local out = ran("FAKE_CUDA_FAULT=oops", "< spec/faults/repl.txt", 0)
    assert.is_true(has(out, "stdin:1: kernel 'oops' faulted"), out)
    assert.is_true(has(out, "mgpu: the GPU context was lost; a fresh one is ready (arrays made before it are gone)"), out)
    assert.is_true(has(out, "after\t1.0"), out)
    assert.is_true(has(out, "stdin:1: the array was made before the GPU context was lost: its memory is gone"), out)
    assert.is_true(has(out, "relaunch\ttrue"), out)           -- a kernel loaded before the loss loads again
    assert.is_true(has(out, "still here"), out)               -- arrays of the lost context are released quietly
    assert.is_false(has(out, "fake_cuda:"), out)              -- no stale memory, module or event was used
  end)

  it("when the driver keeps the fault (as it does for 700 and 715), the REPL goes on in the interpreter", function()
    local out = ran("FAKE_CUDA_FAULT=oops FAKE_CUDA_STICKY=1", "< spec/faults/repl.txt", 0)
    assert.is_true(has(out, "stdin:1: kernel 'oops' faulted"), out)
    assert.is_true(has(out, "mgpu: the GPU context was lost and the driver will not make this process a new one "
                            .. "(cuDevicePrimaryCtxRetain: "), out)
    assert.is_true(has(out, "kernels run in the interpreter from now on (arrays made before are gone); restart mgpu to "
                            .. "use the GPU again"), out)
    assert.is_true(has(out, "after\t1.0"), out)                -- a new array, in the interpreter
    local _, errors = out:gsub("mgpu: stdin:1: kernel 'oops' faulted", "")
    assert.are.equal(2, errors, out)                          -- an array of the lost context says so when used
    assert.is_true(has(out, "relaunch\ttrue"), out)           -- the kernel runs again, interpreted
    assert.is_true(has(out, "still here"), out)
  end)

  it("MGPU_TIMEOUT_MS bounds a kernel that never ends", function()
    local t0 = os.time()
    local out = ran("FAKE_CUDA_HANG=oops MGPU_TIMEOUT_MS=200", "spec/faults/fault.lua", 1)
    assert.is_true(has(out, "spec/faults/fault.lua:5: kernel 'oops' was still running 200 ms after its launch"), out)
    assert.is_true(os.time() - t0 < 30)
  end)

  it("mgpu.configure{ timeout_ms } sets the watchdog from a script", function()
    local out = ran("FAKE_CUDA_HANG=oops", "spec/faults/configure_timeout.lua", 1)
    assert.is_true(has(out, "kernel 'oops' was still running 150 ms after its launch"), out)
  end)

  it("a hung kernel in the REPL is given up after the timeout and the session goes on", function()
    local out = ran("FAKE_CUDA_HANG=oops MGPU_TIMEOUT_MS=100", "< spec/faults/repl.txt", 0)
    assert.is_true(has(out, "kernel 'oops' was still running 100 ms after its launch"), out)
    assert.is_true(has(out, "after\t1.0"), out)
    assert.is_true(has(out, "still here"), out)
  end)
end)

describe("the watchdog", function()
  it("stops an interpreted kernel that never ends", function()
    local cmd = string.format("MGPU_INTERPRET=1 MGPU_TIMEOUT_MS=300 timeout 60 %s spec/faults/spin.lua 2>&1; echo \"exit=$?\"",
                              util.bin)
    local out = util.output(cmd)
    assert.is_true(has(out, "exit=1"), out)
    assert.is_true(has(out, "the kernel was still running after the 300 ms timeout"), out)
    assert.is_truthy(out:find("spec/faults/kernels.lua:9:", 1, true), out)   -- the loop's line
  end)

  it("refuses a bad timeout", function()
    local mgpu = require "mgpu"
    local err = util.err_of(mgpu.configure, { timeout_ms = -5 })
    assert.matches("gpu_faults_spec.lua:%d+: mgpu.configure: timeout_ms must be a whole number of milliseconds", err)
    local out = util.output(string.format("MGPU_INTERPRET=1 MGPU_TIMEOUT_MS=soon %s spec/faults/spin.lua", util.bin))
    assert.is_true(has(out, "MGPU_TIMEOUT_MS must be a whole number of milliseconds, got 'soon'"), out)
  end)
end)

describe_fake("launches (a stand-in driver)", function()
  it("mgpu.bench starts each timed batch behind its lead kernel on a GPU, not with host = true", function()
    local out = ran("FAKE_CUDA_FAULT=bench_spin", "spec/faults/bench.lua", 1)
    assert.is_true(has(out, "kernel 'bench_spin' faulted"), out)
    out = ran("FAKE_CUDA_FAULT=bench_spin", "spec/faults/bench.lua host", 0)
    assert.is_true(has(out, "timed: number"), out)
  end)

  it("launch with programmatic dependent launch, unless MGPU_PDL=0 or the driver refuses it", function()
    local out = ran("FAKE_CUDA_TRACE=1", "spec/faults/fault.lua", 0)
    assert.is_true(has(out, "fake_cuda: launch oops pdl=1"), out)
    out = ran("FAKE_CUDA_TRACE=1 MGPU_PDL=0", "spec/faults/fault.lua", 0)
    assert.is_true(has(out, "fake_cuda: launch oops pdl=0"), out)
    -- a driver that refuses it: the first launch is retried without it, and so are all later ones
    out = ran("FAKE_CUDA_TRACE=1 FAKE_CUDA_NO_PDL=1", "spec/faults/bench.lua host", 0)
    local _, refused = out:gsub("fake_cuda: refused launch oops %(pdl%)", "")
    local _, launched = out:gsub("fake_cuda: launch oops pdl=0", "")
    assert.are.equal(1, refused, out)
    assert.is_true(launched > 3, out)
    assert.is_false(has(out, "pdl=1"), out)
  end)

  it("launch a replaced PTX that does not wait for the kernels before it without programmatic dependent launch", function()
    local dir = os.tmpname() .. "_ptx"
    util.output(string.format("MGPU_INTERPRET=1 %s --emit-ptx %s spec/faults/fault.lua", util.bin, dir))
    local f = assert(io.open(dir .. "/oops.ptx"))
    local ptx = f:read("a")
    f:close()
    local n
    ptx, n = ptx:gsub("\n%s*griddepcontrol%.wait;", "")
    assert.are.equal(1, n)
    f = assert(io.open(dir .. "/oops.ptx", "w"))
    f:write(ptx)
    f:close()
    local out = ran("FAKE_CUDA_TRACE=1 MGPU_PTX_OVERRIDE=" .. dir, "spec/faults/fault.lua", 0)
    os.execute("rm -rf " .. dir)
    assert.is_true(has(out, "fake_cuda: launch oops pdl=0"), out)
  end)
end)
