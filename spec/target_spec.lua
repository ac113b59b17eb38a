-- The code-generation target: sm_90a (Hopper) or sm_100a (Blackwell), chosen
-- with mgpu --target, MGPU_TARGET or mgpu.configure{ target }; it reaches the
-- IR text (the kernel cache's key) and the PTX header, and ops of the other
-- architecture are errors at their script line.  Each case runs its own mgpu
-- process: the target is fixed when the default context is made.
local util = dofile("spec/support/util.lua")

-- Runs `body` as a script under mgpu with `flags` (and `env` before the
-- command); returns its output and whether it succeeded.
local function run(body, flags, env)
  local p = util.script(body)
  local out = util.output(string.format("%s %s %s %s 2>&1; echo \"exit=$?\"", env or "", util.bin, flags or "", p))
  os.remove(p)
  return out, tonumber(out:match("exit=(%d+)%s*$")) == 0
end

-- A script printing the target, and the IR and PTX heads of a small kernel
-- (CONFIGURE: a line put before them).
local show = [[
local mgpu = require "mgpu"
CONFIGURE
local k = mgpu.kernel{ out_shape = mgpu.shape({128}, "f32"), body = function(x, o) o:store(x:load() + 1) end }
local l = k:lower(mgpu.shape({128}, "f32"))
print("target " .. mgpu.device().target)
print(l.ir:match("^[^\n]*"))
print(l.ptx:match("%.version [^\n]*"), l.ptx:match("%.target [^\n]*"))
]]

describe("target", function()
  it("is sm_90a without a GPU or a setting: PTX ISA 8.0, and the IR text names no target", function()
    local out, ok = run((show:gsub("CONFIGURE", "")), "--interpret", "env -u MGPU_TARGET")
    assert.is_true(ok, out)
    assert.matches("target sm_90a\n", out)
    assert.is_nil(out:match("target=sm_"))
    assert.matches("%.version 8%.0\t%.target sm_90a", out)
  end)

  for _, how in ipairs({ { "--target", "--interpret --target sm_100a", nil, "" },
                         { "MGPU_TARGET", "--interpret", "MGPU_TARGET=sm_100a", "" },
                         { "mgpu.configure", "--interpret", "env -u MGPU_TARGET", 'mgpu.configure{ target = "sm_100a" }' } }) do
    it("is sm_100a by " .. how[1] .. ": PTX ISA 8.6 for sm_100a, and the IR text (the cache key) says so", function()
      local out, ok = run((show:gsub("CONFIGURE", how[4])), how[2], how[3])
      assert.is_true(ok, out)
      assert.matches("target sm_100a\n", out)
      assert.matches("kernel kernel%([^\n]*%) grid=%(%) threads=1 approx_math=0 target=sm_100a {", out)
      assert.matches("%.version 8%.6\t%.target sm_100a", out)
    end)
  end

  it("is what mgpu info reports", function()
    local out = util.output("MGPU_TARGET=sm_100a " .. util.bin .. " info")
    assert.matches("\ntarget:   sm_100a\n", out)
  end)

  it("mgpu.configure overrides MGPU_TARGET", function()
    local out, ok = run((show:gsub("CONFIGURE", 'mgpu.configure{ target = "sm_90a" }')), "--interpret", "MGPU_TARGET=sm_100a")
    assert.is_true(ok, out)
    assert.matches("%.target sm_90a", out)
  end)

  it("refuses unknown targets wherever they are given", function()
    local out, ok = run('require("mgpu").configure{ target = "sm_80" }', "--interpret")
    assert.is_false(ok)
    assert.matches(':1: mgpu.configure: target must be "sm_90a" %(Hopper%) or "sm_100a" %(Blackwell%), got "sm_80"', out)
    out, ok = run("print(1)", "--target sm_120a")
    assert.is_false(ok)
    assert.matches("mgpu: %-%-target needs sm_90a or sm_100a", out)
    out, ok = run('require("mgpu").device()', "--interpret", "MGPU_TARGET=hopper")
    assert.is_false(ok)
    assert.matches("MGPU_TARGET must be sm_90a or sm_100a, got 'hopper'", out)
  end)

  it("refuses wgmma and its accumulator for sm_100a at the script line, naming the target", function()
    local out, ok = run([[
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({64, 64}, "f32"), body = function(o)
  mgpu.run_scoped(function(acc) o:store(acc:load()) end,
    mgpu.ACC({ 64, 64 }, "f32"))
end }
k:lower()
]], "--interpret --target sm_100a")
    assert.is_false(ok)
    assert.matches(":4: ACC %(a wgmma accumulator%) is Hopper%-only %(sm_90a%) but this kernel's target is sm_100a: on " ..
                   "Blackwell use mgpu.tcgen05_mma into an mgpu.TMEM accumulator", out)
  end)
end)
