-- mgpu.autotune with a fake timer (no GPU needed): picks the fastest config,
-- skips configs that fail with a note, keeps the winner per key in a file and
-- reuses it (in this process and the next), MGPU_CACHE=off, interpreted
-- without a timer, bad arguments located at the caller's line.
local mgpu = require "mgpu"
local util = dofile("spec/support/util.lua")
local bin = util.bin

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p " .. d))
  return d
end

-- a tiny kernel whose scale factor is the config
local function factory(cfg)
  if cfg.broken then error("factory says no\nsecond line", 0) end
  return mgpu.kernel{ name = "scale" .. cfg.s, grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
                      body = function(x, o) o:store(x:load() * cfg.s) end }
end
local configs = { { s = 1 }, { s = 2 }, { s = 3 }, { s = 4 } }
local function timer_by(times) return function(_, _, cfg) return times[cfg.s] end end

describe("mgpu.autotune", function()
  local x = mgpu.full(128, 1)

  it("picks the fastest config by the timer and returns its kernel", function()
    local notes = {}
    local k, cfg, ms = mgpu.autotune{ kernel_factory = factory, configs = configs, key = "pick", args = { x },
                                      timer = timer_by({ 3, 1.5, 0.5, 2 }), cache_dir = false,
                                      log = function(l) notes[#notes + 1] = l end }
    assert.same({ s = 3 }, cfg)
    assert.equal(0.5, ms)
    assert.equal(3, k(x):to_table()[1])
    assert.same({}, notes)
  end)

  it("skips a config whose factory or first launch fails, with a one-line note", function()
    local notes = {}
    local cs = { { s = 1, broken = true }, { s = 2 }, { s = 3 } }
    local _, cfg = mgpu.autotune{ kernel_factory = function(c)
                                    if c.s == 3 then
                                      return mgpu.kernel{ name = "bad", grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
                                                          body = function() error("body fails", 0) end }
                                    end
                                    return factory(c) end,
                                  configs = cs, key = "skip", args = function() return x end,
                                  timer = timer_by({ 0.1, 1, 0.01 }), cache_dir = false,
                                  log = function(l) notes[#notes + 1] = l end }
    assert.same({ s = 2 }, cfg)
    assert.equal(2, #notes)
    assert.matches("^autotune skip: skipping {broken=true,s=1}: factory says no$", notes[1])
    assert.matches("^autotune skip: skipping {s=3}: .*body fails", notes[2])
    assert.not_matches("\n", notes[2])
  end)

  it("fails when no config works", function()
    local err = util.err_of(mgpu.autotune, { kernel_factory = function() error("nope", 0) end, configs = configs,
                                             key = "none", args = { x }, timer = timer_by({ 1, 1, 1, 1 }),
                                             cache_dir = false, log = function() end })
    assert.matches("autotune_spec.lua:%d+: autotune none: no config works %(4 tried%)", err)
  end)

  it("keeps the winner per key and reuses it without timing", function()
    local dir = tmpdir()
    local function tune(times, key)
      local timed = 0
      local _, cfg = mgpu.autotune{ kernel_factory = factory, configs = configs, key = key or "keep", args = { x },
                                    cache_dir = dir, log = function() end,
                                    timer = function(k, i, c) timed = timed + 1; return timer_by(times)(k, i, c) end }
      return cfg, timed
    end
    local cfg, timed = tune({ 4, 3, 2, 1 })
    assert.same({ s = 4 }, cfg); assert.equal(4, timed)
    cfg, timed = tune({ 1, 2, 3, 4 })                 -- would pick s=1: the kept winner wins, nothing timed
    assert.same({ s = 4 }, cfg); assert.equal(0, timed)
    cfg, timed = tune({ 1, 2, 3, 4 }, "other")         -- another key is tuned on its own
    assert.same({ s = 1 }, cfg); assert.equal(4, timed)
    local f = assert(io.open(dir .. "/autotune.txt")); local text = f:read("a"); f:close()
    assert.matches("keep | interpret  | mgpu " .. mgpu.version:gsub("%p", "%%%0") .. " " .. mgpu.engine_id .. "\t{s=4}\t1\n",
                   text, 1, false)
    assert.matches("^%x+$", mgpu.engine_id)
    assert.matches("other | ", text, 1, true)
    -- a key function of the inputs
    local _, c2 = mgpu.autotune{ kernel_factory = factory, configs = configs, args = { x }, cache_dir = dir,
                                 key = function(a) return "fn " .. a.shape[1] end, timer = timer_by({ 2, 1, 2, 2 }) }
    assert.same({ s = 2 }, c2)
    f = assert(io.open(dir .. "/autotune.txt")); text = f:read("a"); f:close()
    assert.matches("fn 128 | ", text, 1, true)
    os.execute("rm -rf " .. dir)
  end)

  it("gives configs an identity a later run recognizes, and keeps no winner for configs without one", function()
    local dir = tmpdir()
    local function tune(cs, times, key)
      local timed, notes = 0, {}
      local _, cfg = mgpu.autotune{ kernel_factory = function() return factory({ s = 1 }) end, configs = cs, key = key,
                                    args = { x }, cache_dir = dir, log = function(l) notes[#notes + 1] = l end,
                                    timer = function(_, _, c) timed = timed + 1; return times[c.id] end }
      return cfg, timed, notes
    end
    -- configs that differ only in a function: once they had one text, and the kept winner's text named config 1
    local f1, f2 = function() end, function() end
    local fns = { { id = 1, act = f1 }, { id = 2, act = f2 } }
    local cfg, timed, notes = tune(fns, { 2, 1 }, "fn")
    assert.are.equal(fns[2], cfg); assert.equal(2, timed)
    assert.matches("autotune fn: config 1 holds a function at %.act, which a later run cannot recognize: the winner is " ..
                   "not kept", notes[1])
    cfg, timed = tune(fns, { 2, 1 }, "fn")           -- tuned again (it once took config 1 as the kept winner)
    assert.are.equal(fns[2], cfg); assert.equal(2, timed)
    -- configs that differ only past the depth the text once reached
    local function deep(v) local t = v; for _ = 1, 10 do t = { t } end; return t end
    local deeps = { { id = 1, d = deep(1) }, { id = 2, d = deep(2) } }
    cfg, timed = tune(deeps, { 2, 1 }, "deep")
    assert.are.equal(deeps[2], cfg); assert.equal(2, timed)
    cfg, timed = tune(deeps, { 1, 2 }, "deep")       -- the kept winner, recognized: config 2, nothing timed
    assert.are.equal(deeps[2], cfg); assert.equal(0, timed)
    os.execute("rm -rf " .. dir)
  end)

  it("takes only finite, positive timer results", function()
    local bad = { -math.huge, -1, 0 / 0, 0, math.huge, "1.5" }   -- -inf once won, and "1.5" read as a number
    local cs = {}
    for i = 1, #bad + 1 do cs[i] = { id = i } end
    local notes = {}
    local _, cfg, ms = mgpu.autotune{ kernel_factory = function() return factory({ s = 1 }) end, configs = cs, key = "t",
                                      args = { x }, cache_dir = false, log = function(l) notes[#notes + 1] = l end,
                                      timer = function(_, _, c) return bad[c.id] or 5 end }
    assert.are.equal(cs[#cs], cfg); assert.equal(5, ms)
    assert.equal(#bad, #notes)
    assert.matches("^autotune t: skipping {id=1}: the timer returned %-inf; it must return a finite, positive number " ..
                   "of milliseconds$", notes[1])
    assert.matches("the timer returned %-1;", notes[2])
    assert.matches("the timer returned nan;", notes[3])
    assert.matches("the timer returned 0;", notes[4])
    assert.matches("the timer returned inf;", notes[5])
    assert.matches("the timer returned a string %(\"1%.5\"%);", notes[6])
  end)

  local script = [[
local mgpu = require "mgpu"
local times = { %s }
local _, cfg = mgpu.autotune{ configs = { { s = 1 }, { s = 2 } }, key = "proc", args = { mgpu.full(128, 1) },
  kernel_factory = function(c) return mgpu.kernel{ name = "k" .. c.s, grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
    body = function(x, o) o:store(x:load() * c.s) end } end,
  timer = function(_, _, c) io.write("timed ", c.s, "\n"); return times[c.s] end }
print("chose " .. cfg.s)
]]
  local function run(env, times)
    local path = util.script(script:format(times))
    local out = util.output(env .. " MGPU_INTERPRET=1 " .. bin .. " " .. path)
    os.remove(path)
    return out
  end

  it("a second process reuses the kept winner (MGPU_CACHE_DIR); MGPU_CACHE=off keeps nothing", function()
    local dir = tmpdir()
    local out = run("MGPU_CACHE_DIR=" .. dir, "2, 1")
    assert.matches("timed 1\ntimed 2\nchose 2\n", out, 1, true)
    out = run("MGPU_CACHE_DIR=" .. dir, "1, 2")
    assert.equal("chose 2\n", out:gsub("mgpu: MGPU_INTERPRET[^\n]*\n", ""))
    out = run("MGPU_CACHE=off MGPU_CACHE_DIR=" .. dir, "1, 2")   -- off: times again, keeps nothing
    assert.matches("timed 1\ntimed 2\nchose 1\n", out, 1, true)
    local off = tmpdir()
    run("MGPU_CACHE=off MGPU_CACHE_DIR=" .. off, "1, 2")
    assert.is_nil(io.open(off .. "/autotune.txt"))
    os.execute("rm -rf " .. dir .. " " .. off)
  end)

  it("agrees with the kernel cache on MGPU_CACHE_MAX_MB: 0 in any spelling keeps nothing, a bad value is said once", function()
    local dir = tmpdir()
    for _, zero in ipairs({ "0", "00", "000" }) do   -- "00" turned the kernel cache off while the winners were still kept
      run("MGPU_CACHE_MAX_MB=" .. zero .. " MGPU_CACHE_DIR=" .. dir, "1, 2")
      assert.is_nil(io.open(dir .. "/autotune.txt"), "MGPU_CACHE_MAX_MB=" .. zero)
    end
    local out = run("MGPU_CACHE_MAX_MB=1e3 MGPU_CACHE_DIR=" .. dir, "2, 1")
    local _, said = out:gsub("MGPU_CACHE_MAX_MB must be a whole number of megabytes %(0 turns the kernel cache off%), got '1e3'; using 512", "")
    assert.equal(1, said, out)
    assert.is_truthy(io.open(dir .. "/autotune.txt"), out)   -- the default bound: the cache is on
    os.execute("rm -rf " .. dir)
  end)

  it("interpreted without a timer takes the first config that works and says so", function()
    if mgpu.device().mode == "gpu" then pending("a GPU is present") return end
    local notes = {}
    local _, cfg = mgpu.autotune{ kernel_factory = factory, configs = { { s = 1, broken = true }, { s = 2 }, { s = 3 } },
                                  key = "interp", args = { x }, log = function(l) notes[#notes + 1] = l end }
    assert.same({ s = 2 }, cfg)
    assert.matches("skipping {broken=true,s=1}: factory says no", notes[1], 1, true)
    assert.matches("kernels are interpreted %(no GPU%), so timings mean nothing; taking the first config that works: {s=2}", notes[2])
  end)

  it("locates bad arguments at the caller's line", function()
    local function at(err, what) assert.matches("autotune_spec.lua:%d+: autotune: " .. what, err) end
    at(util.err_of(mgpu.autotune), "expected a table of options, got nil")
    at(util.err_of(mgpu.autotune, { configs = configs, key = "k" }), "kernel_factory must be a function")
    at(util.err_of(mgpu.autotune, { kernel_factory = factory, configs = {}, key = "k" }),
       "configs must be a non%-empty list of configs, got an empty table")
    at(util.err_of(mgpu.autotune, { kernel_factory = factory, configs = configs }),
       "key must be a string or a function of the inputs, got nil")
    at(util.err_of(mgpu.autotune, { kernel_factory = factory, configs = configs, key = "k", timer = 3 }),
       "timer must be a function")
    at(util.err_of(mgpu.autotune, { kernel_factory = factory, configs = configs, key = "k", args = x }),
       "args must be a list of inputs or a function returning them, got an array %(wrap it: args = { x }%)")
    at(util.err_of(mgpu.autotune, { kernel_factory = factory, configs = configs, key = "k", confgs = 1 }),
       "unknown option 'confgs'")
    at(util.err_of(mgpu.autotune, { kernel_factory = factory, configs = configs, args = { x }, timer = timer_by({}),
                                    key = function() return 1 end }),
       "the key function must return a string, got number")
  end)
end)
