-- The cuBLAS reference (mgpu.bench.cublas_matmul) and tools/bench.lua without
-- a GPU: argument checks, clear errors instead of crashes, and the benchmark's
-- own logic (input rotation, agreement check, report) with a stand-in cuBLAS.
local mgpu = require "mgpu"
local bench = require "mgpu.bench"
local context = require "mgpu.context"
local bin = dofile("spec/support/util.lua").bin
local unpack = table.unpack or unpack

local function run(args)
  local tmp = os.tmpname()
  local ok, _, code = os.execute(string.format("%s %s > %s 2>&1", bin, args, tmp))
  local f = assert(io.open(tmp)); local out = f:read("*a"); f:close()
  os.remove(tmp)
  if type(ok) == "number" then code = ok ~= 0 and ok / 256 or 0 end   -- Lua 5.1: the wait status
  return out, code or (ok and 0 or 1)
end

local function fails(pattern, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error matching " .. pattern)
  assert.matches(pattern, tostring(err))
end

describe("mgpu.bench options", function()
  it("runs before ahead of every timed batch and refuses a non-function", function()
    local calls, order = 0, {}
    local med = bench.compare({ function() order[#order + 1] = "a" end, function() order[#order + 1] = "b" end },
                              { warmup = 1, reps = 3, inner = 2, before = function() calls = calls + 1; order[#order + 1] = "-" end })
    assert.are.equal(2, #med)
    assert.are.equal(6, calls)
    -- (the warm-up calls, then the batches in alternating order)
    assert.are.equal("ab" .. "-aa-bb" .. "-bb-aa" .. "-aa-bb", table.concat(order))
    fails("bench: before must be a function %(run before each timed batch, untimed%), got number",
          bench.bench, function() end, { before = 3 })
    -- interpreted there is no L2 to flush: the flush is a no-op
    bench.l2_flush()()
  end)
end)

describe("mgpu.bench.cublas_matmul", function()
  local a = mgpu.zeros({ 64, 32 }, "bf16")
  local b = mgpu.zeros({ 32, 16 }, "bf16")
  local c = mgpu.zeros({ 64, 16 }, "bf16")

  it("checks shapes, dtypes and kinds and names the culprit", function()
    fails("shapes do not fit c = a @ b: a 64x32, b 32x16, c 64x8", bench.cublas_matmul, a, b, mgpu.zeros({ 64, 8 }, "bf16"))
    fails("shapes do not fit", bench.cublas_matmul, a, mgpu.zeros({ 16, 16 }, "bf16"), c)
    fails("the dtype must be bf16, f16, f8e4m3 or f8e5m2, got f32", bench.cublas_matmul, mgpu.zeros({ 64, 32 }, "f32"),
          mgpu.zeros({ 32, 16 }, "f32"), mgpu.zeros({ 64, 16 }, "f32"))
    fails("one dtype, got bf16, f16 and bf16", bench.cublas_matmul, a, mgpu.zeros({ 32, 16 }, "f16"), c)
    fails("c must be an array, got nil", bench.cublas_matmul, a, b)
    fails("b must be 2%-D, got rank 1", bench.cublas_matmul, a, mgpu.zeros({ 32 }, "bf16"), c)
  end)

  it("takes FP8 operands with b as N x K, a bf16 c and two f32 scales", function()
    local a8, b8, c8, s = mgpu.zeros({ 64, 32 }, "f8e4m3"), mgpu.zeros({ 16, 32 }, "f8e5m2"), c, mgpu.zeros({}, "f32")
    fails("FP8 takes b_scale, an f32 array of shape {}, got nil", bench.cublas_matmul, a8, b8, c8, s)
    fails("FP8 takes a_scale, an f32 array of shape {}, got f32%[1%]", bench.cublas_matmul, a8, b8, c8, mgpu.zeros({ 1 }, "f32"), s)
    fails("a is f8e4m3, so b must be f8e4m3 or f8e5m2, got bf16", bench.cublas_matmul, a8, b, c8, s, s)
    fails("with FP8 a and b, c must be bf16, got f16", bench.cublas_matmul, a8, b8, mgpu.zeros({ 64, 16 }, "f16"), s, s)
    fails("shapes do not fit c = a @ b%^T %(FP8 takes b as N x K%): a 64x32, b 32x16, c 64x16", bench.cublas_matmul, a8,
          mgpu.zeros({ 32, 16 }, "f8e5m2"), c8, s, s)
    local core, ctx = context.core, context.get()
    fails("cublasLt has no f8e5m2 x f8e5m2 matmul", core.blas_matmul_f8, ctx, "f8e5m2", "f8e5m2", 64, 16, 32, a8.buf, b8.buf,
          c8.buf, s.buf, s.buf)
    fails("a_dtype and b_dtype must be f8e4m3 or f8e5m2, not f8e4m3 and bf16", core.blas_matmul_f8, ctx, "f8e4m3", "bf16",
          64, 16, 32, a8.buf, b8.buf, c8.buf, s.buf, s.buf)
    fails("cannot hold a 64x32 of f8e4m3, b 32x32 of f8e5m2, c 64x32 of bf16 and one f32 scale each", core.blas_matmul_f8,
          ctx, "f8e4m3", "f8e5m2", 64, 32, 32, a8.buf, b8.buf, c8.buf, s.buf, s.buf)
    if mgpu.device().mode ~= "gpu" then
      fails("cublas_matmul: no GPU: cuBLAS runs only on a GPU", bench.cublas_matmul, a8, b8, c8, s, s)
    end
  end)

  it("says that cuBLAS needs a GPU when kernels are interpreted", function()
    if mgpu.device().mode == "gpu" then pending("a GPU is present") return end
    fails("cublas_matmul: no GPU: cuBLAS runs only on a GPU, and this context runs kernels in the interpreter",
          bench.cublas_matmul, a, b, c)
  end)

  it("is checked again by the engine (buffer sizes, dtypes, extents)", function()
    local core, ctx = context.core, context.get()
    fails("cannot hold a 64x32, b 32x64 and c 64x64 of bf16", core.blas_matmul, ctx, "bf16", 64, 64, 32, a.buf, b.buf, c.buf)
    fails("dtype must be bf16 or f16, not f32", core.blas_matmul, ctx, "f32", 64, 16, 32, a.buf, b.buf, c.buf)
    fails("m, n and k must be at least 1", core.blas_matmul, ctx, "bf16", 0, 16, 32, a.buf, b.buf, c.buf)
  end)
end)

describe("tools/bench.lua", function()
  it("needs a GPU, says so and fails", function()
    local out, code = run("--interpret tools/bench.lua 128x128x64")
    assert.are.equal(1, code)
    assert.matches("bench: tools/bench.lua needs a GPU", out)
  end)

  it("rejects unknown arguments and dtypes", function()
    local out, code = run("--interpret tools/bench.lua 128x128")
    assert.are.equal(2, code)
    assert.matches("'128x128' is neither a shape MxNxK nor key=value", out)
    out, code = run("--interpret tools/bench.lua dtype=f32")
    assert.are.equal(2, code)
    assert.matches("dtype must be bf16, f16, f8e4m3 or f8e5m2, got 'f32'", out)
    out, code = run("--interpret tools/bench.lua dtype=f8e5m2 b_dtype=bf16")
    assert.are.equal(2, code)
    assert.matches("bench: b_dtype may differ from dtype only between f8e4m3 and f8e5m2", out)
    out, code = run("--interpret tools/bench.lua also=b_dtype=f8e4m3")   -- (the variants share the inputs)
    assert.are.equal(2, code)
    assert.matches("unknown option 'b_dtype'", out)
    out, code = run("--interpret tools/bench.lua also=depth")
    assert.are.equal(2, code)
    assert.matches("also= takes key=value pairs separated by commas, got 'depth'", out)
    out, code = run("--interpret tools/bench.lua also=colour=blue")
    assert.are.equal(2, code)
    assert.matches("unknown option 'colour'", out)
    out, code = run("--interpret tools/bench.lua colour=blue")
    assert.are.equal(2, code)
    assert.matches("unknown option 'colour'", out)
  end)

  -- tools/bench.lua's lines, its cuBLAS calls and the arrays they took, with a host matmul standing in
  -- for cuBLAS (FP8: B as N x K and the scales) and the interpreter for the GPU
  local function bench_with_stand_in(...)
    local H = mgpu.host
    local real_device, real_blas, real_print, real_exit = mgpu.device, bench.cublas_matmul, _G.print, os.exit
    local info = {}
    for k, v in pairs(mgpu.device()) do info[k] = v end
    info.mode, info.l2_bytes = "gpu", 40000               -- 3 sets of 128x64 and 64x128 bf16 exceed 2 x L2
    local r = { calls = 0, seen = {}, lines = {} }
    mgpu.device = function() return info end
    bench.cublas_matmul = function(x, y, out, sa, sb)
      r.calls = r.calls + 1
      r.seen[x] = true
      local ref = sa and H.matmul(H.from(x), H.from(y):transpose()) * H.from(sa) * H.from(sb) or H.matmul(H.from(x), H.from(y))
      local dev = ref:to_device(out.dtype)
      context.core.buffer_copy(out.buf, 0, dev.buf, 0, out.nbytes)
      return out
    end
    _G.print = function(s) r.lines[#r.lines + 1] = s end   -- the tool prints through the global
    os.exit = function(code) error("os.exit(" .. tostring(code) .. ")", 0) end
    local args = { ... }
    local ok, err = pcall(function() assert(loadfile("tools/bench.lua"))(unpack(args)) end)
    mgpu.device, bench.cublas_matmul, _G.print, os.exit = real_device, real_blas, real_print, real_exit
    r.text = table.concat(r.lines, "\n")
    assert(ok, tostring(err) .. "\n" .. r.text)
    return r
  end
  local function fields_of(line)
    local f = {}
    for x in line:gmatch("%S+") do f[#f + 1] = x end
    return f
  end

  it("rotates inputs, checks against cuBLAS and reports (a host matmul stands in for cuBLAS)", function()
    local r = bench_with_stand_in("128x128x64", "dtype=bf16", "reps=2", "inner=2", "warmup=1", "depth=2", "sched=dynamic",
                                  "also=sched=static,snake=4")
    local text = r.text
    assert.matches("median of 2 batches of 2 calls after 1 warm%-up calls", text)
    local row = text:match("\n(128x128x64 [^\n]*)")
    assert(row, text)
    local fields = fields_of(row)
    assert.are.equal("bf16", fields[2])
    assert.is_true(tonumber(fields[3]) > 0 and tonumber(fields[5]) > 0)
    assert.is_true(tonumber(fields[8]) < 1e-2, row)   -- rel. error against the stand-in
    assert.are.equal("3", fields[9])                 -- input sets
    local also = text:match("\n(%+ sched=static,snake=4 [^\n]*)")   -- the extra configuration, timed in the same rotation
    assert(also, text)
    local af = fields_of(also)
    assert.is_true(tonumber(af[3]) > 0, also)        -- its ms, TFLOP/s, ratio and rel. error
    assert.is_true(tonumber(af[6]) < 1e-2, also)
    local n = 0
    for _ in pairs(r.seen) do n = n + 1 end
    assert.are.equal(1 + 1 + 2 * 2, r.calls)         -- the check, the warm-up, 2 batches of 2
    assert.are.equal(3, n)                           -- every input set was used
  end)

  it("benchmarks FP8 against cuBLAS's FP8 matmul with the same scales, B as N x K", function()
    local r = bench_with_stand_in("128x128x128", "dtype=f8e4m3", "b_dtype=f8e5m2", "reps=1", "inner=1", "warmup=1")
    assert.matches("f8e4m3xe5m2 %(bf16 out, per%-tensor scales, fast accumulation%)", r.text)
    local row = r.text:match("\n(128x128x128 [^\n]*)")
    assert(row, r.text)
    local fields = fields_of(row)
    assert.are.equal("f8e4m3xe5m2", fields[2])
    assert.is_true(tonumber(fields[8]) < 1e-2, row)   -- against the stand-in's scaled product
    assert.are.equal("3", fields[9])                 -- 3 sets of 128x128 + 128x128 bytes exceed 2 x L2
    assert.are.equal(1 + 1 + 1, r.calls)
    -- e5m2 x e5m2, which cublasLt lacks: checked against float64, timed without a ratio
    r = bench_with_stand_in("128x128x128", "dtype=f8e5m2", "reps=1", "inner=1", "warmup=1")
    assert.are.equal(0, r.calls)
    fields = fields_of(assert(r.text:match("\n(128x128x128 [^\n]*)"), r.text))
    assert.are.same({ "f8e5m2", "-", "-", "-" }, { fields[2], fields[5], fields[6], fields[7] })
    assert.is_true(tonumber(fields[8]) < 1e-2, r.text)
    assert.matches("no cuBLAS: cublasLt has no f8e5m2 x f8e5m2 matmul; rel.err against float64 on rows 0%-7", r.text)
  end)
end)
