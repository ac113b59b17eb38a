-- mgpu.CompilerParams: every Mosaic GPU field, the Pallas TPU fields with a
-- meaning on Hopper, TPU-only fields refused with what to use instead.
local mgpu = require "mgpu"
local CP = mgpu.CompilerParams

local function err_of(f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(err)
end

local function copy_kernel(params, n)
  return mgpu.kernel{ name = "cp", grid = { 1 }, out_shape = mgpu.shape({ n or 256 }, "f32"), compiler_params = params,
    body = function(x, o) o:store(x:load() + 1) end }
end

describe("CompilerParams", function()
  it("accepts every field of Pallas' Mosaic GPU CompilerParams together", function()
    -- jax/_src/pallas/mosaic_gpu/core.py's CompilerParams, all fields at once
    local p = CP{ approx_math = true, dimension_semantics = { "parallel" }, max_concurrent_steps = 2,
                  unsafe_no_auto_barriers = false, reduction_scratch_bytes = 6144, profile_space = 16,
                  profile_dir = "/nonexistent", profile_trace_scope = "warpgroup", profile_bounds_check = true,
                  lowering_semantics = mgpu.LoweringSemantics.Warpgroup }
    assert.is_true(p.approx_math)
    assert.are.equal(6144, p.reduction_scratch_bytes)
    assert.are.equal(16, p.profile_space)
  end)
  it("accepts approx_math", function()
    assert.is_true(CP{ approx_math = true }.approx_math)
  end)
  it("accepts dimension_semantics (arbitrary = sequential)", function()
    assert.are.same({ "parallel", "sequential" }, CP{ dimension_semantics = { "parallel", "arbitrary" } }.dimension_semantics)
    assert.matches("dimension_semantics%[1%]", err_of(CP, { dimension_semantics = { "sideways" } }))
  end)
  it("accepts max_concurrent_steps and delay_release", function()
    local p = CP{ max_concurrent_steps = 3, delay_release = 1 }
    assert.are.equal(3, p.max_concurrent_steps); assert.are.equal(1, p.delay_release)
    assert.matches("delay_release = 2 must be less than max_concurrent_steps = 2",
                   err_of(CP, { max_concurrent_steps = 2, delay_release = 2 }))
  end)
  it("accepts unsafe_no_auto_barriers and lowering_semantics", function()
    assert.is_true(CP{ unsafe_no_auto_barriers = true }.unsafe_no_auto_barriers)
    assert.are.equal(1, CP{ lowering_semantics = mgpu.LoweringSemantics.Lane }.lowering_semantics)
    assert.matches("lowering_semantics must be", err_of(CP, { lowering_semantics = "Thread" }))
  end)
  it("refuses profile_space / profile_dir alone, and takes them together (spec/profile_spec.lua)", function()
    assert.matches("profile_space and profile_dir go together %(got only profile_space%)", err_of(CP, { profile_space = 4096 }))
    assert.matches("got only profile_dir", err_of(CP, { profile_dir = "/tmp/prof" }))
    assert.are.equal(4096, CP{ profile_space = 4096, profile_dir = "/tmp/p" }.profile_space)
    CP{ profile_space = 0, profile_dir = "" }      -- the defaults: no profiling
  end)
  it("uses vmem_limit_bytes as the SMEM budget", function()
    local k = mgpu.kernel{ name = "smem_user", grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 128 }, "f32") }, compiler_params = CP{ vmem_limit_bytes = 100 },
      body = function(x, o, s) s:store(x:load()); o:store(s:load()) end }
    assert.matches("needs %d+ bytes of SMEM but compiler_params.vmem_limit_bytes %(the SMEM budget%) is 100",
                   err_of(k.lower, k, mgpu.shape({ 128 }, "f32")))
    assert.matches("must not be negative", err_of(CP, { vmem_limit_bytes = -1 }))
    local ok = copy_kernel(CP{ vmem_limit_bytes = 0 })     -- no SMEM needed: fits any budget
    assert.matches("%.entry cp", ok:lower(mgpu.shape({ 256 }, "f32")).ptx)
  end)
  it("accepts has_side_effects (kernels are never deduplicated or skipped)", function()
    local k = copy_kernel(CP{ has_side_effects = true })
    local x = mgpu.iota(256, "f32")
    assert.are.equal(2, k(x):to_table()[2])
  end)
  it("takes disable_bounds_checks: SMEM indices may pass their dimension, never the allocation", function()
    -- block 1 reads row 0 at columns 64..127 (past dimension 1): row 1, where the address lands;
    -- with `past`, row 1 at columns 64..127: outside the allocation
    local function over(params, past)
      return mgpu.kernel{ name = "over", grid = { 2 }, out_shape = mgpu.shape({ 2, 64 }, "f32"),
        scratch_shapes = { mgpu.SMEM({ 2, 64 }, "f32") }, compiler_params = params,
        body = function(x, o, s)
          s:store(x:load())
          local i = mgpu.program_id(0)
          o:at(i):store(s:at(past and i or 0, mgpu.ds(i * 64, 64)):load())
        end }
    end
    local x = mgpu.random.uniform({ 2, 64 }, "f32")
    local want = x:to_table()
    assert.matches("SMEM index 64 is outside dimension 1 of size 64", err_of(over(CP{}), x))
    assert.matches("SMEM index 64 is outside dimension 1 of size 64",
                   err_of(over(CP{ disable_bounds_checks = false }), x))
    local got = over(CP{ disable_bounds_checks = true })(x):to_table()
    assert.are.same(want, got)
    assert.matches("params_spec.lua:%d+: .*SMEM index %[1, 64%] lands outside its allocation of 512 bytes",
                   err_of(over(CP{ disable_bounds_checks = true }, true), x))
  end)
  it("takes flags as driver JIT options", function()
    local p = CP{ flags = { "--maxrregcount=128", "-O2" } }
    assert.are.equal(128, p.max_registers); assert.are.equal(2, p.opt_level)
    assert.are.equal(64, CP{ flags = { maxrregcount = 64 } }.max_registers)
    assert.matches("unknown JIT option '%-%-use_fast_math'", err_of(CP, { flags = { "--use_fast_math" } }))
    assert.matches("maxrregcount must be between 16 and 255", err_of(CP, { flags = { "--maxrregcount=4" } }))
    local k = copy_kernel(CP{ flags = { "--maxrregcount=64" } })        -- runs (the interpreter ignores JIT options)
    assert.are.equal(1, k(mgpu.zeros(256)):to_table()[1])
  end)
  it("caps registers with .maxnreg in the PTX, which ptxas honours beside .maxntid", function()
    local function softmax(params)   -- a row of 4096 in one warpgroup takes 48 registers uncapped
      return mgpu.kernel{ name = "capped", grid = { 1 }, out_shape = mgpu.shape({ 1, 4096 }, "bf16"), compiler_params = params,
        body = function(x, y)
          local r = x:at(0):load():astype("f32")
          local p = (r - r:max()):exp()
          y:at(0):store((p / p:sum()):astype("bf16"))
        end }
    end
    local x = mgpu.zeros({ 1, 4096 }, "bf16")
    local capped, free = softmax(CP{ flags = { "--maxrregcount=40" } }):lower(x).ptx, softmax(CP{}):lower(x).ptx
    assert.matches("\n%.maxntid 128, 1, 1\n%.maxnreg 40\n", capped)
    assert.is_nil(free:find(".maxnreg", 1, true))
    if not os.execute("command -v ptxas > /dev/null 2>&1") then return end   -- ptxas checks where it is installed
    local function registers(ptx)
      local path = os.tmpname()
      local f = assert(io.open(path .. ".ptx", "w")); f:write(ptx); f:close()
      local p = io.popen("ptxas -arch=sm_90a -v " .. path .. ".ptx -o " .. path .. ".cubin 2>&1")
      local log = p:read("a"); p:close()
      os.remove(path .. ".ptx"); os.remove(path .. ".cubin"); os.remove(path)
      return assert(tonumber(log:match("Used (%d+) registers")), log)
    end
    assert.is_true(registers(free) > 40)
    assert.is_true(registers(capped) <= 40)
  end)
  it("refuses TPU-only fields saying what to use on Hopper", function()
    for _, f in ipairs({ "allow_input_fusion", "internal_scratch_in_bytes", "serialization_format", "kernel_type",
                         "skip_device_barrier", "collective_id", "disable_semaphore_checks", "mosaic_params" }) do
      assert.matches("CompilerParams: " .. f .. " is TPU%-only; on Hopper ", err_of(CP, { [f] = 1 }))
    end
  end)
  it("names unknown fields", function()
    assert.matches("CompilerParams: unknown field 'approx_mathh'", err_of(CP, { approx_mathh = true }))
  end)
end)
