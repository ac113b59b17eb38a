-- mgpu.debug_print: the lines the interpreter prints (captured from a
-- separate `mgpu --interpret` process, so the test output stays clean),
-- the PTX it lowers to (vprintf), and its errors.
local mgpu = require "mgpu"
local util = dofile("spec/support/util.lua")
local err_of = util.err_of

-- the output of `mgpu --interpret` on a script body
local function run(body)
  local path = util.script('local mgpu = require "mgpu"\n' .. body)
  local out = util.output(util.bin .. " --interpret " .. path)
  os.remove(path)
  return out
end

describe("debug_print", function()
  it("prints scalars once per warpgroup, block by block, and only in taken branches", function()
    local out = run([[
      local k = mgpu.kernel{ grid = { 2 }, num_threads = 2, thread_name = "wg", out_shape = mgpu.shape({ 4 }, "f32"),
        body = function(o)
          local b, wg = mgpu.program_id(0), mgpu.axis_index("wg")
          mgpu.debug_print("block {} wg {}: {} {} {} {} 100%", b, wg, mgpu.const(-3, "i64"), mgpu.const(7, "u32"),
                           mgpu.const(0.5, "f32"), mgpu.lt(b, 1))
          mgpu.when(mgpu.eq(b, 1), function() mgpu.debug_print("{{taken}} {}", mgpu.const(1.25, "bf16")) end)
        end }
      k()
    ]])
    assert.are.equal(table.concat({
      "block 0 wg 0: -3 7 0.500000 1 100%",
      "block 0 wg 1: -3 7 0.500000 1 100%",
      "block 1 wg 0: -3 7 0.500000 0 100%",
      "{taken} 1.250000",
      "block 1 wg 1: -3 7 0.500000 0 100%",
      "{taken} 1.250000",
      "" }, "\n"), out)
  end)

  it("prints an array one line per element with its index, as Pallas does", function()
    local out = run([[
      local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 2, 3 }, "i32"),
        body = function(x, o)
          local v = x:load()
          mgpu.debug_print("x{}", v)
          mgpu.debug_print("s = {}", mgpu.broadcast(2, { 2 }, "f16"))
          o:store(v)
        end }
      k(mgpu.iota({ 2, 3 }, "i32"))
    ]])
    assert.are.equal(table.concat({
      "x[0, 0]: 0", "x[0, 1]: 1", "x[0, 2]: 2", "x[1, 0]: 3", "x[1, 1]: 4", "x[1, 2]: 5",
      "s = [0]: 2.000000", "s = [1]: 2.000000", "" }, "\n"), out)
  end)

  it("prints WGMMA and reduced arrays once per element", function()
    local out = run([[
      local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }, "f32"),
        body = function(x, o)
          local w = x:load{ layout = mgpu.Layout.WGMMA }
          local r = w:sum(1)
          mgpu.debug_print("{}", r)
          o:store(r)
        end }
      k(mgpu.full({ 64, 8 }, 1))
    ]])
    local n = 0
    for i, v in out:gmatch("%[(%d+)%]: (%S+)\n") do
      assert.are.equal(tostring(n), i)
      assert.are.equal("8.000000", v)
      n = n + 1
    end
    assert.are.equal(64, n)
  end)

  it("lowers to vprintf calls that ptxas accepts", function()
    local k = mgpu.kernel{ name = "printer", grid = { 1 }, out_shape = mgpu.shape({ 64, 8 }, "f32"),
      body = function(x, o)
        local w = x:load{ layout = mgpu.Layout.WGMMA }
        mgpu.debug_print("w {}", w)
        mgpu.debug_print("{} {} {}", mgpu.program_id(0), mgpu.const(2, "u64"), mgpu.const(1, "bf16"))
        o:store(w)
      end }
    local ptx = k:lower(mgpu.zeros({ 64, 8 })).ptx
    assert.matches("%.extern %.func %(%.param %.b32 func_retval0%) vprintf %(%.param %.b64 fmt, %.param %.b64 args%);", ptx)
    assert.matches("call%.uni %(_%), vprintf, %(mgpu_vp0, mgpu_vp1%);", ptx)
    assert.matches("%.global %.align 1 %.b8 mgpu_fmt0%[%d+%] = {119, 32, 91, 37, 117, 44, 32, 37, 117, 93, 58, 32, 37, 102, 10, 0};", ptx)
    assert.matches("%.local %.align 8 %.b8 mgpu_pbuf%[24%];", ptx)   -- u32 + pad + u64 + f64
    local ptxas = "/usr/local/cuda/bin/ptxas"
    local f = io.open(ptxas)
    if not f then return end   -- the toolkit is optional: ctest's ptxas_ops assembles the debug_print case too
    f:close()
    local path = os.tmpname()
    f = assert(io.open(path .. ".ptx", "w")); f:write(ptx); f:close()
    local ok = os.execute(ptxas .. " -arch=sm_90a " .. path .. ".ptx -o " .. path .. ".cubin > /dev/null 2>&1")
    os.remove(path .. ".ptx"); os.remove(path .. ".cubin"); os.remove(path)
    assert.is_truthy(ok == true or ok == 0)
  end)

  it("reports placeholder counts, refs and bad formats at the script line", function()
    local function trace(body)
      return err_of(mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "f32"), body = body }, mgpu.zeros(4))
    end
    assert.matches("debug_print_spec.lua:%d+: debug_print: the format has 2 placeholders %({}%) but 1 value was given",
                   trace(function(x) mgpu.debug_print("{} {}", mgpu.program_id(0)) end))
    assert.matches("debug_print_spec.lua:%d+: debug_print: the format has 0 placeholders %({}%) but 2 values were given",
                   trace(function(x) mgpu.debug_print("none", 1, 2) end))
    assert.matches("debug_print_spec.lua:%d+: debug_print: value 1 is a ref; load it first %(ref:load%(%)%)",
                   trace(function(x) mgpu.debug_print("{}", x) end))
    assert.matches("debug_print_spec.lua:%d+: debug_print: value 2 is an array %(f32%[4%]%); an array must be the only value printed",
                   trace(function(x) mgpu.debug_print("{} {}", 1, x:load()) end))
    assert.matches("debug_print_spec.lua:%d+: debug_print: only {} placeholders are supported",
                   trace(function(x) mgpu.debug_print("{0}", 1) end))
    assert.matches("debug_print_spec.lua:%d+: debug_print: single '}'", trace(function(x) mgpu.debug_print("}", 1) end))
    assert.matches("debug_print_spec.lua:%d+: debug_print: the first argument must be a format string",
                   trace(function(x) mgpu.debug_print(1) end))
  end)
end)
