-- Several devices: mgpu -n N with simulated devices (the interpreter runs
-- every device's launch of a kernel that touches other devices together),
-- symmetric arrays, remote views, semaphores, and the errors of each.
local util = dofile("spec/support/util.lua")

-- Run the script at `path` with its arguments `args` on n simulated devices (mgpu's
-- flags `extra` before it); returns the output and the exit code.
local function run_file(n, path, extra, args)
  local tmp = os.tmpname()
  local ok, _, code = os.execute(string.format("timeout 60 %s -n %d --interpret %s %s %s > %s 2>&1", util.bin, n,
                                               extra or "", path, args or "", tmp))
  local f = assert(io.open(tmp)); local out = f:read("*a"); f:close()
  os.remove(tmp)
  if type(ok) == "number" then code = ok ~= 0 and (ok >= 256 and ok / 256 or 1) or 0 end   -- Lua 5.1: the wait status
  return out, code or (ok and 0 or 1)
end

-- Run `body` (a script) on n simulated devices; returns the output, the exit code and the script's path.
local function run_on(n, body, extra)
  local p = util.script(body)
  local out, code = run_file(n, p, extra)
  return out, code, p
end

-- A ring: each device stores its row into the next device's copy of x and
-- signals it there; each reads what the previous device stored.
local ring = [[
local mgpu = require "mgpu"
local me, n = mgpu.process_index(), mgpu.process_count()
local x = mgpu.symmetric({n, 8}, "f32")
local k = mgpu.kernel{ out_shape = mgpu.shape({8}, "f32"), grid = {2},
  scratch_shapes = { mgpu.SemaphoreType.REGULAR({2}) },
  body = function(src, x, o, sems)
    local dev, b = mgpu.device_id(), mgpu.program_id(0)
    local nxt, prev = mgpu.rem(dev + 1, n), mgpu.rem(dev + n - 1, n)
    x:at(dev):on_device(nxt):store(src:load() + b:astype("f32") * 0)
    mgpu.semaphore_signal(sems:at(b), 1, { device_id = nxt })
    mgpu.semaphore_wait(sems:at(b), 1)
    o:store(x:at(prev):load())
  end }
local v = math.random(1, 1000)          -- fresh values every run, told to the others through the seed
local src = mgpu.full({8}, 1000 * me + 7, "f32")
local o = k(src, x)
local prev = (me + n - 1) % n
assert(o:tolist()[1] == 1000 * prev + 7 and o:tolist()[8] == 1000 * prev + 7, "ring: wrong value " .. tostring(o:tolist()[1]))
print("ok " .. me .. " " .. v * 0)
]]

-- multimem: every device stores its row into every copy, then reads the
-- reduction over the devices of another row and of a shared vector.
local multimem = [[
local mgpu = require "mgpu"
local me, n = mgpu.process_index(), mgpu.process_count()
local x = mgpu.symmetric({ n, 128 }, "f32")
local y = mgpu.symmetric({ 128 }, "i32")
local k = mgpu.kernel{ out_shape = { mgpu.shape({ 128 }, "f32"), mgpu.shape({ 128 }, "i32") }, grid = { 1 },
  scratch_shapes = { mgpu.SemaphoreType.REGULAR({ 1 }) },
  body = function(x, y, o, oi, sems)
    local dev = mgpu.device_id()
    mgpu.multimem_store(mgpu.broadcasted_iota("f32", { 128 }, 0) + dev:astype("f32") * 1000, x:at(dev))
    mgpu.multimem_store(mgpu.broadcasted_iota("i32", { 128 }, 0) * (dev + 1), y)
    for d = 1, n - 1 do mgpu.semaphore_signal(sems:at(0), 1, { device_id = mgpu.rem(dev + d, n) }) end
    mgpu.semaphore_wait(sems:at(0), n - 1)
    o:store(mgpu.multimem_load_reduce(x:at(mgpu.rem(dev + 1, n))))
    oi:store(mgpu.multimem_load_reduce(y, "max"))
  end }
local o, oi = k(x, y)
if mgpu.compile_only() then return end
local row = (me + 1) % n
assert(o:tolist()[2] == n * (1 + 1000 * row), "multimem_load_reduce(add): " .. o:tolist()[2])
assert(oi:tolist()[3] == 2 * n, "multimem_load_reduce(max): " .. oi:tolist()[3])
print("ok " .. me)
]]

describe("mgpu -n", function()
  for _, n in ipairs({ 2, 4 }) do
    it("runs a ring of remote stores and semaphores on " .. n .. " simulated devices", function()
      local out, code = run_on(n, ring)
      assert.are.equal(0, code, out)
      assert.matches(n .. " simulated devices in the interpreter", out)
      for d = 0, n - 1 do assert.matches("ok " .. d .. " 0", out) end
    end)
  end

  -- The collective examples on fresh inputs (seed=), every device checking its result exactly.
  -- examples/reduce_scatter.lua: each chunk against the f32 sum in device order, rounded once; f32
  -- inputs on 3 or more devices tell that order from any other (bf16 parts sum exactly in f32), and
  -- a part summed twice or missed is far off.  examples/allgather.lua: every chunk of every device.
  for _, ex in ipairs({ { "reduce_scatter", "reduce-scatters f32 exactly in device order", "reduce%-scatter", "rel%. error 0" },
                        { "allgather", "all-gathers exactly", "all%-gather", "max rel%. error 0" } }) do
    for _, n in ipairs({ 2, 3, 4 }) do
      it(ex[2] .. " on " .. n .. " simulated devices (examples/" .. ex[1] .. ".lua)", function()
        local seed = math.random(1, 1000000)
        local out, code = run_file(n, "examples/" .. ex[1] .. ".lua", "", "32 256 f32 rows=8 seed=" .. seed)
        assert.are.equal(0, code, out)
        for d = 0, n - 1 do
          assert.matches("device " .. d .. " of " .. n .. ": " .. ex[3] .. " of 32x256 f32 per device: " .. ex[4] .. "\n", out)
        end
      end)
    end
  end

  it("writes each device's profile to a file of its own", function()
    local dir = os.tmpname()
    os.remove(dir)
    local out, code = run_on(2, string.format([[
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), grid = { 1 },
  compiler_params = mgpu.CompilerParams{ profile_space = 8, profile_dir = %q },
  body = function(o) mgpu.named_scope("fill", function() o:store(mgpu.broadcast(1.0, { 128 }, "f32")) end) end }
k()
]], dir))
    assert.are.equal(0, code, out)
    local names = {}
    local ls = io.popen("ls " .. dir)
    for f in ls:lines() do names[#names + 1] = f end
    ls:close()
    os.execute("rm -rf " .. dir)
    table.sort(names)
    assert.are.equal(2, #names, table.concat(names, " "))
    assert.matches("^kernel%-dev0%-%d+%-1%-trace%.json$", names[1])
    assert.matches("^kernel%-dev1%-%d+%-1%-trace%.json$", names[2])
  end)

  it("gives one device without -n", function()
    local p = util.script([[
      local mgpu = require "mgpu"
      local x = mgpu.symmetric({4}, "i32")
      local k = mgpu.kernel{ out_shape = mgpu.shape({4}, "i32"), grid = {1},
        body = function(x, o) o:store(x:on_device(0):load() + mgpu.device_id()) end }
      print(mgpu.process_index(), mgpu.process_count(), table.concat(k(x):tolist(), ","))
    ]])
    local out = util.output("MGPU_INTERPRET=1 " .. util.bin .. " " .. p)
    assert.matches("0\t1\t0,0,0,0", out)
  end)

  it("reports a semaphore that is never signalled as a deadlock naming devices and lines", function()
    local out, code, p = run_on(2, [[
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({1}, "i32"), grid = {1},
  scratch_shapes = { mgpu.SemaphoreType.REGULAR({1}) },
  body = function(o, sems)
    mgpu.when(mgpu.eq(mgpu.device_id(), 1), function() mgpu.semaphore_wait(sems:at(0), 2) end)
  end }
k()
]])
    assert.are_not.equal(0, code)
    assert.matches("deadlock", out)
    assert.matches(p:gsub("%p", "%%%0") .. ":5: device 1, block 0 of the cluster, warpgroup 0 waits for semaphore 0 of device 1 to reach 2", out)
    for d = 0, 1 do   -- on every device: the wait's line first, the call once after the details
      assert.matches("device " .. d .. ": " .. p:gsub("%p", "%%%0") .. ":5: deadlock", out)
    end
    local _, calls = out:gsub("called at " .. p:gsub("%p", "%%%0") .. ":7%)", "")
    assert.are.equal(2, calls)
  end)

  it("says so when a deadlocked semaphore might be signalled by a later cluster", function()
    -- block 0 waits for block 1, which the interpreter only starts once block 0 has ended
    local out, code = run_on(2, [[
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({1}, "i32"), grid = {2},
  scratch_shapes = { mgpu.SemaphoreType.REGULAR({1}) },
  body = function(o, sems)
    mgpu.cond(mgpu.eq(mgpu.program_id(0), 0), function() mgpu.semaphore_wait(sems:at(0), 1) end,
              function() mgpu.semaphore_signal(sems:at(0), 1) end)
  end }
k()
]])
    assert.are_not.equal(0, code)
    assert.matches("deadlock", out)
    assert.matches("the interpreter runs one cluster at a time, here 1 of 2", out, 1, true)
  end)

  it("refuses a device out of range, a non-symmetric remote array and unbalanced semaphores", function()
    local out, code, p = run_on(2, [[
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({4}, "f32"), grid = {1},
  body = function(x, o) o:store(x:on_device(2):load()) end }
k(mgpu.symmetric({4}, "f32"))
]])
    assert.are_not.equal(0, code)
    assert.matches(p:gsub("%p", "%%%0") .. ":3: on_device: device 2 is out of range: the job has 2 devices", out)

    out, code = run_on(2, [[
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({4}, "f32"), grid = {1},
  body = function(x, o) o:store(x:on_device(mgpu.rem(mgpu.device_id() + 1, 2)):load()) end }
k(mgpu.zeros({4}, "f32"))
]])
    assert.are_not.equal(0, code)
    assert.matches(":4: kernel 'kernel': argument 1 is used on other devices %(on_device at .-:3%) but is not a symmetric array", out)

    out, code, p = run_on(2, [[
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({1}, "i32"), grid = {1},
  scratch_shapes = { mgpu.SemaphoreType.REGULAR({3}) },
  body = function(o, sems) mgpu.semaphore_signal(sems:at(2), 1) end }
k()
]])
    assert.are_not.equal(0, code)
    assert.matches(p:gsub("%p", "%%%0") .. ":5: kernel 'kernel': semaphore 2 of scratch semaphore array 1 holds 1 after the kernel", out)
  end)

  it("reports devices that launch different kernels or leave early", function()
    local out, code = run_on(2, [[
local mgpu = require "mgpu"
local function mk(name) return mgpu.kernel{ name = name, out_shape = mgpu.shape({1}, "i32"), grid = {1},
  scratch_shapes = { mgpu.SemaphoreType.REGULAR({1}) },
  body = function(o, sems) mgpu.semaphore_signal(sems:at(0), 1); mgpu.semaphore_wait(sems:at(0), 1) end } end
if mgpu.process_index() == 0 then mk("a")() else mk("b")() end
]])
    assert.are_not.equal(0, code)
    assert.matches("device 0 launched kernel 'a' but device 1 launched 'b'", out)

    out, code = run_on(2, [[
local mgpu = require "mgpu"
if mgpu.process_index() == 1 then error("device 1 gives up") end
local k = mgpu.kernel{ out_shape = mgpu.shape({1}, "i32"), grid = {1},
  scratch_shapes = { mgpu.SemaphoreType.REGULAR({1}) },
  body = function(o, sems) mgpu.semaphore_signal(sems:at(0), 1); mgpu.semaphore_wait(sems:at(0), 1) end }
k()
]])
    assert.are_not.equal(0, code)
    assert.matches("device 1: .-:2: device 1 gives up", out)
    assert.matches("device 0: .-:6: .-device 0 launches kernel 'kernel', but device 1 has ended its script", out)
  end)

  -- a kernel reading the next device's copy of its symmetric argument
  local peek = [[
local mgpu = require "mgpu"
local me = mgpu.process_index()
local k = mgpu.kernel{ out_shape = mgpu.shape({4}, "f32"), grid = {1},
  body = function(x, o) o:store(x:on_device(mgpu.rem(mgpu.device_id() + 1, 2)):load()) end }
]]

  it("checks that every device makes the same symmetric arrays in the same order", function()
    -- once the simulator read the right array where a GPU, whose symmetric arrays are collective, reads another
    local extra = peek .. [[
if me == 1 then mgpu.symmetric({64}, "f32") end
local x = mgpu.symmetric({4}, "f32")
k(x)
]]
    local out, code, p = run_on(2, extra)
    assert.are_not.equal(0, code)
    local at = p:gsub("%p", "%%%0")
    assert.matches("device 0: " .. at .. ":7: devices made different symmetric arrays: device 0's symmetric array 1 is " ..
                   "f32%[4%] %(16 bytes%) at " .. at .. ":6 but device 1's is f32%[64%] %(256 bytes%) at " .. at .. ":5; " ..
                   "every device must make the same symmetric arrays in the same order", out)
    assert.matches("device 1: " .. at .. ":7: devices made different symmetric arrays", out)
    local alone = peek .. [[
local x = mgpu.symmetric({4}, "f32")
if me == 0 then mgpu.symmetric({8}, "i32") end
k(x)
]]
    out, code = run_on(2, alone)
    assert.are_not.equal(0, code)
    assert.matches("device 0's symmetric array 2 is i32%[8%] %(32 bytes%) at [^\n]-:6 but device 1 made only 1", out)
  end)

  it("prints each device's output in whole lines", function()
    local out, code = run_on(8, [[
local mgpu = require "mgpu"
local me = mgpu.process_index()
for i = 1, 300 do
  print(me, i, ("x"):rep(40))
  io.write(me, "\t", i, "\t")
  io.write("w\n")
end
]])
    assert.are.equal(0, code, out)
    local lines = 0
    for line in out:gmatch("[^\n]+") do
      if not line:match("simulated devices") then
        lines = lines + 1
        assert.is_truthy(line:match("^%d\t%d+\t" .. ("x"):rep(40) .. "$") or line:match("^%d\t%d+\tw$"), "torn: " .. line)
      end
    end
    assert.are.equal(8 * 600, lines)
  end)

  it("names a device that calls os.exit, which ends that device only", function()
    local out, code, p = run_on(2, [[
local mgpu = require "mgpu"
if mgpu.process_index() == 1 then
  pcall(os.exit, 3)   -- not even a pcall keeps the device going
  print("device 1 went on")
end
print("device " .. mgpu.process_index() .. " done")
]])
    assert.are.equal(3, code, out)
    assert.matches("device 1: " .. p:gsub("%p", "%%%0") .. ":3: os.exit%(3%) ends device 1's script", out)
    assert.matches("device 0 done", out)
    assert.is_falsy(out:match("device 1 went on"), out)
    assert.is_falsy(out:match("device 1 done"), out)
  end)

  it("refuses semaphores outside kernels and bad semaphore arguments", function()
    local mgpu = require "mgpu"
    assert.matches("semaphore_wait: the semaphore must come from SemaphoreType.REGULAR scratch",
                   util.err_of(mgpu.semaphore_wait, {}))
    assert.matches("only available while a kernel body is being traced", util.err_of(mgpu.device_id))
    assert.matches("SemaphoreType.FOO does not exist", util.err_of(function() return mgpu.SemaphoreType.FOO end))
    local k = mgpu.kernel{ out_shape = mgpu.shape({1}, "i32"), grid = {1},
      scratch_shapes = { mgpu.SemaphoreType.REGULAR({2}) },
      body = function(o, sems) mgpu.semaphore_wait(sems, 1) end }
    assert.matches("distributed_spec.lua:%d+: semaphore_wait: index the semaphore array down to one semaphore", util.err_of(k))
  end)

  it("runs multimem stores and reducing loads on simulated devices and lowers them to multimem (PTX ISA 8.1)", function()
    for _, n in ipairs({ 2, 3 }) do
      local out, code = run_on(n, multimem)
      assert.are.equal(0, code, out)
      for d = 0, n - 1 do assert.matches("ok " .. d, out) end
    end
    local dir = os.tmpname()
    os.remove(dir)
    local out = util.output(string.format("%s -n 2 --emit-ptx %s %s", util.bin, dir, util.script(multimem)))
    local f = io.open(dir .. "/kernel.ptx")
    assert.is_not_nil(f, out)
    local ptx = f:read("*a"); f:close()
    assert.matches("%.version 8%.1", ptx)
    assert.matches("multimem%.st%.relaxed%.sys%.global%.f32", ptx)
    assert.matches("multimem%.ld_reduce%.relaxed%.sys%.global%.add%.f32", ptx)
    assert.matches("multimem%.ld_reduce%.relaxed%.sys%.global%.max%.s32", ptx)
    local ptxas = "/usr/local/cuda/bin/ptxas"
    if io.open(ptxas) then
      assert.matches("^OK", util.output(string.format("%s -arch=sm_90a %s/kernel.ptx -o %s/k.cubin && echo OK", ptxas, dir, dir)))
    end
  end)

  it("reads the device's index once, at the kernel's entry, however often device_id() is called", function()
    local body = [[
local mgpu = require "mgpu"
local me = mgpu.process_index()
local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "i32"), grid = { 1 },
  body = function(o)
    local sum = mgpu.fori(0, 5, function(_, acc) return acc + mgpu.device_id() end, mgpu.device_id())
    o:store(mgpu.broadcast(sum, { 128 }, "i32"))
  end }
local got = k():tolist()
assert(got[1] == 6 * me and got[128] == 6 * me, "device_id: got " .. tostring(got[1]))
print("ok " .. me)
]]
    local out, code = run_on(2, body)
    assert.are.equal(0, code, out)
    for d = 0, 1 do assert.matches("ok " .. d, out) end
    local dir = os.tmpname()
    os.remove(dir)
    out = util.output(string.format("%s -n 2 --emit-ptx %s %s", util.bin, dir, util.script(body)))
    local f = io.open(dir .. "/kernel.ptx")
    assert.is_not_nil(f, out)
    local ptx = f:read("*a"); f:close()
    os.execute("rm -rf " .. dir)
    local _, loads = ptx:gsub("ld%.global", "")
    assert.are.equal(1, loads, ptx)
  end)

  it("lowers signals and waits to system-scope release and acquire (ptxas-checked by the examples)", function()
    local dir = os.tmpname()
    os.remove(dir)
    local p = util.script(ring)
    local out = util.output(string.format("%s -n 2 --emit-ptx %s %s", util.bin, dir, p))
    local f = io.open(dir .. "/kernel.ptx")
    assert.is_not_nil(f, out)
    local ptx = f:read("*a"); f:close()
    assert.matches("atom%.release%.sys%.global%.add%.s32", ptx)
    assert.matches("ld%.acquire%.sys%.global%.u32", ptx)
    assert.matches("atom%.acquire%.sys%.global%.cas%.b32", ptx)
    assert.matches("ld%.global%.nc%.u64", ptx)      -- the peer table
  end)
end)
