-- Hardware limits are checked before anything launches, each with an error
-- at the script line naming the limit and the value: the grid (2^31-1 along
-- x, 65535 along y and z), cluster size, threads per block, SMEM per block
-- and the SMEM budget, register counts, and the tensor-map (TMA) constraints.
local mgpu = require "mgpu"

local err_of = dofile("spec/support/util.lua").err_of

-- Errors found when a kernel is compiled for its first launch carry the
-- calling line and the body's line, in that order.
local function at_line(pattern, err)
  assert.matches("^[^\n]*limits_spec.lua:%d+: " .. pattern, tostring(err))
end

local out1 = mgpu.shape({ 1 }, "i32")

describe("launch limits", function()
  it("grid: 2^31-1 blocks along one axis", function()
    local k = mgpu.kernel{ grid = { 2 ^ 31 }, out_shape = out1, body = function(o) end }
    at_line("grid%[1%] = 2147483648 is more than 2%^31%-1 blocks", err_of(k))
  end)

  it("grid: 65535 blocks along CUDA's y and z", function()
    local y = mgpu.kernel{ grid = { 65536, 1 }, out_shape = out1, body = function(o) end }
    at_line("kernel 'kernel': grid %(65536, 1%) does not fit CUDA's launch grid: axis 0 runs along CUDA's y dimension, " ..
            "65536 blocks %(at most 65535%)", err_of(y))
    local z = mgpu.kernel{ grid = { 65536, 1, 1 }, out_shape = out1, body = function(o) end }
    at_line(".-axis 0 runs along CUDA's z dimension, 65536 blocks %(at most 65535%)", err_of(z))
    local ok = mgpu.kernel{ grid = { 65535, 1 }, out_shape = out1, body = function(o) end }
    assert.is_string(ok:lower().ir)
  end)

  it("grid: the cluster counts along its axis", function()
    local k = mgpu.kernel{ grid = { 40000, 1 }, cluster = { 1, 2 }, out_shape = out1, body = function(o) end }
    at_line(".-80000 blocks counting the cluster %(at most 65535%)", err_of(k))
  end)

  it("cluster: at most 8 blocks", function()
    at_line("a cluster may hold at most 8 blocks %(the portable cluster size%), got 16",
            err_of(mgpu.kernel, { cluster = { 16 }, out_shape = out1, body = function(o) end }))
    at_line("a cluster may hold at most 8 blocks %(the portable cluster size%), got 12",
            err_of(mgpu.kernel, { cluster = { 2, 3, 2 }, out_shape = out1, body = function(o) end }))
    at_line("cluster must be a table of at most 3 sizes",
            err_of(mgpu.kernel, { cluster = { 1, 1, 1, 1 }, out_shape = out1, body = function(o) end }))
  end)

  it("threads: at most 1024 per block (8 warpgroups)", function()
    at_line("num_threads %(warpgroups per block%) must be between 1 and 8, got 9 %(1152 threads; a block has at most " ..
            "1024, 128 per warpgroup%)", err_of(mgpu.kernel, { num_threads = 9, out_shape = out1, body = function(o) end }))
    at_line("num_threads %(warpgroups per block%) must be between 1 and 8, got 0",
            err_of(mgpu.kernel, { num_threads = 0, out_shape = out1, body = function(o) end }))
  end)
end)

describe("SMEM limits", function()
  it("SMEM per block: the device limit, with what is live at the peak", function()
    local k = mgpu.kernel{ out_shape = out1, scratch_shapes = { mgpu.SMEM({ 60000 }, "f32") },
      body = function(o, s) s:store(1.0) end }
    local err = err_of(k)
    at_line("kernel 'kernel' needs 240640 bytes of SMEM but a block may have 232448", err)
    assert.matches("SMEM f32%[60000%]: 240000 bytes", err)
  end)

  it("the SMEM budget of compiler_params.vmem_limit_bytes", function()
    local k = mgpu.kernel{ out_shape = out1, scratch_shapes = { mgpu.SMEM({ 4096 }, "f32") },
      compiler_params = mgpu.CompilerParams{ vmem_limit_bytes = 8192 }, body = function(o, s) s:store(1.0) end }
    at_line("kernel 'kernel' needs 16384 bytes of SMEM but compiler_params.vmem_limit_bytes %(the SMEM budget%) is 8192",
            err_of(k))
  end)
end)

describe("register limits", function()
  it("maxrregcount: 16 to 255", function()
    at_line("CompilerParams: flags: maxrregcount must be between 16 and 255, got 256",
            err_of(mgpu.CompilerParams, { flags = { maxrregcount = 256 } }))
    at_line("CompilerParams: flags: maxrregcount must be between 16 and 255, got 8", err_of(mgpu.CompilerParams, { flags = { "--maxrregcount=8" } }))
  end)

  it("set_max_registers: a multiple of 8 from 24 to 256", function()
    local function k(n)
      return mgpu.kernel{ num_threads = 2, thread_name = "wg", out_shape = out1,
        body = function(o) mgpu.set_max_registers(n, { action = "increase" }) end }
    end
    at_line("set_max_registers: n must be a multiple of 8 between 24 and 256, got 264", err_of(k(264)))
    at_line("set_max_registers: n must be a multiple of 8 between 24 and 256, got 16", err_of(k(16)))
  end)
end)

describe("tensor map (TMA) limits", function()
  local function copy(gshape, tile, dtype, xf)
    return mgpu.kernel{ out_shape = out1,
      scratch_shapes = { mgpu.SMEM(tile, dtype, xf and { transforms = xf } or nil), mgpu.Barrier{} },
      body = function(a, _, s, bar)
        local idx = {}
        for i = 1, #tile do idx[i] = mgpu.ds(0, tile[i]) end
        mgpu.copy_gmem_to_smem(a:at((table.unpack or unpack)(idx)), s, bar)
        mgpu.barrier_wait(bar)
      end }, mgpu.zeros(gshape, dtype)
  end

  it("a box is at most 256 elements along a dimension", function()
    local k, a = copy({ 4, 512 }, { 4, 512 }, "f32")
    at_line("copy_gmem_to_smem: a TMA box is at most 256 elements along each dimension; this one needs 512", err_of(k, a))
  end)

  it("GMEM strides are multiples of 16 bytes", function()
    local k, a = copy({ 8, 6 }, { 8, 4 }, "f32")
    at_line("copy_gmem_to_smem: GMEM strides must be multiples of 16 bytes for the copy engine; one is 24 bytes", err_of(k, a))
  end)

  it("rows are multiples of 16 bytes", function()
    local k, a = copy({ 8, 8 }, { 8, 2 }, "f32")
    at_line("copy_gmem_to_smem: the copy's rows are 8 bytes; the copy engine needs multiples of 16", err_of(k, a))
  end)

  it("a swizzled minor tile is the swizzle's width", function()
    local T = mgpu.transforms
    local k, a = copy({ 64, 64 }, { 64, 64 }, "bf16", { T.tiling{ 8, 32 }, T.swizzle(128) })
    assert.matches("limits_spec.lua:%d+: .*swizzle%(128%) needs a minor dimension of exactly 128 bytes, but it has 64",
                   tostring(err_of(k, a)))
  end)

  it("the tile fits the GMEM array", function()
    local k, a = copy({ 4, 64 }, { 8, 64 }, "f32")
    at_line("copy_gmem_to_smem: the tile %(8%) is larger than dimension 0 of the GMEM array %(4%)$", err_of(k, a))
  end)
end)

describe("trace size", function()
  -- a body tracing n + 1 ops (program_id, then n adds)
  local function adds(n)
    return mgpu.kernel{ name = "adds", grid = { 1 }, out_shape = out1, body = function(o)
      local x = mgpu.program_id(0)
      for _ = 1, n do x = x + x end
      o:at(0):store(x)
    end }
  end
  local util = dofile("spec/support/util.lua")

  it("stops a body past the limit at the op's line, and mgpu.configure{ max_trace_ops } moves it", function()
    assert.are.equal(100000, require("mgpu.context").max_trace_ops())   -- the default (MGPU_MAX_TRACE_OPS unset)
    mgpu.configure{ max_trace_ops = 50 }
    at_line("kernel 'adds': its body traced more than 50 ops, the limit %(mgpu.configure{ max_trace_ops = n } or " ..
            "MGPU_MAX_TRACE_OPS raise it%)", err_of(adds(60)))
    assert.are.same({ 0 }, adds(40)():to_table())
    mgpu.configure{ max_trace_ops = 100 }
    assert.are.same({ 0 }, adds(60)():to_table())
    mgpu.configure{ max_trace_ops = false }   -- back to the default
    for _, bad in ipairs({ 0, -3, 2.5, "many", math.huge }) do
      assert.matches("limits_spec.lua:%d+: mgpu.configure: max_trace_ops must be a whole number of ops, at least 1",
                     err_of(mgpu.configure, { max_trace_ops = bad }))
    end
  end)

  it("reads MGPU_MAX_TRACE_OPS", function()
    local p = util.script([[
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 1 }, "i32"), body = function(o)
  local x = mgpu.program_id(0)
  for _ = 1, 30 do x = x + x end
end }
k()
]])
    local out = util.output("MGPU_INTERPRET=1 MGPU_MAX_TRACE_OPS=20 " .. util.bin .. " " .. p)
    assert.matches(":4: kernel 'kernel': its body traced more than 20 ops", out)
    out = util.output("MGPU_INTERPRET=1 MGPU_MAX_TRACE_OPS=lots " .. util.bin .. " " .. p)
    assert.matches(":6: MGPU_MAX_TRACE_OPS must be a whole number of ops, at least 1, got 'lots'", out)
    os.remove(p)
  end)
end)
