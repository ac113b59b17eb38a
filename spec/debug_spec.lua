-- Debug dumps: MGPU_DEBUG=ir,layout,smem,ptx,time and mgpu.kernel{ debug = true }
-- print each stage to stderr when a kernel is compiled; mgpu.show prints a
-- kernel's IR, PTX and resources.
local util = dofile("spec/support/util.lua")
local bin, script = util.bin, util.script
-- stderr only (stdout to /dev/null)
local function stderr_of(cmd)
  local p = io.popen(cmd .. " 2>&1 >/dev/null")
  local out = p:read("a"); p:close()
  return out
end

local body = [[
local mgpu = require "mgpu"
local k = mgpu.kernel{ name = "dbg", grid = { 1 }, out_shape = mgpu.shape({ 256 }, "f32"), %s
  body = function(x, o) o:store(x:load() * 2) end }
k(mgpu.zeros(256))
]]

describe("debug dumps", function()
  it("MGPU_DEBUG prints the named stages", function()
    local err = stderr_of("MGPU_INTERPRET=1 MGPU_DEBUG=ir,layout,smem,ptx,time " .. bin .. " " .. script(body:format("")))
    assert.matches("mgpu debug: kernel 'dbg'", err)
    assert.matches("%-%- ir %-%-\nkernel dbg%(", err)
    assert.matches("%-%- layout %-%-\n%%%d+: ", err)
    assert.matches("%-%- smem %-%-\n%d+ bytes of SMEM per block", err)
    assert.matches("%-%- ptx %-%-\n.*%.entry dbg%(", err)
    assert.matches("%-%- time %-%-\ntrace [%d.]+ ms, passes [%d.]+ ms, PTX [%d.]+ ms, JIT/load", err)
  end)

  it("MGPU_DEBUG=ptx prints only the PTX", function()
    local err = stderr_of("MGPU_INTERPRET=1 MGPU_DEBUG=ptx " .. bin .. " " .. script(body:format("")))
    assert.matches("%.entry dbg%(", err)
    assert.is_nil(err:find("-- ir --", 1, true))
  end)

  it("kernel{ debug = true } prints every stage", function()
    local err = stderr_of("MGPU_INTERPRET=1 " .. bin .. " " .. script(body:format("debug = true,")))
    for _, s in ipairs({ "ir", "layout", "smem", "ptx", "time" }) do assert.matches("%-%- " .. s .. " %-%-", err) end
  end)

  it("mgpu.show prints IR, PTX and resources", function()
    local p = io.popen("MGPU_INTERPRET=1 " .. bin .. " " .. script([[
local mgpu = require "mgpu"
local k = mgpu.kernel{ name = "shown", grid = { 1 }, out_shape = mgpu.shape({ 256 }, "f32"),
  body = function(x, o) o:store(x:load() + 1) end }
mgpu.show(k, mgpu.shape({ 256 }, "f32"))
]]) .. " 2>&1")
    local out = p:read("a"); p:close()
    assert.matches("%-%- ir %-%-\nkernel shown%(", out)
    assert.matches("%.entry shown%(", out)
    assert.matches("%-%- resources %-%-\nSMEM %d+ bytes per block, 128 threads, registers", out)
  end)
end)
