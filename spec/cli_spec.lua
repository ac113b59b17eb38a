-- The mgpu command: scripts, flags, the REPL, and error reports that
-- point at the script line with a non-zero exit status.
local bin = dofile("spec/support/util.lua").bin

-- The command's output and exit status for `args`, with `input` on stdin
-- and `prefix` (such as "env -u VAR") in front.
local function run(args, input, prefix)
  local tmp = os.tmpname()
  local cmd = string.format("%s %s %s > %s 2>&1", prefix or "", bin, args, tmp)
  if input then
    local inp = os.tmpname()
    local f = assert(io.open(inp, "w")); f:write(input); f:close()
    cmd = string.format("%s %s %s < %s > %s 2>&1", prefix or "", bin, args, inp, tmp)
  end
  local ok, _, code = os.execute(cmd)
  local f = assert(io.open(tmp)); local out = f:read("a"); f:close()
  os.remove(tmp)
  if type(ok) == "number" then code = ok ~= 0 and 1 or 0 end   -- Lua 5.1
  return out, code or (ok and 0 or 1)
end

local script = dofile("spec/support/util.lua").script

describe("mgpu command", function()
  it("prints its version", function()
    local out, code = run("--version")
    assert.are.equal(0, code)
    assert.matches("^mgpu %d+%.%d+%.%d+ %(engine %x+, Lua 5%.4", out)
  end)

  it("reports the device or interpret mode", function()
    local out, code = run("info")
    assert.are.equal(0, code)
    assert.is_truthy(out:match("no GPU: interpret mode") or out:match("device:"))
  end)

  it("runs -e code and scripts with arguments", function()
    local out, code = run("-e \"print(1 + 1)\"")
    assert.are.equal(0, code)
    assert.are.equal("2\n", out)
    local p = script("print(select('#', ...), table.concat({ ... }, ','), arg[0] ~= nil, arg[2])")
    out, code = run(p .. " a b")
    assert.are.equal(0, code)
    assert.matches("2\ta,b\ttrue\tb", out)
  end)

  it("splits a script's arguments with mgpu.script_args", function()
    local p = script([[
      local pos, opt = require("mgpu").script_args(...)
      print(table.concat(pos, ","), opt.depth + 1, opt.dtype, math.type(opt.scale), opt.x)]])
    local out, code = run(p .. " 256 depth=3 dtype=bf16 128 scale=0.5 x==y")
    os.remove(p)
    assert.are.equal(0, code)
    assert.are.equal("256,128\t4\tbf16\tfloat\t=y\n", out)
  end)

  it("reports a syntax error with file:line and fails", function()
    local p = script("local x = 1\nlocal y = = 2\n")
    local out, code = run(p)
    assert.are.equal(1, code)
    assert.matches("mgpu: [^\n]*:2: unexpected symbol near '='", out)
  end)

  it("reports a shape mismatch at the kernel line and shows it", function()
    local p = script([[
local mgpu = require "mgpu"
local add = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
  body = function(x, y, o)
    o:store(x:load() + y:load())
  end }
add(mgpu.zeros(128), mgpu.zeros(64))
]])
    local out, code = run(p)
    assert.are.equal(1, code)
    assert.matches(":4: add: shapes f32%[128%] and f32%[64%] do not match", out)
    assert.matches("     4 | o:store%(x:load%(%) %+ y:load%(%)%)", out)
  end)

  it("reports a wrong dtype and too many indices", function()
    local p = script([[
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "f32"),
  body = function(x, o) o:store(x:at(0, 0):load()) end }
k(mgpu.zeros(4, "i32"))
]])
    local out, code = run(p)
    assert.are.equal(1, code)
    assert.matches(":3: too many indices: ref of rank 1 indexed with 2", out)
    p = script([[
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "f32"),
  body = function(x, o) o:store(x:load():exp()) end }
k(mgpu.zeros(4, "i32"))
]])
    out, code = run(p)
    assert.are.equal(1, code)
    assert.matches(":3: exp: not defined for dtype i32", out)
  end)

  it("keeps the REPL alive after errors and continues statements", function()
    local out, code = run("", "1 + 1\nerror('boom')\nfor i = 1, 2 do\nprint(i * 10)\nend\nmgpu.version\n")
    assert.are.equal(0, code)
    assert.matches("2\n", out)
    assert.matches("stdin:1: boom", out)
    assert.matches("10\n20\n", out)
    assert.matches("%d+%.%d+%.%d+", out)
  end)

  it("enters the REPL after a script with -i and reports errors at the REPL line", function()
    local p = script("answer = 42\n")
    local out, code = run("-i " .. p, "answer + 1\nmgpu.zeros(3, 'f9')\nprint('still here')\n")
    assert.are.equal(0, code)
    assert.matches("43\n", out)
    assert.matches("stdin:1: zeros: unknown dtype f9", out)
    assert.matches("still here", out)
  end)

  it("emits PTX without executing", function()
    local dir = os.tmpname() .. "_ptx"
    local p = script([[
local mgpu = require "mgpu"
assert(mgpu.compile_only())
local k = mgpu.kernel{ name = "twice", grid = { 1 }, out_shape = mgpu.shape({ 256 }, "f32"),
  body = function(x, o) o:store(x:load() * 2) end }
k(mgpu.zeros(256))
]])
    local out, code = run("--emit-ptx " .. dir .. " " .. p)
    assert.are.equal(0, code, out)
    local f = assert(io.open(dir .. "/twice.ptx"))
    local ptx = f:read("a"); f:close()
    assert.matches(".entry twice%(", ptx)
    os.remove(dir .. "/twice.ptx"); os.remove(dir)
  end)

  it("emits the PTX of a kernel that k:lower traced before its first call", function()
    local dir = os.tmpname() .. "_ptx"
    local p = script([[
local mgpu = require "mgpu"
local k = mgpu.kernel{ name = "lowered", grid = { 1 }, out_shape = mgpu.shape({ 256 }, "f32"),
  body = function(x, o) o:store(x:load() + 1) end }
k:lower(mgpu.shape({ 256 }, "f32"))
k(mgpu.zeros(256))
]])
    local out, code = run("--emit-ptx " .. dir .. " " .. p)
    assert.are.equal(0, code, out)
    local f = assert(io.open(dir .. "/lowered.ptx"))
    f:close()
    os.remove(dir .. "/lowered.ptx"); os.remove(dir)
  end)

  it("reports an error found while a kernel runs at the body's line, naming the call once", function()
    local p = script([[
local mgpu = require "mgpu"
local k = mgpu.kernel{ name = "stuck", grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  scratch_shapes = { mgpu.Barrier{} },
  body = function(o, bar)
    o:store(0)
    mgpu.barrier_wait(bar)
  end }
k()
]])
    local out, code = run(p)
    os.remove(p)
    assert.are.equal(1, code, out)
    local report = out:match("mgpu: ([^\n]*:%d+: deadlock.*)$")
    assert.is_truthy(report, out)
    assert.matches("^[^\n:]*:6: deadlock: ", report)                        -- the body's line first, alone
    assert.matches("\n     6 | mgpu.barrier_wait%(bar%)", report)            -- its source
    local _, calls = report:gsub(":8[^%d]", "")
    assert.are.equal(1, calls, report)                                       -- the call site, once
    assert.matches("%(kernel 'stuck', called at [^\n]*:8%)", report)
  end)

  it("says once, in one short line, that kernels run in the interpreter without a GPU", function()
    local p = script([[
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }), body = function(x, o) o:store(x:load()) end }
k(mgpu.zeros(4)); k(mgpu.full(4, 1)); print(mgpu.interpreting())
]])
    local out, code = run(p, nil, "env -u MGPU_INTERPRET MGPU_LIBCUDA=/nonexistent/libcuda.so.1")
    os.remove(p)
    assert.are.equal(0, code, out)
    local notices = {}
    for line in out:gmatch("[^\n]+") do
      if line:match("interpreter") then notices[#notices + 1] = line end
    end
    assert.are.same({ "mgpu: no GPU (no CUDA driver); kernels run in the interpreter" }, notices)
    assert.matches("true\n", out)
  end)

  it("rejects unknown options", function()
    local out, code = run("--frobnicate")
    assert.are.equal(1, code)
    assert.matches("unknown option '%-%-frobnicate'", out)
  end)

  it("names --emit-ptx when its directory is empty or cannot be made", function()
    local p = script("print(1)")
    local out, code = run("--emit-ptx '' " .. p)   -- once 'cannot create : File name too long'
    assert.are.equal(1, code)
    assert.matches("^mgpu: %-%-emit%-ptx needs a directory name, got an empty one\n", out)
    out, code = run("--emit-ptx " .. p .. "/sub " .. p)   -- under a file
    assert.are.equal(1, code)
    assert.matches("^mgpu: %-%-emit%-ptx: cannot create the directory '.-/sub': Not a directory", out)
  end)

  it("shows the source line of a script whose path Lua shortens", function()
    local dir = os.tmpname()
    os.remove(dir)
    local path = dir .. "/" .. ("d"):rep(120) .. ".lua"   -- longer than Lua's chunk names (60)
    os.execute("mkdir -p " .. dir)
    local f = assert(io.open(path, "w")); f:write("local x = 1\nerror('boom here')\n"); f:close()
    local out, code = run("-- " .. path)
    assert.are.equal(1, code)
    assert.matches("mgpu: %.%.%.d+%.lua:2: boom here\n +2 | error%('boom here'%)", out)   -- the echo was lost
    os.execute("rm -rf " .. dir)
  end)
end)
