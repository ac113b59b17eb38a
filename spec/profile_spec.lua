-- The in-kernel profiler: CompilerParams{ profile_space, profile_dir } and
-- mgpu.named_scope.  The interpreter writes the same trace-event JSON as a
-- GPU launch, with its step counter as the clock; the JSON is parsed here
-- and checked for structure.
local mgpu = require "mgpu"
local profile = require "mgpu.profile"
local util = dofile("spec/support/util.lua")
local err_of = util.err_of
local bin = util.bin

-- A small JSON reader (objects, arrays, strings, numbers, true/false/null).
local function json_decode(s)
  local pos = 1
  local function ws() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local value
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local c = s:sub(pos, pos)
      if c == '"' then pos = pos + 1; return table.concat(out) end
      if c == "\\" then
        local e = s:sub(pos + 1, pos + 1)
        if e == "u" then out[#out + 1] = string.char(tonumber(s:sub(pos + 2, pos + 5), 16) % 256); pos = pos + 6
        else out[#out + 1] = ({ n = "\n", t = "\t", r = "\r", b = "\b", f = "\f" })[e] or e; pos = pos + 2 end
      else
        assert(c ~= "", "unterminated string")
        out[#out + 1] = c; pos = pos + 1
      end
    end
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == "{" then
      local o = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == "}" then pos = pos + 1; return o end
      while true do
        ws(); assert(s:sub(pos, pos) == '"', "object key expected at " .. pos)
        local k = str(); ws()
        assert(s:sub(pos, pos) == ":", "':' expected at " .. pos); pos = pos + 1
        o[k] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == "}" then return o end
        assert(d == ",", "',' or '}' expected at " .. (pos - 1))
      end
    elseif c == "[" then
      local a = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == "]" then pos = pos + 1; return a end
      while true do
        a[#a + 1] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == "]" then return a end
        assert(d == ",", "',' or ']' expected at " .. (pos - 1))
      end
    elseif c == '"' then return str()
    elseif s:sub(pos, pos + 3) == "true" then pos = pos + 4; return true
    elseif s:sub(pos, pos + 4) == "false" then pos = pos + 5; return false
    elseif s:sub(pos, pos + 3) == "null" then pos = pos + 4; return nil
    else
      local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      assert(num and num ~= "", "value expected at " .. pos)
      pos = pos + #num
      return tonumber(num)
    end
  end
  local v = value(); ws()
  assert(pos > #s, "trailing text at " .. pos)
  return v
end

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("*a")
  f:close()
  return s
end

local dir = os.tmpname() .. "_prof"

local function scoped_kernel(space, nblocks, scope)
  return mgpu.kernel{
    name = "scoped", num_threads = 2, thread_name = "wg", grid = { nblocks or 2 }, interpret = true,
    out_shape = mgpu.shape({ nblocks or 2, 2, 128 }, "f32"),
    compiler_params = mgpu.CompilerParams{ profile_space = space, profile_dir = dir, profile_trace_scope = scope },
    body = function(x, o)
      local b, wg = mgpu.program_id(0), mgpu.axis_index("wg")
      mgpu.named_scope("outer", function()
        local v = x:at(b, wg):load()
        mgpu.named_scope("inner", function() o:at(b, wg):store(v * 2) end)
      end)
    end,
  }
end

-- Per (pid, tid): the B/E events in file order must nest and match by name.
local function check_structure(doc, nthreads)
  local stacks, counts, last_ts, threads = {}, {}, {}, 0
  for _, e in ipairs(doc.traceEvents) do
    if e.ph ~= "M" then
      assert.is_number(e.pid); assert.is_number(e.tid); assert.is_number(e.ts)
      assert.is_true(e.ts >= 0)
      local key = e.pid .. ":" .. e.tid
      if not stacks[key] then stacks[key] = {}; threads = threads + 1 end
      assert.is_true(e.ts >= (last_ts[key] or 0), "timestamps of one thread are monotonic")
      last_ts[key] = e.ts
      local st = stacks[key]
      if e.ph == "B" then
        st[#st + 1] = e.name
      else
        assert.are.equal("E", e.ph)
        assert.are.equal(st[#st], e.name, "an end event closes the innermost open scope")
        st[#st] = nil
      end
      counts[e.name .. e.ph] = (counts[e.name .. e.ph] or 0) + 1
    end
  end
  for key, st in pairs(stacks) do assert.are.equal(0, #st, "scope left open on " .. key) end
  assert.are.equal(nthreads, threads)
  return counts
end

-- ptx assembles for sm_90a (where ptxas is installed).
local function assert_assembles(ptx)
  local ptxas = "/usr/local/cuda/bin/ptxas"
  local f = io.open(ptxas)
  if not f then return end
  f:close()
  local path = os.tmpname()
  local out = assert(io.open(path .. ".ptx", "w"))
  out:write(ptx)
  out:close()
  local ok = os.execute(ptxas .. " -arch=sm_90a " .. path .. ".ptx -o " .. path .. ".cubin > /dev/null 2>&1")
  os.remove(path .. ".ptx"); os.remove(path .. ".cubin"); os.remove(path)
  assert.is_true(ok == true or ok == 0, "ptxas refused the PTX")
end

describe("profiler", function()
  it("writes a trace-event JSON with matching begin/end per scope and warpgroup (interpreter)", function()
    local x = mgpu.random.uniform({ 2, 2, 128 }, "f32", 1)
    local y = scoped_kernel(8)(x)
    assert.are.equal(x:get(2, 2, 7) * 2, y:get(2, 2, 7))     -- the kernel still computes
    local last = profile.last
    assert.are.equal(0, last.dropped)
    assert.are.equal(16, last.events)        -- 2 blocks x 2 warpgroups x 2 scopes x begin/end
    assert.truthy(last.path:find(dir, 1, true) == 1)
    local doc = json_decode(read(last.path))
    assert.are.equal("ns", doc.displayTimeUnit)
    assert.are.equal("interpreter steps", doc.otherData.clock)
    local counts = check_structure(doc, 4)
    assert.are.same({ outerB = 4, outerE = 4, innerB = 4, innerE = 4 }, counts)
    local tids, names = {}, {}
    for _, e in ipairs(doc.traceEvents) do
      if e.ph == "M" and e.name == "thread_name" then names[e.tid] = e.args.name end
      if e.ph == "B" then tids[e.tid] = true end
    end
    for t = 0, 3 do assert.is_true(tids[t]) end
    assert.are.equal("block 1 warpgroup 1", names[3])
    -- the earliest stamp is time 0; inner lies inside outer
    local first = math.huge
    for _, e in ipairs(doc.traceEvents) do if e.ts and e.ph ~= "M" then first = math.min(first, e.ts) end end
    assert.are.equal(0, first)
  end)

  it("keeps a trace for every block of a cluster", function()
    local k = mgpu.kernel{
      name = "clustered", num_threads = 1, thread_name = "wg", grid = { 2 }, grid_names = { "x" },
      cluster = { 2 }, cluster_names = { "c" }, interpret = true,
      out_shape = mgpu.shape({ 4, 128 }, "f32"),
      compiler_params = mgpu.CompilerParams{ profile_space = 4, profile_dir = dir },
      body = function(x, o)
        local blk = mgpu.program_id(0) * 2 + mgpu.axis_index("c")
        mgpu.named_scope("copy", function() o:at(blk):store(x:at(blk):load()) end)
      end,
    }
    local x = mgpu.random.uniform({ 4, 128 }, "f32", 1)
    assert.are.equal(x:get(4, 5), k(x):get(4, 5))
    assert.are.equal(0, profile.last.dropped)
    assert.are.equal(8, profile.last.events)    -- 2 clusters x 2 blocks x begin/end
    check_structure(json_decode(read(profile.last.path)), 4)
  end)

  it("writes a trace per warp with profile_trace_scope = \"warp\" (interpreter: the warps share their warpgroup's clock)", function()
    local x = mgpu.random.uniform({ 2, 2, 128 }, "f32", 1)
    local y = scoped_kernel(8, 2, "warp")(x)
    assert.are.equal(x:get(1, 2, 100) * 2, y:get(1, 2, 100))
    local last = profile.last
    assert.are.equal(0, last.dropped)
    assert.are.equal(64, last.events)        -- 2 blocks x 2 warpgroups x 4 warps x 2 scopes x begin/end
    local doc = json_decode(read(last.path))
    local counts = check_structure(doc, 16)
    assert.are.same({ outerB = 16, outerE = 16, innerB = 16, innerE = 16 }, counts)
    local names = {}
    for _, e in ipairs(doc.traceEvents) do
      if e.ph == "M" and e.name == "thread_name" then names[e.tid] = e.args.name end
    end
    assert.are.equal("block 0 warpgroup 0 warp 0", names[0])
    assert.are.equal("block 1 warpgroup 1 warp 2", names[14])
    local l = scoped_kernel(8, 2, "warp"):lower(mgpu.shape({ 2, 2, 128 }, "f32"))
    assert.matches("profile %%%d+ begin 0 \"outer\" per_warp", l.ir)
    assert.matches("u32%[16,36%] out", l.ir)                    -- 16 traces: a row per warp
    assert.matches("mad%.lo%.u32 %%r%d+, %%r%d+, 4, %%r%d+;", l.ptx)   -- trace * 4 + warp
    assert_assembles(l.ptx)
    assert.matches("profile_trace_scope must be \"warpgroup\" or \"warp\", got \"lane\"",
                   err_of(mgpu.CompilerParams, { profile_space = 8, profile_dir = dir, profile_trace_scope = "lane" }))
    assert.matches("profile_trace_scope needs profile_space and profile_dir",
                   err_of(mgpu.CompilerParams, { profile_trace_scope = "warp" }))
  end)

  it("drops events past profile_space, says how many on stderr, and closes the scopes left open", function()
    local script = util.script(string.format([[
      local mgpu = require "mgpu"
      local k = mgpu.kernel{ name = "tight", num_threads = 2, thread_name = "wg", grid = { 2 },
        out_shape = mgpu.shape({ 4 }, "f32"),
        compiler_params = mgpu.CompilerParams{ profile_space = 3, profile_dir = %q },
        body = function(o)
          mgpu.named_scope("a", function() mgpu.named_scope("b", function() end) end)
        end }
      k()
      local p = require("mgpu.profile").last
      print("EVENTS " .. p.events .. " DROPPED " .. p.dropped .. " PATH " .. p.path)
    ]], dir))
    local out = util.output(bin .. " --interpret " .. script)
    os.remove(script)
    assert.matches("profile_space = 3 was too small, 4 events dropped", out)
    assert.matches("EVENTS 12 DROPPED 4", out)
    local doc = json_decode(read(out:match("PATH (%S+)")))
    assert.are.equal(4, doc.otherData.dropped)
    local counts = check_structure(doc, 4)
    assert.are.same({ aB = 4, aE = 4, bB = 4, bE = 4 }, counts)   -- b's ends are synthetic
  end)

  it("costs nothing without profiling: named_scope just calls fn", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), interpret = true,
      body = function(o)
        local v = mgpu.named_scope("fill", function(a) return mgpu.broadcast(a, { 128 }) end, mgpu.const(3.5))
        o:store(v)
      end }
    local l = k:lower()
    assert.is_nil(l.ir:find("profile", 1, true))
    assert.are.equal(3.5, k():get(5))
    assert.are.equal(7, mgpu.named_scope("host", function(a, b) return a + b end, 3, 4))   -- outside kernels too
  end)

  it("checks its arguments and the parameters", function()
    assert.matches("named_scope: the name must be", err_of(mgpu.named_scope, "", function() end))
    assert.matches("named_scope: the name must be", err_of(mgpu.named_scope, 'a"b', function() end))
    assert.matches("second argument must be a function", err_of(mgpu.named_scope, "x", 3))
    assert.matches("got only profile_space", err_of(mgpu.CompilerParams, { profile_space = 8 }))
    assert.matches("got only profile_dir", err_of(mgpu.CompilerParams, { profile_dir = dir }))
    assert.matches("profile_space %(events per warpgroup%) must be positive",
                   err_of(mgpu.CompilerParams, { profile_space = -1, profile_dir = dir }))
    local cp = mgpu.CompilerParams{ profile_space = 8, profile_dir = dir }
    assert.are.equal(8, cp.profile_space)
  end)

  it("lowers to %globaltimer and %smid stamps by one thread per warpgroup, which ptxas accepts", function()
    local l = scoped_kernel(8):lower(mgpu.shape({ 2, 2, 128 }, "f32"))
    assert.matches("profile %%%d+ begin 0 \"outer\"", l.ir)
    assert.matches("profile %%%d+ end 1 \"inner\"", l.ir)
    assert.matches("u32%[4,36%] out", l.ir)                     -- the hidden buffer: 4 traces x (4 + 4*8) words
    local _, stamps = l.ptx:gsub("mov%.u64 %%rd%d+, %%globaltimer;", "")
    assert.are.equal(4, stamps)
    assert.matches("mov%.u32 %%r%d+, %%smid;", l.ptx)
    assert.matches("st%.global%.v4%.u32 %[%%rd%d+%+16%]", l.ptx)
    assert.is_nil(l.ptx:find("ld.global.u32", 1, true))   -- the event count lives in a register: a stamp loads nothing
    assert_assembles(l.ptx)
  end)

  it("is summarised per phase and per block by tools/profile_phases.lua", function()
    -- two blocks of one warpgroup: steps of 3 us with "step" (2 us, "a" 1 us inside); block 1 stops at 4 us
    local ev = {}
    local function add(name, ph, ts, pid, tid)
      ev[#ev + 1] = string.format('{"name":"%s","ph":"%s","ts":%.3f,"pid":%d,"tid":%d}', name, ph, ts, pid, tid)
    end
    ev[1] = '{"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"block 0 warpgroup 0"}}'
    ev[2] = '{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"block 1 warpgroup 0"}}'
    for _, t0 in ipairs({ 0, 3 }) do
      add("step", "B", t0, 0, 0); add("a", "B", t0 + 0.5, 0, 0); add("a", "E", t0 + 1.5, 0, 0); add("step", "E", t0 + 2, 0, 0)
    end
    add("step", "B", 6, 0, 0); add("step", "E", 8, 0, 0)
    for _, t0 in ipairs({ 0, 3 }) do add("step", "B", t0, 1, 1); add("step", "E", t0 + 1, 1, 1) end
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write('{"displayTimeUnit":"ns","otherData":{"kernel":"k","clock":"globaltimer","dropped":0},"traceEvents":[\n',
            table.concat(ev, ",\n"), "\n]}\n")
    f:close()
    local out = util.output(bin .. " tools/profile_phases.lua " .. path)
    os.remove(path)
    assert.matches("kernel k, 2 traces, clock globaltimer, resolution 0.500 us", out, 1, true)
    assert.matches('warpgroup 0: 3 steps (from one "step" to the next), a step: median 3.000 us, mean 3.000 us', out, 1, true)
    assert.matches("step             1.00      2.000      1.667      1.667   55.6%", out, 1, true)
    assert.matches(" a               0.67      1.000      1.000      0.667   22.2%", out, 1, true)
    assert.matches("(unscoped)                                       1.333   44.4%", out, 1, true)
    assert.matches("blocks: 2 over 8.000 us of stamps; done before the last stamp by median 2.000, 90% 4.000, most 4.000 us",
                   out, 1, true)
  end)
end)
