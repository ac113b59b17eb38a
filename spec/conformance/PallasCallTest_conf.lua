-- JAX's PallasCallTest (tests/pallas/mosaic_gpu_test.py) ported to mgpu:
-- every Hopper test of the class under its JAX name, under the class's Lane
-- lowering semantics. See spec/conformance/README.md for the revision read,
-- the parameter subsets and the tests that do not apply.
local C = dofile("spec/conformance/support/conf.lua")
local mgpu, T, L = C.mgpu, C.T, C.L
local cls = C.class("PallasCallTest", function(name, ...) return _ENV[name](...) end)
local test, diverge = cls.test, cls.diverge
local ds, all = mgpu.ds, mgpu.all

-- PallasTest.default_transforms: tiles of (8, swizzle elements) and the swizzle.
local function default_transforms(dtype, swizzle)
  swizzle = swizzle or 128
  local bits = ({ f32 = 32, i32 = 32, u32 = 32, f16 = 16, bf16 = 16, i16 = 16, u16 = 16, i8 = 8, u8 = 8 })[dtype]
  return { T.tiling{ 8, 8 * swizzle / bits }, T.swizzle(swizzle) }
end

-- Random integers in [lo, hi) stored in `dtype` (exact in any dtype that holds them).
local function ints(shape, dtype, lo, hi)
  return C.uniform(shape, "i32", lo, hi):copy(dtype)
end

-- v wrapped to the range of a 32-bit integer dtype.
local function wrap32(v, dtype)
  v = v % 4294967296
  if dtype == "i32" and v >= 2147483648 then v = v - 4294967296 end
  return v
end

describe("PallasCallTest", function()
  diverge("test_multiple_of", "new-multiple_of", "mgpu has no multiple_of (pl.multiple_of)", "multiple_of", function()
    local k = cls.kernel{
      out_shape = mgpu.shape({ 64, 64 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 64, 64 }, "f32", { transforms = default_transforms("f32") }), mgpu.Barrier{} },
      body = function(x, index, o, smem, bar)
        local i = mgpu.multiple_of(index:at(0):load(), 8)
        mgpu.copy_gmem_to_smem(x:at(ds(i, 64), all), smem, bar)
        mgpu.barrier_wait(bar)
        o:store(smem:load())
      end }
    local x = C.normal({ 128, 64 })
    C.equal(k(x, mgpu.array({ 0 }, "i32")), C.flat(x), "x[:64]")
  end)

  test("test_jitted_function_containing_multiple_pallas_calls", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "f32"), body = function(x, o) o:store(x:load() + 1) end }
    local x0 = ints({ 256 }, "f32", -1000, 1000)
    local x = x0
    for _ = 1, 10 do x = k(x) end
    C.equal(x, C.map(x0, function(v) return v + 10 end))
  end)

  -- test_unary_op: op x approx_math; x = halves in [0, 256), as jnp.arange(256) and the ties of round.
  local function gelu(x) return 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ^ 3))) end
  local function clz32(v)
    v = v % 4294967296
    local n = 0
    while n < 32 and v < 2 ^ (31 - n) do n = n + 1 end
    return n
  end
  local unary = {
    { "neg", function(x) return -x end, function(x) return -x end },
    { "bitwise_not", function(x) return mgpu.bitwise_not(x) end, function(x) return -x - 1 end, "i32" },
    { "logistic", mgpu.logistic, function(x) return 1 / (1 + math.exp(-x)) end },
    { "exp", mgpu.exp, math.exp },
    { "x**2", function(x) return x ^ 2 end, function(x) return x * x end },
    { "x**5", function(x) return x ^ 5 end, function(x) return x ^ 5 end },
    { "rsqrt", mgpu.rsqrt, function(x) return 1 / math.sqrt(x) end },
    { "tanh", mgpu.tanh, math.tanh },
    { "log", mgpu.log, function(x) return x == 0 and -math.huge or math.log(x) end },
    { "gelu", function(x) return 0.5 * x * (1 + mgpu.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ^ 3))) end, gelu },
    { "abs", mgpu.abs, math.abs },
    { "round", mgpu.round_away, function(x) return x >= 0 and math.floor(x + 0.5) or -math.floor(-x + 0.5) end },
    { "clz", mgpu.clz, clz32, "i32" },
    { "round(TO_NEAREST_EVEN)", mgpu.round, function(x)
        local f = math.floor(x)
        if x - f > 0.5 or (x - f == 0.5 and f % 2 == 1) then f = f + 1 end
        return f
      end },
  }
  for _, u in ipairs(unary) do
    for _, approx in ipairs({ true, false }) do
      test(string.format("test_unary_op(op=%s, approx_math=%s)", u[1], tostring(approx)), function()
        local dtype = u[4] or "f32"
        local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, dtype), compiler_params = { approx_math = approx },
                                   body = function(x, o) o:store(u[2](x:load())) end }
        local x
        if dtype == "i32" then x = C.uniform({ 256 }, "i32", -2 ^ 31, 2 ^ 31)
        else x = mgpu.array(C.map(C.uniform({ 256 }, "i32", 0, 512), function(v) return v / 2 end), "f32") end
        local hx = C.flat(x)
        local got = k(x)
        if dtype == "i32" then C.equal(got, C.map(hx, u[3]))
        else C.close(got, C.round(C.map(hx, u[3]), "f32"), approx and 1e-5 or 3e-7) end
      end)
    end
  end

  for _, dtype in ipairs({ "f32", "i32", "u32" }) do
    test("test_sign(dtype=" .. dtype .. ")", function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, dtype), body = function(x, o) o:store(mgpu.sign(x:load())) end }
      local src = C.map(C.uniform({ 256 }, "i32", -128, 128), function(v) return wrap32(v, dtype == "f32" and "i32" or dtype) end)
      C.equal(k(mgpu.array(src, dtype)), C.map(src, function(v) return v > 0 and 1 or (v < 0 and -1 or 0) end))
    end)
  end

  -- test_binary_op: op x dtype (the shifts take integers only, as JAX skips them for f32).
  local function tdiv(a, b) local q = a / b; return q >= 0 and math.floor(q) or -math.floor(-q) end
  local function signed(v) v = v % 4294967296; return v >= 2147483648 and v - 4294967296 or v end
  local binary = {
    { "add", function(x, y) return x + y end, function(x, y) return x + y end },
    { "x+1", function(x) return x + 1 end, function(x) return x + 1 end },
    { "sub", function(x, y) return x - y end, function(x, y) return x - y end },
    { "mul", function(x, y) return x * y end, function(x, y) return x * y end },
    { "div", mgpu.div, function(x, y, dt) return dt == "f32" and x / y or tdiv(x, y) end },
    { "minimum", mgpu.minimum, function(x, y) return math.min(x, y) end },
    { "maximum", mgpu.maximum, function(x, y) return math.max(x, y) end },
    { "shift_left", mgpu.shift_left, function(x, y) return x * 2 ^ y end, true },
    { "shift_right_logical", mgpu.shift_right_logical, function(x, y) return math.floor((x % 2 ^ 32) / 2 ^ y) end, true },
    { "shift_right_arithmetic", mgpu.shift_right_arithmetic, function(x, y) return math.floor(signed(x) / 2 ^ y) end, true },
  }
  for _, b in ipairs(binary) do
    for _, dtype in ipairs({ "f32", "i32", "u32" }) do
      if not (b[4] and dtype == "f32") then
        test(string.format("test_binary_op(op=%s, dtype=%s)", b[1], dtype), function()
          local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, dtype),
                                     body = function(x, y, o) o:store(b[2](x:load(), y:load())) end }
          local x, y
          if b[4] then
            x = dtype == "i32" and C.uniform({ 256 }, "i32", -2 ^ 31, 2 ^ 31) or C.uniform({ 256 }, "u32", 0, 2 ^ 32)
            y = C.uniform({ 256 }, dtype, 0, 32)
          elseif dtype == "f32" then
            x, y = C.uniform({ 256 }, "f32", -21, 21), C.uniform({ 256 }, "f32", -21, 21)
          else
            local lo = dtype == "u32" and 0 or -21
            x = C.uniform({ 256 }, dtype, lo, lo + 42)
            y = C.map(C.uniform({ 256 }, dtype, lo, lo + 42), function(v) return v == 0 and 1 or v end)
            y = mgpu.array(y, dtype)
          end
          local hx, hy = C.flat(x), C.flat(y)
          local want = C.map(hx, function(v, i) return b[3](v, hy[i], dtype) end)
          if dtype == "f32" then want = C.round(want, "f32") else want = C.map(want, function(v) return wrap32(v, dtype) end) end
          C.equal(k(x, y), want)
        end)
      end
    end
  end

  test("test_lax_div_int_rounding", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), body = function(x, y, o) o:store(mgpu.div(x:load(), y:load())) end }
    local x = C.uniform({ 256 }, "i32", -100, 100)
    local sign = C.flat(C.uniform({ 256 }, "i32", 0, 2))
    local y = mgpu.array(C.map(C.uniform({ 256 }, "i32", 1, 10), function(v, i) return sign[i] == 0 and -v or v end), "i32")
    local hy = C.flat(y)
    C.equal(k(x, y), C.map(x, function(v, i) return tdiv(v, hy[i]) end))
  end)

  local comparisons = { { "eq", mgpu.eq, function(a, b) return a == b end }, { "ne", mgpu.ne, function(a, b) return a ~= b end },
                        { "lt", mgpu.lt, function(a, b) return a < b end }, { "le", mgpu.le, function(a, b) return a <= b end },
                        { "gt", mgpu.gt, function(a, b) return a > b end }, { "ge", mgpu.ge, function(a, b) return a >= b end } }
  for _, c in ipairs(comparisons) do
    for _, dtype in ipairs({ "f32", "i32", "u32" }) do
      test(string.format("test_comparison_op(op=%s, dtype=%s)", c[1], dtype), function()
        local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, dtype), body = function(o)
          o:store(c[2](mgpu.const(42, dtype), mgpu.const(24, dtype)):astype(dtype):broadcast_to({ 256 }))
        end }
        local v = c[3](42, 24) and 1 or 0
        C.equal(k(), C.map(mgpu.zeros({ 256 }, "f32"), function() return v end))
      end)
    end
  end

  -- test_scalar_reduce: the whole array reduced to a scalar output.
  local reducers = { { "sum", "sum", function(a, b) return a + b end }, { "max", "max", math.max }, { "min", "min", math.min } }
  for _, r in ipairs(reducers) do
    for _, shape in ipairs({ { 128 }, { 128, 64 } }) do
      for _, dtype in ipairs({ "f32", "i32", "u32" }) do
        local sname = "(" .. table.concat(shape, ", ") .. (#shape == 1 and ",)" or ")")
        test(string.format("test_scalar_reduce(op=%s, shape=%s, dtype=%s)", r[1], sname, dtype), function()
          local k = cls.kernel{ out_shape = mgpu.shape({}, dtype), body = function(x, o)
            local v = x:load()
            o:store(v[r[2]](v))
          end }
          local lo = dtype == "u32" and 0 or -100
          local x = ints(shape, dtype, lo, lo + 200)
          local want
          for _, v in ipairs(C.flat(x)) do want = want and r[3](want, v) or v end
          C.equal(k(x), { want })
        end)
      end
    end
  end

  test("test_reshape", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 2, 16, 4 }, "f32"), body = function(x, o)
      assert(#x.shape == 1 and x.shape[1] == 128)
      local r = x:reshape({ 2, 16, 4 })
      assert(r.shape[1] == 2 and r.shape[2] == 16 and r.shape[3] == 4)
      o:store(r:load())
    end }
    local x = C.normal({ 128 })
    C.equal(k(x), C.flat(x))
  end)

  diverge("test_reshape_tiled", "new-reshape-tiled", "only strided arrays reshape", "only arrays in the strided layout", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2, 3, 64, 8 }, "f32"), body = function(x, o)
      o:store(x:load{ layout = L.WGMMA }:reshape({ 2, 3, 64, 8 }))
    end }
    local x = C.normal({ 6 * 64, 8 })
    C.equal(k(x), C.flat(x))
  end)

  diverge("test_reshape_tiled_into_tiled", "new-reshape-tiled", "only strided arrays reshape", "only arrays in the strided layout", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2, 3, 64, 8 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 2, 3, 64, 8 }, "f32", { transforms = { T.tiling{ 8, 8 }, T.swizzle(32) } }) },
      body = function(x, o, s)
        s:store(x:load{ layout = L.WGMMA }:reshape({ 2, 3, 64, 8 }))
        o:store(s:load())
      end }
    local x = C.normal({ 6 * 64, 8 })
    C.equal(k(x), C.flat(x))
  end)

  diverge("test_reshape_tiled_with_indexing", "new-ref-reshape-tiled", "ref reshape across a (8, 1, 64) tiling",
          "only the first tiled dim may be merged or split", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 64, 128 }, "f16"),
      scratch_shapes = { mgpu.SMEM({ 2, 64, 2, 64 }, "f16", { transforms = { T.tiling{ 8, 1, 64 }, T.swizzle(128) } }), mgpu.Barrier{} },
      body = function(src, dst, s, bar)
        mgpu.copy_gmem_to_smem(src, s, bar)
        mgpu.barrier_wait(bar)
        dst:store(s:at(1):reshape({ 64, 128 }):load())
      end }
    local x = C.normal({ 2, 64, 2, 64 }, "f16")
    local hx = C.flat(x)
    C.equal(k(x), { table.unpack(hx, 64 * 128 + 1, 2 * 64 * 128) })
  end)

  diverge("test_reshape_splat", "new-rank0-arrays", "scalars are not 0-d arrays: no reshape", "only arrays can be reshaped", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 1, 1, 1 }, "f32"), body = function(o)
      o:store(mgpu.const(42, "f32"):reshape({ 1, 1, 1 }))
    end }
    C.equal(k(), { 42 })
  end)

  diverge("test_slice_untiled_dim", "new-array-indexing", "register arrays cannot be indexed (x[1, 1])", "", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 64, 8 }, "f32"), body = function(x, o)
      o:store(x:load{ layout = L.WGMMA }:at(1, 1))
    end }
    local x = C.normal({ 2, 3, 64, 8 })
    C.equal(k(x), { table.unpack(C.flat(x), (3 + 1) * 512 + 1, (3 + 2) * 512) })
  end)

  for _, case in ipairs({ { "axis0", 0, { 128, 64 } }, { "axis1", 1, { 64, 128 } } }) do
    diverge("test_concatenate_" .. case[1], "new-concatenate", "mgpu has no concatenate (lax.concatenate)", "concatenate", function()
      local k = cls.kernel{ out_shape = mgpu.shape(case[2] == 0 and { 192, 64 } or { 64, 192 }, "f32"), body = function(a, b, o)
        o:store(mgpu.concatenate({ a:load{ layout = L.WGMMA }, b:load{ layout = L.WGMMA } }, case[2]))
      end }
      k(C.normal({ 64, 64 }), C.normal(case[3]))
    end)
  end

  diverge("test_squeeze_to_scalar", "new-rank0-arrays", "no reshape to a 0-d array", "shape must have rank 1 to 8", function()
    local k = cls.kernel{ out_shape = mgpu.shape({}, "f32"), body = function(o)
      o:store(mgpu.broadcast(42, { 1, 1, 1 }, "f32"):reshape({}))
    end }
    C.equal(k(), { 42 })
  end)

  test("test_add_one_grid_with_scratch", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "f32"), grid = 2,
      in_specs = { mgpu.BlockSpec{ { 128 }, function(i) return i end } },
      out_specs = mgpu.BlockSpec{ { 128 }, function(i) return i end },
      scratch_shapes = { mgpu.SMEM({ 128 }, "f32") },
      body = function(x, o, s)
        s:store(x:load() + 1)
        o:store(s:load())
      end }
    local x = ints({ 256 }, "f32", -1000, 1000)
    C.equal(k(x), C.map(x, function(v) return v + 1 end))
  end)

  local function add_one_pipelined(semantics, mcs)
    return cls.pallas_call{ out_shape = mgpu.shape({ 256, 64 }, "f32"), grid = { 2, 4 },
      in_specs = { mgpu.BlockSpec{ { 128, 16 }, function(i, j) return i, j end } },
      out_specs = mgpu.BlockSpec{ { 128, 16 }, function(i, j) return i, j end },
      compiler_params = { dimension_semantics = semantics, max_concurrent_steps = mcs },
      body = function(x, o) o:store(x:load() + 1.0) end }
  end
  for _, mcs in ipairs({ 1, 2, 3, 4, 16 }) do
    test("test_add_one_grid_pipelined(max_concurrent_steps=" .. mcs .. ")", function()
      local x = ints({ 256, 64 }, "f32", -1000, 1000)
      C.equal(add_one_pipelined({ "parallel", "sequential" }, mcs)(x), C.map(x, function(v) return v + 1 end))
    end)
  end

  test("test_add_one_grid_pipelined_with_leading_sequential_dimension", function()
    local x = ints({ 256, 64 }, "f32", -1000, 1000)
    C.equal(add_one_pipelined({ "sequential", "parallel" })(x), C.map(x, function(v) return v + 1 end))
  end)

  test("test_add_one_grid_pipelined_program_id", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 16, 64 }, "i32"), grid = { 4, 4 },
      out_specs = mgpu.BlockSpec{ { 16, 16 }, function(i, j) return i, j end },
      compiler_params = { dimension_semantics = { "parallel", "sequential" }, max_concurrent_steps = 2 },
      body = function(o) o:store(mgpu.program_id(1):broadcast_to({ 16, 16 })) end }
    local want = {}
    for r = 0, 15 do for c = 0, 63 do want[r * 64 + c + 1] = math.floor(c / 16) end end
    C.equal(k(), want)
  end)

  test("test_add_one_grid_pipelined_sequential_invariant_output", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 64 }, "f32"), grid = { 2, 4 },
      in_specs = { mgpu.BlockSpec{ { 32, 16 }, function(i, j) return i, j end } },
      out_specs = mgpu.BlockSpec{ { 32, 16 }, function(i, j) return i, 0 end },
      compiler_params = { dimension_semantics = { "parallel", "sequential" }, max_concurrent_steps = 2 },
      body = function(x, o) o:store(x:load() + 1.0) end }
    local x = ints({ 64, 64 }, "f32", -1000, 1000)
    local hx, got = C.flat(x), C.flat(k(x))
    local g, want = {}, {}
    for r = 0, 63 do
      for c = 0, 15 do
        g[#g + 1] = got[r * 64 + c + 1]
        want[#want + 1] = hx[r * 64 + 48 + c + 1] + 1     -- the last step's block is the one written
      end
    end
    C.equal(g, want, "out[:, :16]")
  end)

  for _, dtype in ipairs({ "f32", "i32", "u32" }) do
    test("test_iota(dtype=" .. dtype .. ")", function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 128, 128 }, dtype), body = function(o)
        o:store(mgpu.broadcasted_iota(dtype, { 128, 128 }, 1, { layout = L.WGMMA }))
      end }
      local want = {}
      for r = 0, 127 do for c = 0, 127 do want[r * 128 + c + 1] = c end end
      C.equal(k(), want)
    end)
  end

  diverge("test_sync_copy", "new-SMEM_GMEM_COPY", "Layout.SMEM_GMEM_COPY is not provided", "SMEM_GMEM_COPY", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 128, 128 }, "f32", { transforms = default_transforms("f32") }) },
      body = function(x, y, s)
        local layout = L.SMEM_GMEM_COPY
        s:store(x:load{ layout = layout })
        y:store(mgpu.layout_cast(s:load(), layout))
      end }
    local x = C.normal({ 128, 128 })
    C.equal(k(x), C.flat(x))
  end)

  -- Indexers as Lua view arguments: Ellipsis, slice(128), slice(None, 128).
  local halves = { { "...", {} }, { "slice(128)", { ds(0, 128) } }, { "slice(None, 128)", { ds(0, 128) } } }
  local function sub(t, idx)     -- the elements of a 256-vector an indexer selects
    if #idx == 0 then return t end
    return { table.unpack(t, 1, 128) }
  end
  for _, h in ipairs(halves) do
    test("test_copy_smem_to_gmem(indexer=" .. h[1] .. ")", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), scratch_shapes = { mgpu.SMEM({ 256 }, "f32") },
        body = function(x, o, s)
          s:store(x:load() + 1)
          mgpu.commit_smem()
          mgpu.copy_smem_to_gmem(s:at(table.unpack(h[2])), o:at(table.unpack(h[2])))
          mgpu.wait_smem_to_gmem(0)
        end }
      local x = ints({ 256 }, "f32", -1000, 1000)
      C.equal(sub(C.flat(k(x)), h[2]), sub(C.map(x, function(v) return v + 1 end), h[2]))
    end)
  end

  for _, p in ipairs({ true, false }) do
    test("test_copy_smem_to_gmem_predicate(predicate=" .. tostring(p) .. ")", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), scratch_shapes = { mgpu.SMEM({ 256 }, "f32") },
        body = function(o, s)
          o:store(mgpu.broadcast(0, { 256 }, "f32"))
          s:store(mgpu.broadcast(1, { 256 }, "f32"))
          mgpu.commit_smem()
          mgpu.copy_smem_to_gmem(s, o, { predicate = p })
          mgpu.wait_smem_to_gmem(0)
        end }
      C.equal(k(), C.map(mgpu.zeros({ 256 }, "f32"), function() return p and 1 or 0 end))
    end)
  end

  for _, single in ipairs({ true, false }) do
    local name = "test_copy_smem_to_gmem_explicit_commit_group(use_single_warp=" .. tostring(single) .. ")"
    local run = single and function(f) diverge(name, "new-warp-copy-wait", "wait_smem_to_gmem refused in one warp",
                                                "wait_group cannot run inside single_warp", f) end
                       or function(f) test(name, f) end
    run(function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), scratch_shapes = { mgpu.SMEM({ 256 }, "f32") },
        body = function(x, o, s)
          s:store(x:load() + 1)
          mgpu.commit_smem()
          local function copy_to_gmem()
            mgpu.copy_smem_to_gmem(s, o, { commit_group = false })
            mgpu.commit_smem_to_gmem_group()
            mgpu.wait_smem_to_gmem(0)
          end
          if single then mgpu.single_warp(copy_to_gmem) else copy_to_gmem() end
        end }
      local x = ints({ 256 }, "f32", -1000, 1000)
      C.equal(k(x), C.map(x, function(v) return v + 1 end))
    end)
  end

  for _, dtype in ipairs({ "bf16", "f16", "f32" }) do
    test("test_copy_smem_to_gmem_reduction(dtype=" .. dtype .. ")", function()
      -- jax.new_ref's zeros are the output's initial value: call_into a zeroed array.
      local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, dtype), body = function(x, o)
        mgpu.run_scoped(function(s)
          mgpu.emit_pipeline(function(_, xs)
            s:store(xs:load())
            mgpu.commit_smem()
            mgpu.copy_smem_to_gmem(s, o, { reduction_op = "add" })
            mgpu.wait_smem_to_gmem(0)
          end, { grid = { 200 }, in_specs = { mgpu.BlockSpec{ { 128 }, function(i) return i end } } })(x)
        end, mgpu.SMEM({ 128 }, dtype))
      end }
      local x = ints({ 200 * 128 }, dtype, 0, 2)
      local hx, want = C.flat(x), {}
      for c = 1, 128 do
        want[c] = 0
        for r = 0, 199 do want[c] = want[c] + hx[r * 128 + c] end
      end
      C.equal(k:call_into(mgpu.zeros({ 128 }, dtype), x), want)
    end)
  end

  -- test_copy_gmem_to_smem_contiguous: shape and indexer x oob mode x dtype; JAX skips ZEROS
  -- where a dim exceeds 256. The PTX must take the plain bulk copy except under ZEROS.
  local contiguous = {
    { "(256,), (...)", { 256 }, {} },
    { "(64, 128), (...)", { 64, 128 }, {} },
    { "(64, 128), (2:3, 0:128)", { 64, 128 }, { ds(2, 1), ds(0, 128) } },
    { "(3, 64, 128), (...)", { 3, 64, 128 }, {} },
    { "(3, 64, 1, 128), (0, 0:32, 0, 0:128)", { 3, 64, 1, 128 }, { 0, ds(0, 32), 0, ds(0, 128) } },
    { "(3, 64, 1, 128), (...)", { 3, 64, 1, 128 }, {} },
    { "(5, 5, 512), (4, 4)", { 5, 5, 512 }, { 4, 4 } },
    { "(5, 1024), (4,)", { 5, 1024 }, { 4 } },
    { "(8192,), (...)", { 8192 }, {} },
    { "(8192,), (4096:8192,)", { 8192 }, { ds(4096, 4096) } },
  }
  -- The row-major offsets (1-based) of the elements an indexer selects.
  local function selected(shape, idx)
    local out, strides = {}, {}
    local st = 1
    for d = #shape, 1, -1 do strides[d] = st; st = st * shape[d] end
    local function rec(d, base)
      if d > #shape then out[#out + 1] = base + 1; return end
      local x = idx[d]
      local lo, n = 0, shape[d]
      if type(x) == "number" then lo, n = x, 1 elseif x then lo, n = x.start, x.size end
      for i = lo, lo + n - 1 do rec(d + 1, base + i * strides[d]) end
    end
    rec(1, 0)
    return out
  end
  local bulk_errors = { "a TMA box is at most 256 elements", "the load is not the plain bulk copy",
                        "the copy out is not cp.async.bulk.global.shared::cta.bulk_group" }
  for _, case in ipairs(contiguous) do
    for _, oob in ipairs({ "undefined", "promise_in_bounds", "zeros" }) do
      local big = false
      for _, n in ipairs(case[2]) do big = big or n > 256 end
      for _, dtype in ipairs({ "bf16", "f32" }) do
        if not (big and oob == "zeros") then
          -- mgpu stores with the TMA tensor copy (boxes of at most 256 elements) where Pallas takes the plain bulk copy
          diverge(string.format("test_copy_gmem_to_smem_contiguous(case=%s, oob_mode=%s, dtype=%s)", case[1], oob, dtype),
                  "new-bulk-copy", "contiguous copies do not take the plain bulk copy (cp.async.bulk)", bulk_errors, function()
            local idx = case[3]
            local k = cls.kernel{ out_shape = mgpu.shape(case[2], dtype),
              scratch_shapes = { mgpu.SMEM(case[2], dtype), mgpu.Barrier{} },
              body = function(x, o, s, bar)
                mgpu.copy_gmem_to_smem(x:at(table.unpack(idx)), s:at(table.unpack(idx)), bar, { oob = oob })
                mgpu.barrier_wait(bar)
                s:at(table.unpack(idx)):store(s:at(table.unpack(idx)):load() + 1)
                mgpu.commit_smem()
                mgpu.copy_smem_to_gmem(s:at(table.unpack(idx)), o:at(table.unpack(idx)))
                mgpu.wait_smem_to_gmem(0)
              end }
            local x = ints(case[2], dtype, -100, 100)
            local got, hx, sel = C.flat(k(x)), C.flat(x), selected(case[2], idx)
            local g, w = {}, {}
            for i, off in ipairs(sel) do g[i], w[i] = got[off], hx[off] + 1 end
            C.equal(g, w, "out[indexer]")
            local ptx = k:lower(x).ptx
            local load = ptx:match("cp%.async%.bulk[^\n]*%.global%.mbarrier::complete_tx::bytes")
            if oob == "zeros" then
              assert.matches("^cp%.async%.bulk%.tensor", load)
            elseif not load:find("^cp%.async%.bulk%.shared::%a+%.global") then
              error("the load is not the plain bulk copy: " .. load, 0)
            else
              if oob == "promise_in_bounds" then assert.is_nil(ptx:find("min%.[su]")) end   -- no clamping
            end
            if not ptx:find("cp.async.bulk.global.shared::cta.bulk_group", 1, true) then
              error("the copy out is not cp.async.bulk.global.shared::cta.bulk_group", 0)
            end
          end)
        end
      end
    end
  end

  for _, oob in ipairs({ "undefined", "promise_in_bounds" }) do
    diverge("test_copy_gmem_to_smem_clamped_arrivals(oob_mode=" .. oob .. ")", "new-bulk-copy",
            "contiguous copies do not take the plain bulk copy (cp.async.bulk)", bulk_errors, function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 8192 }, "f32"),
        scratch_shapes = { mgpu.SMEM({ 4096 }, "f32"), mgpu.Barrier{} },
        body = function(x, offset, o, s, bar)
          mgpu.copy_gmem_to_smem(x:at(ds(offset, 4096)), s, bar, { oob = oob })
          mgpu.barrier_wait(bar)
          mgpu.commit_smem()
          mgpu.copy_smem_to_gmem(s, o:at(ds(offset, 4096)))
          mgpu.wait_smem_to_gmem(0)
        end }
      local x = C.normal({ 8192 })
      local ptx = k:lower(x, 6000).ptx
      assert.matches("cp.async.bulk.shared::cta.global", ptx, 1, true)
      if oob == "undefined" then
        local got, hx = C.flat(k(x, 6000)), C.flat(x)
        C.equal({ table.unpack(got, 6001, 8192) }, { table.unpack(hx, 6001, 8192) }, "out[6000:]")
      else
        -- the offset breaks the promise: the interpreter says so instead of reading past the end
        assert.matches("promise", C.err_of(k, x, 6000))
      end
    end)
  end

  local gmem_indexers = {
    { "1d_none", { 256 }, { { ds(0, 128) }, { ds(0, 32) } }, 1, 32 },
    { "1d_offset", { 256 }, { { ds(32, 64) }, { ds(0, 32) } }, 33, 32 },
    { "2d_extract", { 64, 64 }, { { 4 }, { ds(0, 64) } }, 4 * 64 + 1, 64 },
  }
  for _, case in ipairs(gmem_indexers) do
    test("test_copy_smem_to_gmem_with_multiple_gmem_indexers_" .. case[1], function()
      local k = cls.kernel{ out_shape = mgpu.shape(case[2], "f32"), scratch_shapes = { mgpu.SMEM(case[2], "f32") },
        body = function(x, o, s)
          s:store(x:load() + 1)
          mgpu.commit_smem()
          for _, idx in ipairs(case[3]) do s, o = s:at(table.unpack(idx)), o:at(table.unpack(idx)) end
          mgpu.copy_smem_to_gmem(s, o)
          mgpu.wait_smem_to_gmem(0)
        end }
      local x = ints(case[2], "f32", -1000, 1000)
      local got, hx = C.flat(k(x)), C.flat(x)
      local g, w = {}, {}
      for i = case[4], case[4] + case[5] - 1 do g[#g + 1], w[#w + 1] = got[i], hx[i] + 1 end
      C.equal(g, w)
    end)
  end

  for _, h in ipairs(halves) do
    test("test_copy_gmem_to_smem(indexer=" .. h[1] .. ")", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), scratch_shapes = { mgpu.SMEM({ 256 }, "f32"), mgpu.Barrier{} },
        body = function(x, o, s, bar)
          mgpu.copy_gmem_to_smem(x:at(table.unpack(h[2])), s:at(table.unpack(h[2])), bar, { oob = "promise_in_bounds" })
          mgpu.barrier_wait(bar)
          o:store(s:load() + 1)
        end }
      local x = ints({ 256 }, "f32", -1000, 1000)
      C.equal(sub(C.flat(k(x)), h[2]), sub(C.map(x, function(v) return v + 1 end), h[2]))
    end)
  end

  test("test_copy_gmem_to_smem_dynamic_slice", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), scratch_shapes = { mgpu.SMEM({ 128 }, "f32"), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        mgpu.fori(0, 256 / 128, function(i)
          local sl = ds(i * 128, 128)
          mgpu.copy_gmem_to_smem(x:at(sl), s, bar, { oob = "promise_in_bounds" })
          mgpu.barrier_wait(bar)
          o:at(sl):store(s:load() + 1)
        end)
      end }
    local x = ints({ 256 }, "f32", -1000, 1000)
    C.equal(k(x), C.map(x, function(v) return v + 1 end))
  end)

  test("test_copy_gmem_to_smem_squeeze", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 4, 8, 32 }, "f32"), scratch_shapes = { mgpu.SMEM({ 8, 32 }, "f32"), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        mgpu.fori(0, 4, function(i)
          mgpu.copy_gmem_to_smem(x:at(i), s, bar, { oob = "promise_in_bounds" })
          mgpu.barrier_wait(bar)
          o:at(i):store(s:load() + 1)
        end)
      end }
    local x = ints({ 4, 8, 32 }, "f32", -1000, 1000)
    C.equal(k(x), C.map(x, function(v) return v + 1 end))
  end)

  -- Copies between refs of different shapes or dtypes are refused when traced, at the copy's line.
  local function copy_error(out, scratch, body)
    local k = cls.kernel{ out_shape = out, scratch_shapes = scratch, body = body }
    return C.err_of(k.lower, k)
  end
  test("test_copy_gmem_to_smem_raises_on_mismatched_shapes", function()
    local err = copy_error(mgpu.shape({ 128 }, "bf16"), { mgpu.SMEM({ 256 }, "bf16"), mgpu.Barrier{} }, function(o, s, bar)
      mgpu.copy_gmem_to_smem(o, s, bar)
      mgpu.barrier_wait(bar)
    end)
    assert.matches("PallasCallTest_conf.lua:%d+: copy_gmem_to_smem: shapes &gmem bf16%[128%] and &smem bf16%[256%] do not match", err)
  end)
  test("test_copy_smem_to_gmem_raises_on_mismatched_shapes", function()
    local err = copy_error(mgpu.shape({ 128 }, "bf16"), { mgpu.SMEM({ 256 }, "bf16") }, function(o, s)
      mgpu.copy_smem_to_gmem(s, o)
      mgpu.wait_smem_to_gmem(0)
    end)
    assert.matches("PallasCallTest_conf.lua:%d+: copy_smem_to_gmem: shapes &gmem bf16%[128%] and &smem bf16%[256%] do not match", err)
  end)
  test("test_copy_gmem_to_smem_raises_on_mismatched_dtypes", function()
    local err = copy_error(mgpu.shape({ 256 }, "bf16"), { mgpu.SMEM({ 256 }, "f32"), mgpu.Barrier{} }, function(o, s, bar)
      mgpu.copy_gmem_to_smem(o, s, bar)
      mgpu.barrier_wait(bar)
    end)
    assert.matches("PallasCallTest_conf.lua:%d+: copy_gmem_to_smem: dtypes bf16 and f32 do not match", err)
  end)
  test("test_copy_smem_to_gmem_raises_on_mismatched_dtypes", function()
    local err = copy_error(mgpu.shape({ 256 }, "bf16"), { mgpu.SMEM({ 256 }, "f32") }, function(o, s)
      mgpu.copy_smem_to_gmem(s, o)
      mgpu.wait_smem_to_gmem(0)
    end)
    assert.matches("PallasCallTest_conf.lua:%d+: copy_smem_to_gmem: dtypes bf16 and f32 do not match", err)
  end)

  diverge("test_copy_gmem_to_smem_predicate", "new-copy-predicate-barrier",
          "a copy whose predicate is false does not arrive on its barrier", "deadlock", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), grid = { 2 }, grid_names = { "block" },
      scratch_shapes = { mgpu.SMEM({ 256 }, "f32"), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        s:store(mgpu.broadcast(0, { 256 }, "f32"))
        local b = mgpu.axis_index("block")
        local idx = ds(b * 128, 128)
        mgpu.copy_gmem_to_smem(x:at(idx), s:at(idx), bar, { predicate = mgpu.eq(b, 0) })
        mgpu.barrier_wait(bar)
        mgpu.commit_smem()
        mgpu.copy_smem_to_gmem(s:at(idx), o:at(idx))
        mgpu.wait_smem_to_gmem(0)
      end }
    local x = ints({ 256 }, "f32", -1000, 1000)
    C.equal(k(x), C.map(x, function(v, i) return i <= 128 and v or 0 end))
  end)

  diverge("test_collective_copy_gmem_to_smem", 9, "1-D collective copy_gmem_to_smem", "does not divide among the 2 blocks", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2, 128 }, "f32"), cluster = { 2 }, cluster_names = { "cluster" },
      scratch_shapes = { smem = mgpu.SMEM({ 128 }, "f32"), bar = mgpu.Barrier{} },
      body = function(x, y, s)
        mgpu.copy_gmem_to_smem(x, s.smem, s.bar, { collective_axes = "cluster" })
        mgpu.barrier_wait(s.bar)
        mgpu.copy_smem_to_gmem(s.smem, y:at(mgpu.axis_index("cluster")))
        mgpu.wait_smem_to_gmem(0)
      end }
    local x = C.normal({ 128 })
    C.equal(k(x), C.concat(C.flat(x), C.flat(x)))
  end)

  test("test_kernel_scratch_kwargs(vmap=False)", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"),
      scratch_shapes = { smem_ref = mgpu.SMEM({ 128 }, "f32"), barrier_ref = mgpu.Barrier{} },
      body = function(x, y, s)
        mgpu.copy_gmem_to_smem(x, s.smem_ref, s.barrier_ref)
        mgpu.barrier_wait(s.barrier_ref)
        mgpu.copy_smem_to_gmem(s.smem_ref, y)
        mgpu.wait_smem_to_gmem(0)
      end }
    local x = C.normal({ 128 })
    C.equal(k(x), C.flat(x))
  end)

  for _, h in ipairs(halves) do
    diverge("test_async_prefetch(indexer=" .. h[1] .. ")", "new-async_prefetch", "mgpu has no async_prefetch", "async_prefetch", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), scratch_shapes = { mgpu.SMEM({ 256 }, "f32"), mgpu.Barrier{} },
        body = function(x, o, s, bar)
          mgpu.async_prefetch(x:at(table.unpack(h[2])))
          mgpu.copy_gmem_to_smem(x:at(table.unpack(h[2])), s:at(table.unpack(h[2])), bar)
          mgpu.barrier_wait(bar)
          o:store(s:load() + 1)
        end }
      k(C.normal({ 256 }))
    end)
  end

  test("test_barrier_repeated_indexing", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128 }, "f32"), scratch_shapes = { mgpu.Barrier{ num_barriers = 4 } },
      body = function(o, bars)
        mgpu.barrier_arrive(bars:at(ds(2, 2)):at(ds(1, 1)))
        mgpu.barrier_wait(bars:at(3))
        o:store(mgpu.broadcast(1, { 128 }, "f32"))
      end }
    C.equal(k(), C.map(mgpu.zeros({ 128 }, "f32"), function() return 1 end))
  end)

  for _, single in ipairs({ true, false }) do
    diverge("test_barrier_test(use_single_warp=" .. tostring(single) .. ")", "new-barrier_test", "mgpu has no barrier_test",
            "barrier_test", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 5 }, "i32"), scratch_shapes = { mgpu.Barrier{ num_barriers = 2 } },
        body = function(o, bars)
          local function t(i, b) o:at(i):store(mgpu.barrier_test(bars:at(b)):astype("i32")) end
          t(0, 0); t(1, 1)
          mgpu.barrier_arrive(bars:at(0))
          t(2, 0); t(3, 1)
          mgpu.barrier_arrive(bars:at(1))
          t(4, 1)
        end }
      C.equal(k(), { 0, 0, 1, 0, 1 })
    end)
  end

  local smem_indexers = {
    { "1d_none", { 256 }, function() return { { ds(0, 128) }, { ds(0, 32) } } end, 1, 32 },
    { "1d_offset", { 256 }, function() return { { ds(32, 64) }, { ds(0, 32) } } end, 33, 32 },
    { "2d_extract_static", { 64, 64 }, function() return { { 4 }, { ds(0, 64) } } end, 4 * 64 + 1, 64 },
    { "2d_extract_dyn", { 64, 64 }, function() return { { mgpu.axis_index("x") + 4 }, { ds(0, 64) } } end, 4 * 64 + 1, 64 },
  }
  for _, case in ipairs(smem_indexers) do
    test("test_copy_gmem_to_smem_with_multiple_gmem_indexers_" .. case[1], function()
      local k = cls.kernel{ out_shape = mgpu.shape(case[2], "f32"), grid = { 1 }, grid_names = { "x" },
        scratch_shapes = { mgpu.SMEM(case[2], "f32"), mgpu.Barrier{} },
        body = function(x, o, s, bar)
          local sl = s
          for _, idx in ipairs(case[3]()) do sl, x = sl:at(table.unpack(idx)), x:at(table.unpack(idx)) end
          mgpu.copy_gmem_to_smem(x, sl, bar)
          mgpu.barrier_wait(bar)
          o:store(s:load() + 1)
        end }
      local x = ints(case[2], "f32", -1000, 1000)
      local got, hx = C.flat(k(x)), C.flat(x)
      local g, w = {}, {}
      for i = case[4], case[4] + case[5] - 1 do g[#g + 1], w[#w + 1] = got[i], hx[i] + 1 end
      C.equal(g, w)
    end)
  end

  test("test_gmem_to_smem_with_multiple_smem_indexers", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 64 }, "f32"),
      in_specs = { mgpu.BlockSpec{ memory_space = mgpu.GMEM } },
      scratch_shapes = { mgpu.SMEM({ 2, 64, 64 }, "f32"), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        mgpu.copy_gmem_to_smem(x, s, bar)
        mgpu.barrier_wait(bar)
        local x0 = s:at(0, all, all)
        o:at(ds(0, 32), all):store(x0:at(ds(0, 32), all):load())
        o:at(ds(32, 32), all):store(x0:at(ds(32, 32), all):load())
      end }
    local x = C.uniform({ 2, 64, 64 })
    C.equal(k(x), { table.unpack(C.flat(x), 1, 4096) })
  end)

  test("test_gmem_to_smem_with_multiple_smem_indexers_and_transforms", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256, 128 }, "i32"), grid = { 4, 4 },
      in_specs = { mgpu.BlockSpec{ { 128, 128 }, function(i, j) return i, j end, memory_space = mgpu.SMEM,
                                   transforms = default_transforms("i32") } },
      out_specs = mgpu.BlockSpec{ { 64, 32 }, function(i, j) return i, j end, memory_space = mgpu.SMEM },
      body = function(x, o) o:store(x:at(ds(0, 64), ds(32, 64)):at(all, ds(0, 32)):load()) end }
    local x = C.uniform({ 512, 512 }, "i32", -2 ^ 31, 2 ^ 31)
    local hx, want = C.flat(x), {}
    for bi = 0, 3 do
      for r = 0, 63 do
        for bj = 0, 3 do
          for c = 0, 31 do want[#want + 1] = hx[(bi * 128 + r) * 512 + bj * 128 + 32 + c + 1] end
        end
      end
    end
    C.equal(k(x), want)
  end)

  for _, case in ipairs({ { "0", 0, 4 }, { "1", 1, 4 }, { "2", 2, 4 }, { "3", 3, 4 } }) do
    test("test_copy_gmem_to_smem_with_indexed_barrier(indexer=" .. case[1] .. ", num_barriers=4)", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"),
        scratch_shapes = { mgpu.SMEM({ 128 }, "f32"), mgpu.Barrier{ num_barriers = case[3] } },
        body = function(x, o, s, bars)
          mgpu.copy_gmem_to_smem(x, s, bars:at(case[2]))
          mgpu.barrier_wait(bars:at(case[2]))
          o:store(s:load() + 1)
        end }
      local x = ints({ 128 }, "f32", -1000, 1000)
      C.equal(k(x), C.map(x, function(v) return v + 1 end))
    end)
  end
  for _, i in ipairs({ 0, 1 }) do
    diverge(string.format("test_copy_gmem_to_smem_with_indexed_barrier(indexer=(%d, %d), num_barriers=(2, 2))", i, i),
            "new-barrier-shape", "Barrier num_barriers takes a count, not a shape", "num_barriers", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"),
        scratch_shapes = { mgpu.SMEM({ 128 }, "f32"), mgpu.Barrier{ num_barriers = { 2, 2 } } },
        body = function(x, o, s, bars)
          mgpu.copy_gmem_to_smem(x, s, bars:at(i, i))
          mgpu.barrier_wait(bars:at(i, i))
          o:store(s:load() + 1)
        end }
      local x = ints({ 128 }, "f32", -1000, 1000)
      C.equal(k(x), C.map(x, function(v) return v + 1 end))
    end)
  end

  for _, case in ipairs({ { "_g2s", true }, { "_s2g", false } }) do
    test("test_copy_with_transforms" .. case[1], function()
      local to_smem = case[2]
      local gspec = mgpu.BlockSpec{ memory_space = mgpu.GMEM }
      local sspec = mgpu.BlockSpec{ memory_space = mgpu.SMEM, transforms = default_transforms("f32") }
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 128, 128 }, "f32"),
        in_specs = { to_smem and gspec or sspec }, out_specs = to_smem and sspec or gspec,
        scratch_shapes = { mgpu.Barrier{} },
        body = function(x, o, bar)
          if to_smem then
            mgpu.copy_gmem_to_smem(x, o, bar)
            mgpu.barrier_wait(bar)
          else
            mgpu.commit_smem()
            mgpu.copy_smem_to_gmem(x, o)
            mgpu.wait_smem_to_gmem(0)
          end
        end }
      local x = C.normal({ 128, 128 })
      C.equal(k(x), C.flat(x))
    end)
  end

  for _, swizzle in ipairs({ 32, 64, 128 }) do
    test("test_copy_with_sole_swizzle_lowers_correctly(swizzle=" .. swizzle .. ")", function()
      local shape = { 128, 8 * swizzle / 32 }
      local k = cls.kernel{ out_shape = mgpu.shape(shape, "f32"),
        scratch_shapes = { mgpu.SMEM(shape, "f32", { transforms = { T.swizzle(swizzle) } }), mgpu.Barrier{} },
        body = function(x, o, s, bar)
          mgpu.copy_gmem_to_smem(x, s, bar)
          mgpu.barrier_wait(bar)
          mgpu.copy_smem_to_gmem(s, o)
          mgpu.wait_smem_to_gmem(0)
        end }
      local x = C.normal(shape)
      C.equal(k(x), C.flat(x))
    end)
  end

  diverge("test_copy_7d_tiling_with_unit_middle_dims", "new-tma-unit-dims", "unit dims are not dropped to fit TMA's 5 dims",
          "at most 5 exist", function()
    local shape = { 2, 64, 1, 1, 1, 1, 128 }
    local k = cls.kernel{ out_shape = mgpu.shape(shape, "f32"),
      scratch_shapes = { mgpu.SMEM(shape, "f32", { transforms = { T.tiling{ 2, 1, 1, 1, 1, 1, 32 } } }), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        mgpu.copy_gmem_to_smem(x, s, bar)
        mgpu.barrier_wait(bar)
        mgpu.copy_smem_to_gmem(s, o)
        mgpu.wait_smem_to_gmem(0)
      end }
    local x = C.normal(shape)
    C.equal(k(x), C.flat(x))
  end)

  test("test_scoped_copy_with_transforms", function()
    local ts = default_transforms("f32")
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128, 64 }, "f32"),
      in_specs = { mgpu.BlockSpec{ memory_space = mgpu.GMEM } },
      out_specs = mgpu.BlockSpec{ memory_space = mgpu.SMEM, transforms = ts },
      scratch_shapes = { mgpu.Barrier{} },
      body = function(x, o, bar)
        mgpu.run_scoped(function(tmp)
          mgpu.copy_gmem_to_smem(x, tmp, bar)
          mgpu.barrier_wait(bar)
          o:store(tmp:load() * 2)
        end, mgpu.SMEM({ 128, 64 }, "f32", { transforms = ts }))
      end }
    local x = C.normal({ 128, 64 })
    C.equal(k(x), C.map(x, function(v) return v * 2 end))
  end)

  test("test_copy_with_transforms_and_indexing", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 1, 2, 64, 64 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 2, 1, 64, 64 }, "f32", { transforms = default_transforms("f32") }), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        local t = mgpu.transpose_ref(s, { 1, 0, 2, 3 })
        for i = 0, 1 do
          mgpu.copy_gmem_to_smem(x, t:at(all, i), bar)
          mgpu.barrier_wait(bar)
        end
        mgpu.copy_smem_to_gmem(t, o)
        mgpu.wait_smem_to_gmem(0)
      end }
    local x = C.normal({ 1, 64, 64 })
    C.equal(k(x), C.concat(C.flat(x), C.flat(x)))
  end)
end)
