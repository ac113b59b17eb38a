-- The tests of JAX's PallasCallTest (tests/pallas/mosaic_gpu_test.py) ported
-- to mgpu, for PallasCallTest_conf.lua (Lane semantics) and
-- PallasCallWGTest_conf.lua (Warpgroup semantics): every Hopper test of the
-- class under its JAX name. See spec/conformance/README.md for the revision
-- read, the parameter subsets and the tests that do not apply.
local assert = require "luassert"
local C = dofile("spec/conformance/support/conf.lua")
local mgpu, T, L = C.mgpu, C.T, C.L
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


return function(cls)
  local test, diverge, check = cls.test, cls.diverge, cls.check
  local wg = cls.semantics == "Warpgroup"
  -- Under Warpgroup semantics layout_cast constrains the inferred layout instead of converting.
  local cast_div = wg and { "new-wg-layout_cast", "layout_cast between WGMMA and WGMMA_TRANSPOSED does not convert under " ..
                            "Warpgroup semantics", "layout inference failed" } or nil
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

  diverge("test_sync_copy", "new-layouts", "Layout.SMEM_GMEM_COPY is not provided", "SMEM_GMEM_COPY", function()
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
    assert.matches("PallasCallTest%.lua:%d+: copy_gmem_to_smem: shapes &gmem bf16%[128%] and &smem bf16%[256%] do not match", err)
  end)
  test("test_copy_smem_to_gmem_raises_on_mismatched_shapes", function()
    local err = copy_error(mgpu.shape({ 128 }, "bf16"), { mgpu.SMEM({ 256 }, "bf16") }, function(o, s)
      mgpu.copy_smem_to_gmem(s, o)
      mgpu.wait_smem_to_gmem(0)
    end)
    assert.matches("PallasCallTest%.lua:%d+: copy_smem_to_gmem: shapes &gmem bf16%[128%] and &smem bf16%[256%] do not match", err)
  end)
  test("test_copy_gmem_to_smem_raises_on_mismatched_dtypes", function()
    local err = copy_error(mgpu.shape({ 256 }, "bf16"), { mgpu.SMEM({ 256 }, "f32"), mgpu.Barrier{} }, function(o, s, bar)
      mgpu.copy_gmem_to_smem(o, s, bar)
      mgpu.barrier_wait(bar)
    end)
    assert.matches("PallasCallTest%.lua:%d+: copy_gmem_to_smem: dtypes bf16 and f32 do not match", err)
  end)
  test("test_copy_smem_to_gmem_raises_on_mismatched_dtypes", function()
    local err = copy_error(mgpu.shape({ 256 }, "bf16"), { mgpu.SMEM({ 256 }, "f32") }, function(o, s)
      mgpu.copy_smem_to_gmem(s, o)
      mgpu.wait_smem_to_gmem(0)
    end)
    assert.matches("PallasCallTest%.lua:%d+: copy_smem_to_gmem: dtypes bf16 and f32 do not match", err)
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

  test("test_collective_copy_gmem_to_smem", function()
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

  for _, src_t in ipairs({ false, true }) do
    for _, shape in ipairs({ { 128, 128 }, { 1, 128, 128 } }) do
      check(string.format("test_transposed_load_store(src_transposed=%s, shape=(%s))", tostring(src_t), table.concat(shape, ", ")),
            cast_div, function()
        local perm = #shape == 3 and { 0, 2, 1 } or { 1, 0 }
        local k = cls.kernel{ out_shape = mgpu.shape(shape, "f32"), body = function(src, dst)
          local sl, dl = L.WGMMA, L.WGMMA_TRANSPOSED
          if src_t then src, sl, dl = mgpu.transpose_ref(src, perm), L.WGMMA_TRANSPOSED, L.WGMMA
          else dst = mgpu.transpose_ref(dst, perm) end
          dst:store(mgpu.layout_cast(src:load{ layout = sl }, dl))
        end }
        local x = C.normal(shape)
        local hx, want = C.flat(x), {}
        for r = 0, 127 do for c = 0, 127 do want[r * 128 + c + 1] = hx[c * 128 + r + 1] end end
        C.equal(k(x), want)
      end)
    end
  end

  -- The transpose of a 128x128 table (row-major, 1-based).
  local function transpose128(t)
    local o = {}
    for r = 0, 127 do for c = 0, 127 do o[r * 128 + c + 1] = t[c * 128 + r + 1] end end
    return o
  end

  test("test_wgmma_load_from_transposed_smem", function()
    local ts = cls.semantics == "Warpgroup" and {} or default_transforms("f16")
    local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f16"),
      scratch_shapes = { mgpu.SMEM({ 128, 128 }, "f16", { transforms = ts }), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        mgpu.copy_gmem_to_smem(x, s, bar)
        mgpu.barrier_wait(bar)
        o:store(mgpu.transpose_ref(s, { 1, 0 }):load{ layout = L.WGMMA })
      end }
    local x = C.normal({ 128, 128 }, "f16")
    C.equal(k(x), transpose128(C.flat(x)))
  end)

  test("test_wgmma_store_to_transposed_smem", function()
    local ts = cls.semantics == "Warpgroup" and {} or default_transforms("f16")
    local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f16"),
      scratch_shapes = { mgpu.SMEM({ 128, 128 }, "f16", { transforms = ts }) },
      body = function(x, o, s)
        mgpu.transpose_ref(s, { 1, 0 }):store(x:load{ layout = L.WGMMA })
        o:store(s:load())
      end }
    local x = C.normal({ 128, 128 }, "f16")
    C.equal(k(x), transpose128(C.flat(x)))
  end)

  for _, space in ipairs({ "SMEM", "GMEM" }) do
    for _, lay in ipairs({ "WG_STRIDED((128,), vec_size=1)", "None" }) do
      test(string.format("test_load_to_strided_layout_with_indexing(src_memory_space=%s, layout=%s)", space, lay), function()
        local k = cls.pallas_call{ out_shape = mgpu.shape({ 2, 128 }, "f32"),
          in_specs = { mgpu.BlockSpec{ memory_space = space } }, out_specs = mgpu.BlockSpec{ memory_space = mgpu.SMEM },
          body = function(x, o)
            for i = 0, 1 do
              o:at(i):store(x:at(i):load(lay ~= "None" and { layout = L.WG_STRIDED({ 128 }, 1) } or nil))
            end
          end }
        local x = C.normal({ 2, 128 })
        C.equal(k(x), C.flat(x))
      end)
    end
  end

  -- JAX's kernels below end without waiting for their last SMEM->GMEM copy (the kernel's end waits).
  for _, tiling in ipairs({ "None", "TilingTransform((32,))" }) do
    diverge("test_smem_gmem_transposed_copies(tiling=" .. tiling .. ")", "new-unawaited-store",
            "a kernel may not end with its SMEM->GMEM copy unawaited", "was never awaited", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 2, 2, 64 }, "f32"),
        scratch_shapes = { mgpu.SMEM({ 2, 2, 64 }, "f32", { transforms = tiling == "None" and {} or { T.tiling{ 32 } } }), mgpu.Barrier{} },
        body = function(src, dst, s, bar)
          s = mgpu.transpose_ref(s, { 1, 0, 2 })
          mgpu.copy_gmem_to_smem(src, s, bar)
          mgpu.barrier_wait(bar)
          mgpu.copy_smem_to_gmem(s, dst)
        end }
      local x = C.normal({ 2, 2, 64 })
      C.equal(k(x), C.flat(x))
    end)
  end

  test("test_indexing_before_transpose", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 2, 32, 2, 128 }, "f32"),
      in_specs = { mgpu.BlockSpec{ memory_space = mgpu.GMEM } }, out_specs = mgpu.BlockSpec{ memory_space = mgpu.SMEM },
      scratch_shapes = { mgpu.Barrier{} },
      body = function(x, o, bar)
        for i = 0, 1 do
          mgpu.copy_gmem_to_smem(x, mgpu.transpose_ref(o:at(i), { 1, 0, 2 }), bar)
          mgpu.barrier_wait(bar)
        end
      end }
    local x = C.normal({ 2, 32, 128 })
    local hx, xt = C.flat(x), {}
    for a = 0, 31 do for b = 0, 1 do for c = 0, 127 do xt[#xt + 1] = hx[(b * 32 + a) * 128 + c + 1] end end end
    C.equal(k(x), C.concat(xt, xt))
  end)

  diverge("test_indexing_after_transpose", "new-unawaited-store", "a kernel may not end with its SMEM->GMEM copy unawaited",
          "was never awaited", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2, 32, 2, 128 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 2, 32, 2, 128 }, "f32"), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        local t = mgpu.transpose_ref(s, { 1, 0, 2, 3 })
        for i = 0, 1 do
          mgpu.copy_gmem_to_smem(x, t:at(all, i), bar)
          mgpu.barrier_wait(bar)
        end
        mgpu.copy_smem_to_gmem(s, o)
      end }
    local x = C.normal({ 32, 2, 128 })
    C.equal(k(x), C.concat(x, x))
  end)

  test("test_copy_gmem_to_smem_in_run_scoped", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), body = function(x, o)
      mgpu.run_scoped(function(bar)
        mgpu.run_scoped(function(s)
          mgpu.copy_gmem_to_smem(x, s, bar)
          mgpu.barrier_wait(bar)
          o:store(s:load() + 1)
        end, mgpu.SMEM({ 256 }, "f32"))
      end, mgpu.Barrier{})
    end }
    local x = ints({ 256 }, "f32", -1000, 1000)
    C.equal(k(x), C.map(x, function(v) return v + 1 end))
  end)

  test("test_add_doubled_sum", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128 }, "f32"), body = function(x, o)
      o:store(x:load() + x:load():sum() + x:load():sum())
    end }
    local x = ints({ 128 }, "f32", -1000, 1000)
    local sum = 0
    for _, v in ipairs(C.flat(x)) do sum = sum + v end
    C.equal(k(x), C.map(x, function(v) return v + 2 * sum end))
  end)

  for _, factor in ipairs({ 0.001, 1, 10, 100, 100 }) do
    test("test_layer_norm(input_factor=" .. factor .. ")", function()
      local eps = 1e-5
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "f32"), body = function(x, o)
        local xc = x:load() - x:load():mean()
        o:store(xc * mgpu.rsqrt((xc * xc):mean() + eps) * 1.0 + 1.0)
      end }
      local function ref(t)
        local m, v = 0, 0
        for _, a in ipairs(t) do m = m + a end
        m = m / #t
        for _, a in ipairs(t) do v = v + (a - m) ^ 2 end
        v = v / #t
        return C.map(t, function(a) return (a - m) / math.sqrt(v + eps) + 1 end)
      end
      local ones = mgpu.array(C.round(C.map(mgpu.zeros({ 256 }, "f32"), function() return factor end), "f32"), "f32")
      C.close(k(ones), ref(C.flat(ones)), 1e-7)
      local x = mgpu.array(C.round(C.map(C.uniform({ 256 }), function(v) return v * factor end), "f32"), "f32")
      C.relerr(k(x), ref(C.flat(x)), 6e-5)
    end)
  end

  -- debug_print tests: the kernel runs in a separate mgpu process and its stdout is read.
  local function printed(src)
    local out, err = C.run_script("local mgpu = require 'mgpu'\nlocal cp = mgpu.CompilerParams{ lowering_semantics = '" ..
                                  cls.semantics .. "' }\n" .. src)
    if err:find("error") or err:find("%.lua:%d+:") then error("the script failed: " .. err, 0) end
    return out
  end

  test("test_print", function()
    local out = printed([[
      local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 256 }, "f32"), compiler_params = cp,
        in_specs = { mgpu.BlockSpec{} }, out_specs = { mgpu.BlockSpec{} },
        body = function(x, o) mgpu.debug_print("It works!") end }
      k(mgpu.iota({ 256 }, "f32"))]])
    assert.are.equal("It works!\n", out)
  end)

  test("test_print_wgmma_tiled_layout", function()
    local out = printed([[
      local T = mgpu.transforms
      local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 128, 32 }, "f32"), compiler_params = cp,
        in_specs = { mgpu.BlockSpec{ transforms = { T.tiling{ 8, 32 }, T.swizzle(128) } } }, out_specs = { mgpu.BlockSpec{} },
        body = function(x, o) mgpu.debug_print("prefix {}", x:load()) end }
      k(mgpu.iota({ 128, 32 }, "f32"))]])
    local n = 0
    for i, j, v in out:gmatch("prefix %[(%d+), (%d+)%]: (%d+)") do
      n = n + 1
      assert.are.equal(tonumber(i) * 32 + tonumber(j), tonumber(v))
    end
    assert.are.equal(128 * 32, n)
  end)

  test("test_print_scalar", function()
    local x = C.uniform({ 256 }, "i32", -1000, 1000)
    local sum = 0
    for _, v in ipairs(C.flat(x)) do sum = sum + v end
    local out = printed(string.format([[
      local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), compiler_params = cp,
        in_specs = { mgpu.BlockSpec{} }, out_specs = { mgpu.BlockSpec{} },
        body = function(x, o) mgpu.debug_print("x.sum() = {}", x:load():sum()) end }
      k(mgpu.array({ %s }, "i32"))]], table.concat(C.flat(x), ", ")))
    assert.matches("x.sum() = " .. sum .. "\n", out, 1, true)
  end)

  test("test_print_scalar_array", function()
    local x = C.uniform({ 256 }, "i32", -1000, 1000)
    local sum = 0
    for _, v in ipairs(C.flat(x)) do sum = sum + v end
    local out = printed(string.format([[
      local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), compiler_params = cp,
        in_specs = { mgpu.BlockSpec{} }, out_specs = { mgpu.BlockSpec{} },
        body = function(x, o) mgpu.debug_print("x.sum() = {}", x:load():sum() + 1) end }
      k(mgpu.array({ %s }, "i32"))]], table.concat(C.flat(x), ", ")))
    assert.matches("x.sum() = " .. (sum + 1) .. "\n", out, 1, true)
  end)

  test("test_print_array", function()
    local out = printed([[
      local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 2, 1, 64, 64 }, "i32"), compiler_params = cp,
        in_specs = { mgpu.BlockSpec{} }, out_specs = { mgpu.BlockSpec{} },
        body = function(x, o) mgpu.debug_print("x: {}", x:load()) end }
      k(mgpu.iota({ 2, 1, 64, 64 }, "i32"))]])
    assert.matches("x: [1, 0, 43, 23]: 6871\n", out, 1, true)
  end)

  diverge("test_print_layout", "new-print_layout", "print_layout takes a %s format, not Pallas' {}", "WGMMA_ROW", function()
    local out = printed([[
      local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 128 }, "bf16"), compiler_params = cp,
        in_specs = { mgpu.BlockSpec{} }, out_specs = { mgpu.BlockSpec{} },
        body = function(x, o) mgpu.print_layout("x: {}", mgpu.layout_cast(x:load(), mgpu.Layout.WGMMA:reduce(1))) end }
      k(mgpu.iota({ 128 }, "bf16"))]])
    assert.matches("x: WGMMA_ROW\n", out, 1, true)
  end)

  local smem_layouts = {
    { "()", {}, "()" },
    { "(TilingTransform((8, 64)), SwizzleTransform(128))", { T.tiling{ 8, 64 }, T.swizzle(128) } },
    { "(TilingTransform((8, 64)),)", { T.tiling{ 8, 64 } } },
    { "(SwizzleTransform(128),)", { T.swizzle(128) } },
  }
  for _, case in ipairs(smem_layouts) do
    diverge("test_print_layout_smem(transforms=" .. case[1] .. ")", "new-print_layout", "print_layout prints register layouts only",
            "print_layout", function()
      local k = cls.kernel{ out_shape = mgpu.shape({}, "bf16"), scratch_shapes = { mgpu.SMEM({ 128, 64 }, "bf16", { transforms = case[2] }) },
        body = function(o, s) mgpu.print_layout("smem: %s", s) end }
      k:lower()
    end)
  end

  diverge("test_print_layout_dynamic_slice", "new-print_layout", "print_layout prints register layouts only", "print_layout", function()
    local k = cls.kernel{ out_shape = mgpu.shape({}, "bf16"), scratch_shapes = { mgpu.SMEM({ 128, 64 }, "bf16") },
      body = function(idx, o, s) mgpu.print_layout("smem: %s", s:at(ds(idx:load(), 64), ds(0, 32))) end }
    k:lower(mgpu.abstract({}, "i32"))
  end)

  local swap_transforms = {
    { "(TilingTransform((1, 32)), SwizzleTransform(128))", { T.tiling{ 1, 32 }, T.swizzle(128) } },
    { "(TilingTransform((8, 32)), SwizzleTransform(128))", { T.tiling{ 8, 32 }, T.swizzle(128) } },
    { "()", {} },
  }
  -- JAX's kernel stores to SMEM and copies it out without commit_smem (a race on the GPU).
  for _, case in ipairs(swap_transforms) do
    diverge("test_get_swap_with_transforms(transforms=" .. case[1] .. ")", "new-commit-required",
            "the interpreter refuses a TMA store of register stores not yet committed (JAX's test omits commit_smem)",
            "commit_smem", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "i32"),
        scratch_shapes = { mgpu.SMEM({ 128, 128 }, "i32", { transforms = case[2] }), mgpu.Barrier{} },
        body = function(x, o, s, bar)
          mgpu.copy_gmem_to_smem(x, s, bar)
          mgpu.barrier_wait(bar)
          s:store(s:load() * 2)
          mgpu.copy_smem_to_gmem(s, o)
          mgpu.wait_smem_to_gmem(0)
        end }
      local x = C.uniform({ 128, 128 }, "i32", -2 ^ 20, 2 ^ 20)
      C.equal(k(x), C.map(x, function(v) return 2 * v end))
    end)
  end

  for _, transposed in ipairs({ false, true }) do
    diverge("test_get_swap_with_swizzle_transform(transposed=" .. tostring(transposed) .. ")", "new-commit-required",
            "the interpreter refuses a TMA store of register stores not yet committed (JAX's test omits commit_smem)",
            "commit_smem", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 64, 64 }, "bf16"),
        scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = { T.swizzle(128) } }), mgpu.Barrier{} },
        body = function(x, o, s, bar)
          mgpu.copy_gmem_to_smem(x, s, bar)
          mgpu.barrier_wait(bar)
          if transposed then
            local st = mgpu.transpose_ref(s, { 1, 0 })
            st:store(st:load{ layout = L.WGMMA_TRANSPOSED } * 2)
          else
            s:store(s:load{ layout = L.WGMMA } * 2)
          end
          mgpu.copy_smem_to_gmem(s, o)
          mgpu.wait_smem_to_gmem(0)
        end }
      local x = ints({ 64, 64 }, "bf16", -100, 100)
      C.equal(k(x), C.map(x, function(v) return 2 * v end))
    end)
  end

  test("test_swap_scalar_constant", function()
    local k = cls.kernel{ out_shape = mgpu.shape({}, "i32"), body = function(o) o:store(42) end }
    C.equal(k(), { 42 })
  end)

  diverge("test_swizzled_dimension_dynamic_slice", "new-rank0-arrays", "a BlockSpec over a 0-d array",
          "every dim of the block is squeezed", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 32 }, "i32"),
      in_specs = { mgpu.BlockSpec{ memory_space = mgpu.SMEM, transforms = default_transforms("i32") },
                   mgpu.BlockSpec{ memory_space = mgpu.GMEM } },
      out_specs = mgpu.BlockSpec{ memory_space = mgpu.GMEM },
      body = function(src, offset, dst) dst:store(src:at(all, ds(offset:load() * 32, 32)):load()) end }
    local src = C.uniform({ 64, 64 }, "i32", -2 ^ 31, 2 ^ 31)
    local hs, want = C.flat(src), {}
    for r = 0, 63 do for c = 0, 31 do want[#want + 1] = hs[r * 64 + 32 + c + 1] end end
    C.equal(k(src, mgpu.full({}, 1, "i32")), want)
  end)

  if wg then      -- JAX runs it under Warpgroup semantics only
    diverge("test_swizzled_dimension_dynamic_slice_raises_for_non_divisible_offset", "new-rank0-arrays",
            "a BlockSpec over a 0-d array", "every dim of the block is squeezed", function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 32 }, "i32"),
        in_specs = { mgpu.BlockSpec{ memory_space = mgpu.SMEM, transforms = default_transforms("i32") },
                     mgpu.BlockSpec{ memory_space = mgpu.GMEM } },
        out_specs = mgpu.BlockSpec{ memory_space = mgpu.GMEM },
        body = function(src, offset, dst) dst:store(src:at(all, ds(offset:load(), 32)):load()) end }
      assert.matches("PallasCallTest%.lua:%d+: .*32", C.err_of(k, C.uniform({ 64, 64 }, "i32", 0, 100), mgpu.full({}, 1, "i32")))
    end)
  end

  diverge("test_check", "new-debug_check", "mgpu has no debug_check (pl.debug_check)", "debug_check", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), body = function(x, o)
      mgpu.debug_check(mgpu.gt(x:load():sum(), 0), "x.sum() is negative")
      o:store(x:load())
    end }
    local x = C.uniform({ 256 }, "i32", 0, 100)
    C.equal(k(x), C.flat(x))
  end)

  diverge("test_scalar_load_store", "new-rank0-arrays", "a 0-d ref loads a scalar, which has no layout",
          "only arrays have layouts", function()
    local k = cls.kernel{ out_shape = mgpu.shape({}, "i32"), body = function(src, dst) dst:store(src:load{ layout = L.WG_SPLAT }) end }
    local v = C.flat(C.uniform({ 1 }, "i32", -2 ^ 31, 2 ^ 31))[1]
    C.equal(k(mgpu.full({}, v, "i32")), { v })
  end)

  test("test_scalar_broadcast", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "i32"), body = function(o) o:store(mgpu.const(42, "i32"):broadcast_to({ 128 })) end }
    C.equal(k(), C.map(mgpu.zeros({ 128 }, "i32"), function() return 42 end))
  end)

  test("test_run_scoped", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 8, 128 }, "f32"), body = function(x, o)
      local tmp = mgpu.run_scoped(function(t)
        assert(t.shape[1] == 8 and t.shape[2] == 128)
        t:store(x:load() + 1.0)
        return t:load()
      end, mgpu.SMEM({ 8, 128 }, "f32"))
      assert(tmp.shape[1] == 8 and tmp.shape[2] == 128)
      o:store(tmp)
    end }
    local x = ints({ 8, 128 }, "f32", -1000, 1000)
    C.equal(k(x), C.map(x, function(v) return v + 1 end))
  end)

  test("test_run_scoped_in_cond", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"),
      in_specs = { mgpu.BlockSpec{ memory_space = mgpu.GMEM } }, out_specs = mgpu.BlockSpec{ memory_space = mgpu.SMEM },
      body = function(x, o)
        local function branch()
          mgpu.run_scoped(function(bar)
            mgpu.copy_gmem_to_smem(x, o, bar)
            mgpu.barrier_wait(bar)
          end, mgpu.Barrier{})
        end
        mgpu.cond(mgpu.eq(x:at(0):load() % 2, 0), branch, branch)
      end }
    local x = mgpu.full({ 256 }, 1234, "i32")
    C.equal(k(x), C.flat(x))
  end)

  test("test_program_id", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), grid = 2, in_specs = {},
      out_specs = mgpu.BlockSpec{ { 128 }, function(i) return i end },
      body = function(o) o:store(mgpu.program_id(0):broadcast_to({ 128 })) end }
    C.equal(k(), C.map(mgpu.zeros({ 256 }, "i32"), function(_, i) return i <= 128 and 0 or 1 end))
  end)

  test("test_program_id_in_squashed_grid", function()
    local grid = { 2, 3, 4, 5 }
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 2, 3, 4, 5, 128 }, "i32"), grid = grid, in_specs = {},
      out_specs = mgpu.BlockSpec{ { 1, 1, 1, 1, 128 }, function(a, b, c, d) return a, b, c, d, 0 end },
      body = function(o)
        local mult, idx = 1, 0
        for axis = #grid - 1, 0, -1 do
          idx = idx + mgpu.program_id(axis) * mult
          mult = mult * mgpu.num_programs(axis)
        end
        o:store(mgpu.broadcast(idx, { 1, 1, 1, 1, 128 }))
      end }
    local got, first = C.flat(k()), {}
    for i = 0, 119 do first[i + 1] = got[i * 128 + 1] end
    C.equal(first, C.map(mgpu.iota({ 120 }, "i32"), function(v) return v end), "out[..., 0]")
  end)

  -- test_axis_indices_in_grid: the second output, the CUDA block index read through inline_mgpu,
  -- has no mgpu counterpart (README); the first, lax.axis_index(grid_names), is checked.
  local grids = {
    { { 2, 3 }, { "a", "b" }, {}, {} }, { { 2, 3 }, { "a", "b" }, { 2 }, { "x" } },
    { { 2, 3, 4 }, { "a", "b", "c" }, {}, {} }, { { 2, 3, 4 }, { "a", "b", "c" }, { 2 }, { "x" } },
    { { 2, 3, 4 }, { "a", "b", "c" }, { 2, 3 }, { "x", "y" } },
    { { 2, 3, 4, 5 }, { "a", "b", "c", "d" }, {}, {} }, { { 2, 3, 4, 5 }, { "a", "b", "c", "d" }, { 2 }, { "x" } },
  }
  for _, g in ipairs(grids) do
    local grid, names, cluster, cnames = g[1], g[2], g[3], g[4]
    local function tup(t) return "(" .. table.concat(t, ", ") .. (#t == 1 and ",)" or ")") end
    test(string.format("test_axis_indices_in_grid(grid=%s, cluster=%s)", tup(grid), tup(cluster)), function()
      local shape = {}
      for _, n in ipairs(cluster) do shape[#shape + 1] = n end
      for _, n in ipairs(grid) do shape[#shape + 1] = n end
      shape[#shape + 1] = 128
      local k = cls.kernel{ out_shape = mgpu.shape(shape, "i32"), grid = grid, grid_names = names,
        cluster = #cluster > 0 and cluster or nil, cluster_names = #cnames > 0 and cnames or nil,
        body = function(o)
          local idx = {}
          for _, n in ipairs(cnames) do idx[#idx + 1] = mgpu.axis_index(n) end
          for _, n in ipairs(names) do idx[#idx + 1] = mgpu.axis_index(n) end
          o:at(table.unpack(idx)):store(mgpu.axis_index(names):broadcast_to({ 128 }))
        end }
      local ncl, ngrid = 1, 1
      for _, n in ipairs(cluster) do ncl = ncl * n end
      for _, n in ipairs(grid) do ngrid = ngrid * n end
      local want = {}
      for _ = 1, ncl do for p = 0, ngrid - 1 do for _ = 1, 128 do want[#want + 1] = p end end end
      C.equal(k(), want)
    end)
  end

  local oob_reads = { { 0, "promise_in_bounds" }, { 80, "promise_in_bounds" }, { 0, "zeros" }, { 112, "zeros" }, { 192, "zeros" },
                      { 208, "zeros" }, { 0, "undefined" }, { 112, "undefined" }, { 192, "undefined" }, { 208, "undefined" } }
  for _, case in ipairs(oob_reads) do
    test(string.format("test_out_of_bounds_tma_reads(start_offset=%d, oob_mode=%s)", case[1], case[2]), function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "i8"), scratch_shapes = { mgpu.SMEM({ 128 }, "i8"), mgpu.Barrier{} },
        body = function(start, x, o, s, bar)
          s:store(mgpu.broadcast(-1, { 128 }, "i8"))
          mgpu.commit_smem()
          mgpu.copy_gmem_to_smem(x:at(ds(start:load(), 128)), s, bar, { oob = case[2] })
          mgpu.barrier_wait(bar)
          o:store(s:load())
        end }
      local x = C.uniform({ 208 }, "i8", -128, 128)
      local got, hx = C.flat(k(mgpu.full({}, case[1], "i32"), x)), C.flat(x)
      local n = math.min(128, 208 - case[1])
      C.equal({ table.unpack(got, 1, n) }, { table.unpack(hx, case[1] + 1, case[1] + n) }, "the valid part")
      if case[2] == "zeros" then
        C.equal({ table.unpack(got, n + 1, 128) }, C.map({ table.unpack(got, n + 1, 128) }, function() return 0 end), "past the end")
      end
    end)
  end

  test("test_num_programs", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), grid = 2, in_specs = {},
      out_specs = mgpu.BlockSpec{ { 128 }, function(i) return i end },
      body = function(o) o:store(mgpu.broadcast(mgpu.num_programs(0), { 128 }, "i32")) end }
    C.equal(k(), C.map(mgpu.zeros({ 256 }, "i32"), function() return 2 end))
  end)

  test("test_swizzled_blockspec_shapes", function()
    local spec = mgpu.BlockSpec{ { 128, 64 }, function(i, j) return i, j end, transforms = default_transforms("f16") }
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128, 128 }, "f16"), grid = { 2, 2 }, in_specs = { spec }, out_specs = spec,
      body = function(x, o)
        assert(x.shape[1] == 128 and x.shape[2] == 64)
        o:store(x:load())
      end }
    local x = C.normal({ 128, 128 }, "f16")
    C.equal(k(x), C.flat(x))
  end)

  -- force_while: bounds that are traced values (a while loop in JAX).
  local function bound(v, force) return force and mgpu.const(v, "i32") or v end
  for _, force in ipairs({ false, true }) do
    test("test_fori_loop_array(force_while=" .. tostring(force) .. ")", function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), body = function(x, o)
        o:store(mgpu.fori(bound(2, force), bound(4, force), function(i, v) return v + i end, x:load()))
      end }
      local x = C.uniform({ 256 }, "i32", -1000, 1000)
      C.equal(k(x), C.map(x, function(v) return v + 5 end))
    end)
  end

  for _, unroll in ipairs({ 1, 2, 4 }) do
    test("test_fori_loop_array_unrolled(unroll=" .. unroll .. ")", function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), body = function(x, o)
        o:store(mgpu.fori(2, 6, function(i, v) return v + i end, x:load(), { unroll = unroll }))
      end }
      local x = C.uniform({ 256 }, "i32", -1000, 1000)
      C.equal(k(x), C.map(x, function(v) return v + 14 end))
    end)
  end

  for _, force in ipairs({ false, true }) do
    test("test_fori_loop_scalar(force_while=" .. tostring(force) .. ")", function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), body = function(o)
        o:store(mgpu.fori(bound(2, force), bound(4, force), function(i, v) return v + i end, mgpu.const(0, "i32")):broadcast_to({ 256 }))
      end }
      C.equal(k(), C.map(mgpu.zeros({ 256 }, "i32"), function() return 5 end))
    end)
  end

  test("test_fori_loop_dynamic_bounds", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), grid = { 1 }, body = function(o)
      local zero = mgpu.program_id(0)
      o:store(mgpu.fori(zero + 2, zero + 4, function(i, v) return v + i end, mgpu.const(0, "i32")):broadcast_to({ 256 }))
    end }
    C.equal(k(), C.map(mgpu.zeros({ 256 }, "i32"), function() return 5 end))
  end)

  for _, force in ipairs({ false, true }) do
    test("test_fori_loop_tuple(force_while=" .. tostring(force) .. ")", function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), body = function(o)
        local zero = mgpu.const(0, "i32")
        local a, b, c = mgpu.fori(bound(2, force), bound(4, force), function(step, ...)
          local xs, out = { ... }, {}
          for j = 1, 3 do
            out[j] = mgpu.cond(mgpu.eq(step % 2, 0), function() return xs[j] + 1 end, function() return xs[j] end)
          end
          return table.unpack(out)
        end, zero, zero, zero)
        o:store((a + b + c):broadcast_to({ 256 }))
      end }
      C.equal(k(), C.map(mgpu.zeros({ 256 }, "i32"), function() return 3 end))
    end)
  end

  for _, force in ipairs({ false, true }) do
    test("test_fori_loop_indexed_store(force_while=" .. tostring(force) .. ")", function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 4, 128 }, "f32"), body = function(x, y, o)
        mgpu.fori(bound(0, force), bound(4, force), function(idx) o:at(idx):store(x:at(idx):load() + y:at(idx):load()) end)
      end }
      local x, y = ints({ 4, 128 }, "f32", -1000, 1000), ints({ 4, 128 }, "f32", -1000, 1000)
      local hy = C.flat(y)
      C.equal(k(x, y), C.map(x, function(v, i) return v + hy[i] end))
    end)
  end

  test("test_while_loop", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128 }, "i32"), body = function(x, o)
      o:store(mgpu.zeros({ 128 }, "i32"))
      mgpu.while_loop(function(_, last) return mgpu.lt(last:sum(), 128 * 10) end, function(i)
        o:store(o:load() + x:at(i):load())
        return i + 1, o:load()
      end, mgpu.const(0, "i32"), o:load())
    end }
    C.equal(k(mgpu.full({ 128, 128 }, 1, "i32")), C.map(mgpu.zeros({ 128 }, "i32"), function() return 10 end))
  end)

  test("test_while_loop_layout_mismatch", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128 }, "i32"), body = function(o)
      local strided = mgpu.layout_cast(o:load(), L.WG_STRIDED({ 128 }, 1))
      mgpu.while_loop(function(acc) return mgpu.lt(acc:sum(), 128) end, function()
        o:store(o:load())
        return mgpu.layout_cast(mgpu.broadcast(0, { 128 }, "i32"), L.WGMMA:reduce(1))
      end, strided)
    end }
    assert.matches("PallasCallTest%.lua:%d+: while_loop: carried value 1 has layout WG_STRIDED%(1%) on entry .* but " ..
                   "WGMMA:reduce%(1%) as the body's result", C.err_of(k))
  end)

  test("test_cond", function()
    local out = printed([[
      local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), compiler_params = cp,
        in_specs = { mgpu.BlockSpec{} }, out_specs = { mgpu.BlockSpec{} },
        body = function(x, o)
          mgpu.cond(mgpu.eq(x:at(0):load() % 2, 0), function() mgpu.debug_print("acc % 2") end,
                    function() mgpu.debug_print("acc") end)
          o:store(mgpu.broadcast(0, { 256 }, "i32"))
        end }
      k(mgpu.full({ 256 }, 1234, "i32"))]])
    assert.matches("acc % 2", out, 1, true)
  end)

  test("test_cond_returning_array", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "i32"), body = function(x, o)
      local s = x:load():sum()
      local acc2, acc = mgpu.cond(mgpu.eq(s % 2, 0), function() return s * 2, x:load() end, function() return s, x:load() end)
      o:store((acc:sum() + acc2):broadcast_to({ 256 }))
    end }
    local x = C.uniform({ 256 }, "i32", -1000, 1000)
    local sum = 0
    for _, v in ipairs(C.flat(x)) do sum = sum + v end
    local want = sum % 2 == 0 and 3 * sum or 2 * sum
    C.equal(k(x), C.map(x, function() return want end))
  end)

  diverge("test_cond_constant_output", "new-rank0-arrays", "no 0-d arrays (a splat of shape ())", "shape must have rank 1 to 8", function()
    local k = cls.kernel{ out_shape = mgpu.shape({}, "f32"), body = function(x, o)
      local scale = mgpu.broadcast(1.0, {}, "f32")
      local scale_one = mgpu.const(1.0, "f32")
      o:store(mgpu.cond(mgpu.lt(x:load(), 1.0), function() return scale_one end, function() return scale end))
    end }
    C.equal(k(mgpu.full({}, 0, "f32")), { 1 })
  end)

  diverge("test_cond_get_arch", "new-int4", "mgpu has no int4 dtype", "int4", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 64, 256 }, "bf16"), body = function(xg, o)
      local x = xg:load{ layout = L.WGMMA }
      mgpu.cond(mgpu.ne(xg:at(0, 0):load(), 0), function() o:store(x:astype("bf16") + 1) end,
                function() o:store(x:astype("bf16") + 2) end)
    end }
    C.equal(k(mgpu.full({ 64, 256 }, 7, "int4")), C.map(mgpu.zeros({ 64 * 256 }, "f32"), function() return 8 end))
  end)

  test("test_tile_slicing", function()
    local spec = mgpu.BlockSpec{ transforms = default_transforms("u16") }
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 64 }, "u16"), in_specs = { spec }, out_specs = spec, body = function(x, o)
      local acc = mgpu.layout_cast(mgpu.zeros({ 64, 64 }, "u16"), L.WGMMA)
      o:store(mgpu.fori(0, 256 / 64, function(row, a)
        for col = 0, 1 do a = a + x:at(ds(row * 64, 64), ds(col * 64, 64)):load() end
        return a
      end, acc))
    end }
    local x = C.uniform({ 256, 128 }, "u16", 0, 65536)
    local hx, want = C.flat(x), {}
    for r = 0, 63 do
      for c = 0, 63 do
        local v = 0
        for i = 0, 3 do for j = 0, 1 do v = v + hx[(i * 64 + r) * 128 + j * 64 + c + 1] end end
        want[r * 64 + c + 1] = v % 65536
      end
    end
    C.equal(k(x), want)
  end)

  diverge("test_input_output_aliases", "new-input_output_aliases", "pallas_call has no input_output_aliases",
          "input_output_aliases", function()
    local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 64, 64 }, "f32"), input_output_aliases = { [0] = 0 },
      in_specs = { mgpu.BlockSpec{ memory_space = mgpu.GMEM } }, out_specs = mgpu.BlockSpec{ memory_space = mgpu.GMEM },
      compiler_params = cls.params(), body = function(a) a:store(mgpu.broadcast(1, { 64, 64 }, "f32")) end }
    C.equal(k(mgpu.zeros({ 64, 64 }, "f32")), C.map(mgpu.zeros({ 4096 }, "f32"), function() return 1 end))
  end)

  test("test_slicing", function()
    local up, lo = ds(0, 64), ds(64, 64)
    local spec = mgpu.BlockSpec{ transforms = default_transforms("f16") }
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128, 128 }, "f16"), in_specs = { spec }, out_specs = spec,
      body = function(src, dst)
        dst:at(up, up):store(src:at(lo, up):load())
        dst:at(up, lo):store(src:at(up, up):load())
        dst:at(lo, lo):store(src:at(up, lo):load())
        dst:at(lo, up):store(src:at(lo, lo):load())
      end }
    local x = C.normal({ 128, 128 }, "f16")
    local hx, want = C.flat(x), {}
    local function at(r, c) return hx[r * 128 + c + 1] end
    for r = 0, 127 do
      for c = 0, 127 do
        local sr, sc
        if r < 64 and c < 64 then sr, sc = r + 64, c
        elseif r < 64 then sr, sc = r, c - 64
        elseif c >= 64 then sr, sc = r - 64, c
        else sr, sc = r, c + 64 end
        want[r * 128 + c + 1] = at(sr, sc)
      end
    end
    C.equal(k(x), want)
  end)

  test("test_layout_cast", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256, 64 }, "f32"), body = function(o)
      o:store(mgpu.layout_cast(mgpu.broadcast(42, { 256, 64 }, "f32"), L.WGMMA))
    end }
    C.equal(k(), C.map(mgpu.zeros({ 256 * 64 }, "f32"), function() return 42 end))
  end)

  check("test_transposed_layout(layouts=(WGMMA, WGMMA_TRANSPOSED))", cast_div, function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 192, 256 }, "f16"),
      out_specs = mgpu.BlockSpec{ transforms = default_transforms("f16") }, body = function(o)
        local iota = mgpu.broadcasted_iota("f16", { 256, 192 }, 0, { layout = L.WGMMA }) * 192
        iota = iota + mgpu.broadcasted_iota("f16", { 256, 192 }, 1, { layout = L.WGMMA })
        mgpu.transpose_ref(o, { 1, 0 }):store(mgpu.layout_cast(iota, L.WGMMA_TRANSPOSED))
      end }
    local want = {}
    for r = 0, 191 do for c = 0, 255 do want[r * 256 + c + 1] = c * 192 + r end end
    C.equal(k(), C.round(want, "f16"))
  end)

  -- test_profiler*: the trace JSON written into a fresh directory.
  local function profiled(params, body)
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    params.profile_dir = dir
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "f32"), compiler_params = params, body = body }
    local x = ints({ 256 }, "f32", -1000, 1000)
    local y = k(x)
    local p = io.popen("cat " .. dir .. "/*.json; rm -rf " .. dir)
    local data = p:read("*a")
    p:close()
    return data, x, y
  end
  local function count(data, pat)
    local n = 0
    for _ in data:gmatch(pat) do n = n + 1 end
    return n
  end
  for _, warp in ipairs({ false, true }) do
    test(warp and "test_profiler_warp_scope" or "test_profiler", function()
      local data, x, y = profiled({ profile_space = 16, profile_trace_scope = warp and "warp" or nil }, function(xr, o)
        local v = mgpu.named_scope("add", function()
          local xv = mgpu.named_scope("load", function() return xr:load() end)
          return xv + xv
        end)
        mgpu.named_scope("store", function() o:store(v) end)
      end)
      local n = warp and 8 or 2
      assert.are.equal(n, count(data, '"name":%s*"add"'))
      assert.are.equal(n, count(data, '"name":%s*"load"'))
      assert.are.equal(n, count(data, '"name":%s*"store"'))
      C.equal(y, C.map(x, function(v) return 2 * v end))
    end)
  end

  test("test_profiler_bounds_check_truncates", function()
    local data, x, y = profiled({ profile_space = 3, profile_bounds_check = true }, function(xr, o)
      local v = mgpu.named_scope("a", function() return mgpu.named_scope("b", function()
        return mgpu.named_scope("c", function() return xr:load() + 1 end) end) end)
      o:store(v)
    end)
    assert.are.equal(3, count(data, '"ph":%s*"B"'))
    assert.are.equal(3, count(data, '"ph":%s*"E"'))
    C.equal(y, C.map(x, function(v) return v + 1 end))
  end)

  -- test_bitcast_convert_type: the bits of each element read as another dtype.
  -- The bits of an f32 or integer value (f16 inputs bitcast to f16, a no-op, are compared as they are).
  local function bits_of(v, dt)
    if dt == "f32" then return (string.unpack("<I4", string.pack("<f", v))) end
    return v % 2 ^ (dt:find("16") and 16 or 32)
  end
  local function from_bits(b, dt)
    if dt == "f32" then return (string.unpack("<f", string.pack("<I4", b))) end
    if dt == "bf16" then return (string.unpack("<f", string.pack("<I4", b * 65536))) end
    if dt == "f16" then
      local s, e, m = math.floor(b / 32768), math.floor(b / 1024) % 32, b % 1024
      local v = e == 0 and m * 2 ^ -24 or (e == 31 and (m == 0 and math.huge or 0 / 0) or (1 + m / 1024) * 2 ^ (e - 15))
      return s == 1 and -v or v
    end
    local w = dt:find("16") and 16 or 32
    return dt:sub(1, 1) == "i" and b >= 2 ^ (w - 1) and b - 2 ^ w or b
  end
  local pairs_ = { { "f16", "f16" }, { "i16", "bf16" }, { "i16", "f16" }, { "u16", "f16" }, { "f32", "i32" }, { "f32", "u32" },
                   { "u32", "i32" }, { "i32", "u32" } }
  for _, pr in ipairs(pairs_) do
    test(string.format("test_bitcast_convert_type(dtypes=(%s, %s))", pr[1], pr[2]), function()
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 16, 8 }, pr[2]), body = function(x, y) y:store(x:load():bitcast(pr[2])) end }
      local x
      if pr[1] == "f32" then x = C.normal({ 16, 8 })
      elseif pr[1] == "f16" then x = C.normal({ 16, 8 }, "f16")
      else
        local w = pr[1]:find("16") and 16 or 32
        x = C.uniform({ 16, 8 }, pr[1], pr[1]:sub(1, 1) == "i" and -2 ^ (w - 1) or 0, pr[1]:sub(1, 1) == "i" and 2 ^ (w - 1) or 2 ^ w)
      end
      local got = C.flat(k(x))
      if pr[1] == "f16" then C.equal(got, C.flat(x)); return end
      local want = C.map(x, function(v) return from_bits(bits_of(v, pr[1]), pr[2]) end)
      C.equal(got, want)
    end)
  end

  local barrier_cases = {
    { "test_optimization_barrier", function(xr, o) o:store(mgpu.optimization_barrier(xr:load())) end, 1 },
    { "test_optimization_barrier_constant", function(o) o:store(mgpu.optimization_barrier(mgpu.const(3, "f32"))) end, 0 },
    { "test_optimization_barrier_multiple_inputs", function(xr, yr, o)
        local x, c, y = mgpu.optimization_barrier(xr:load(), mgpu.const(5, "f32"), yr:load())
        o:store(x + c + y)
      end, 2 },
  }
  for _, case in ipairs(barrier_cases) do
    diverge(case[1], "new-optimization_barrier", "mgpu has no optimization_barrier", "optimization_barrier", function()
      local k = cls.kernel{ out_shape = mgpu.shape(case[3] == 0 and {} or { 128 }, "f32"), body = case[2] }
      local x = C.normal({ 128 })
      if case[3] == 0 then k() elseif case[3] == 1 then k(x) else k(x, x) end
    end)
  end

  -- RefUnion (SMEM allocations sharing storage) is missing: the aliasing tests diverge.
  diverge("test_smem_aliasing_works_basic", "new-RefUnion", "mgpu has no RefUnion (aliased SMEM)", "RefUnion", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128 }, "f32"), in_specs = { mgpu.BlockSpec{ { 2, 256 } } },
      out_specs = mgpu.BlockSpec{ { 128 }, memory_space = mgpu.GMEM },
      scratch_shapes = { mgpu.RefUnion(mgpu.SMEM({ 2, 256 }, "f32"),
                                       { mgpu.SMEM({ 256 }, "bf16"), { mgpu.SMEM({ 128 }, "f32", { transforms = { T.tiling{ 64 } } }) } }) },
      body = function(x, o, u)
        u[1]:store(x:load() + 1)
        mgpu.commit_smem()
        mgpu.copy_smem_to_gmem(u[2][2][1], o)
      end }
    k(C.normal({ 2, 256 }))
  end)

  diverge("test_smem_aliasing_works_with_subbyte_dtypes", "new-RefUnion", "mgpu has no RefUnion (aliased SMEM) nor u4",
          { "RefUnion", "unknown dtype u4" }, function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 256 }, "u4"), in_specs = { mgpu.BlockSpec{ { 128 } } },
      out_specs = mgpu.BlockSpec{ { 256 }, memory_space = mgpu.GMEM },
      scratch_shapes = { mgpu.RefUnion({ mgpu.SMEM({ 128 }, "i8"), mgpu.SMEM({ 128 }, "i8") },
                                       { mgpu.SMEM({ 2048 }, "u4"), mgpu.SMEM({ 256 }, "u4") }) },
      body = function(x, o, u)
        u[1][2]:store(x:load())
        mgpu.commit_smem()
        mgpu.copy_smem_to_gmem(u[2][2], o)
      end }
    k(C.uniform({ 128 }, "i8", -128, 128))
  end)

  diverge("test_smem_aliasing_works_for_quantization", "new-RefUnion", "mgpu has no RefUnion (aliased SMEM)", "RefUnion", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 64, 256 }, "bf16"), body = function(xg, og)
      mgpu.run_scoped(function(u, bar)
        mgpu.copy_gmem_to_smem(xg, u[2], bar)
        mgpu.barrier_wait(bar)
        u[1]:store(u[2]:load():astype("bf16") * 3)
        mgpu.commit_smem()
        mgpu.copy_smem_to_gmem(u[1], og)
        mgpu.wait_smem_to_gmem(0, { wait_read_only = true })
      end, mgpu.RefUnion(mgpu.SMEM({ 64, 256 }, "bf16", { transforms = default_transforms("bf16") }),
                         mgpu.SMEM({ 64, 256 }, "u8", { transforms = default_transforms("u8", 32) })), mgpu.Barrier{})
    end }
    k(C.uniform({ 64, 256 }, "u8", 0, 4))
  end)

  diverge("test_ref_union_caching", "new-RefUnion", "mgpu has no RefUnion (aliased SMEM)", "RefUnion", function()
    local k = cls.kernel{ out_shape = { mgpu.shape({ 64, 32 }, "f32"), mgpu.shape({ 64, 64 }, "f16") }, body = function(of32, of16)
      local function scope(u)
        local smem = u[1]
        smem:store(mgpu.broadcast(1, smem.shape, smem.dtype))
        mgpu.commit_smem()
        mgpu.copy_smem_to_gmem(smem, smem.dtype == "f32" and of32 or of16)
        mgpu.wait_smem_to_gmem(0)
      end
      mgpu.run_scoped(scope, mgpu.RefUnion(mgpu.SMEM({ 64, 32 }, "f32")))
      mgpu.run_scoped(scope, mgpu.RefUnion(mgpu.SMEM({ 64, 64 }, "f16")))
    end }
    k()
  end)

  for _, union in ipairs({ true, false }) do
    local name = "test_smem_aliased_refs_collision(use_ref_union=" .. tostring(union) .. ")"
    local function body()
      local k = cls.kernel{ out_shape = { mgpu.shape({ 64, 32 }, "f32"), mgpu.shape({ 64, 32 }, "f32") }, body = function(src, o0, o1)
        local function scope(o, aliased)
          local smem = union and aliased[1] or aliased
          smem:store(src:load{ layout = L.WGMMA })
          mgpu.commit_smem()
          mgpu.copy_smem_to_gmem(smem, o)
          mgpu.wait_smem_to_gmem(0)
        end
        for i, sw in ipairs({ 32, 128 }) do
          local alloc = mgpu.SMEM({ 64, 32 }, "f32", { transforms = default_transforms("f32", sw) })
          if union then alloc = mgpu.RefUnion(alloc) end
          mgpu.run_scoped(function(a) scope(i == 1 and o0 or o1, a) end, alloc)
        end
      end }
      local src = C.normal({ 64, 32 })
      local a, b = k(src)
      C.equal(a, C.flat(src), "out0")
      C.equal(b, C.flat(src), "out1")
    end
    if union then diverge(name, "new-RefUnion", "mgpu has no RefUnion (aliased SMEM)", "RefUnion", body) else test(name, body) end
  end

  local small_tys = { "int4", "uint4" }
  local large_tys = { "f8e4m3", "f16", "bf16", "f32", "i8", "i16", "i32" }
  for _, small in ipairs(small_tys) do
    for _, large in ipairs(large_tys) do
      diverge(string.format("test_subbyte_upcast(small_ty=%s, large_ty=%s)", small, large), "new-int4",
              "mgpu has no int4 / uint4 dtypes", small, function()
        local k = cls.kernel{ out_shape = mgpu.shape({ 64, 256 }, large), body = function(x, o)
          o:store(x:load{ layout = L.WGMMA }:astype(large))
        end }
        local x = C.uniform({ 64, 256 }, small, small == "int4" and -8 or 0, small == "int4" and 7 or 15)
        C.equal(k(x), C.flat(x))
      end)
    end
  end

  diverge("test_assigning_to_ref_union_raises", "new-RefUnion", "mgpu has no RefUnion (aliased SMEM)", "RefUnion", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128 }, "f32"), in_specs = { mgpu.BlockSpec{ { 128 } } },
      out_specs = mgpu.BlockSpec{ { 128 }, memory_space = mgpu.GMEM },
      scratch_shapes = { mgpu.RefUnion(mgpu.SMEM({ 128 }, "f32")) },
      body = function(x, o, u) u:store(x:load() + 1) end }
    assert.matches("can't be assigned to", C.err_of(k, C.normal({ 128 })))
  end)

  -- test_nd_loop_with_carry / test_nd_loop: 132 blocks share a (steps, 4, 33) grid round robin.
  local function nd_expected(steps)
    local want = {}
    for st = 0, steps - 1 do for b = 0, 131 do for _ = 1, 128 do want[#want + 1] = 132 * st + b end end end
    return want
  end
  local function clip(i, d) return mgpu.max(mgpu.min(i, d - 1), 0) end
  for _, steps in ipairs({ 1, 2, 3 }) do
    for _, dyn in ipairs({ false, true }) do
      test(string.format("test_nd_loop_with_carry(sm_steps=%d, dynamic_sm_steps=%s)", steps, tostring(dyn)), function()
        local k = cls.kernel{ out_shape = { mgpu.shape({ steps, 132, 128 }, "i32"), mgpu.shape({ 132 }, "i32") },
          grid = { 132 }, grid_names = { "sm" },
          body = function(steps_ref, o, steps_out)
            local n = dyn and steps_ref:at(0):load() or steps
            local count = mgpu.nd_loop({ n, 4, 33 }, { collective_axes = "sm", init_carry = mgpu.const(0, "i32") }, function(info, carry)
              local idx = info.index
              assert(#idx == 3)
              local flat = 0
              for d, size in ipairs({ n, 4, 33 }) do flat = clip(idx[d], size) + flat * size end
              local sm_step = mgpu.div(flat, mgpu.axis_size("sm"))
              o:at(sm_step, mgpu.axis_index("sm")):store(mgpu.broadcast(flat, { 128 }, "i32"))
              return carry + 1
            end)
            steps_out:at(mgpu.axis_index("sm")):store(count)
          end }
        local result, counts = k(mgpu.array({ steps }, "i32"))
        C.equal(counts, C.map(mgpu.zeros({ 132 }, "i32"), function() return steps end), "steps")
        C.equal(result, nd_expected(steps))
      end)
    end
  end

  for _, steps in ipairs({ 1, 2, 3 }) do
    for _, tiling in ipairs({ "None", 1, 2, 4 }) do
      for _, dyn in ipairs({ false, true }) do
        local name = string.format("test_nd_loop(sm_steps=%d, tiling=%s, dynamic_sm_steps=%s)", steps, tostring(tiling), tostring(dyn))
        local tiled = tiling ~= "None" and { steps, tiling, 33 } or nil
        local function body()
          local k = cls.kernel{ out_shape = mgpu.shape({ steps, 132, 128 }, "i32"), grid = { 132 }, grid_names = { "sm" },
            body = function(steps_ref, o)
              local n = dyn and steps_ref:at(0):load() or steps
              mgpu.nd_loop({ n, 4, 33 }, { tiling = tiled, collective_axes = "sm" }, function(info)
                local idx, grid = info.index, { n, 4, 33 }
                if tiled then         -- the tiled grid and index, rebuilt
                  local tidx, sidx = {}, {}
                  for d = 1, 3 do
                    tidx[d], sidx[d] = mgpu.div(idx[d], mgpu.const(tiled[d], "i32")), mgpu.rem(idx[d], mgpu.const(tiled[d], "i32"))
                  end
                  idx = { tidx[1], tidx[2], tidx[3], sidx[1], sidx[2], sidx[3] }
                  grid = { steps / tiled[1], 4 / tiled[2], 1, tiled[1], tiled[2], 33 }
                end
                local flat = 0
                for d, size in ipairs(grid) do flat = clip(idx[d], size) + flat * size end
                local sm_step = mgpu.div(flat, mgpu.axis_size("sm"))
                o:at(sm_step, mgpu.axis_index("sm")):store(mgpu.broadcast(flat, { 128 }, "i32"))
              end)
            end }
          C.equal(k(mgpu.array({ steps }, "i32")), nd_expected(steps))
        end
        test(name, body)
      end
    end
  end

  diverge("test_lowering_error_context", "new-int4", "mgpu has no int4 dtype", "int4", function()
    local x = mgpu.iota({ 127 }, "int4")
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 127 }, "int4"),
      in_specs = { mgpu.BlockSpec{ memory_space = mgpu.GMEM } }, out_specs = mgpu.BlockSpec{ memory_space = mgpu.SMEM },
      scratch_shapes = { mgpu.Barrier{} },
      body = function(xr, yr, bar)
        mgpu.copy_gmem_to_smem(xr, yr, bar)
        mgpu.barrier_wait(bar)
      end }
    assert.matches("PallasCallTest%.lua:%d+:", C.err_of(k, x))
  end)

  -- test_tma_load_multicast: every subset of cluster axes multicasting, of sizes 1, 2, 4, with
  -- other axes of 2 (JAX skips clusters above the H100's nonportable limit of 16).
  local function subsets(axes, min, max)
    local out = {}
    local n = #axes
    for mask = 0, 2 ^ n - 1 do
      local sub, m = {}, mask
      for i = 1, n do
        if m % 2 == 1 then sub[#sub + 1] = axes[i] end
        m = math.floor(m / 2)
      end
      if #sub >= min and #sub <= max then out[#out + 1] = sub end
    end
    table.sort(out, function(a, b)
      if #a ~= #b then return #a < #b end
      return table.concat(a) < table.concat(b)
    end)
    return out
  end
  for _, coll in ipairs(subsets({ "x", "y", "z" }, 1, 3)) do
    local rest = {}
    for _, d in ipairs({ "x", "y", "z" }) do
      local inside = false
      for _, c in ipairs(coll) do inside = inside or c == d end
      if not inside then rest[#rest + 1] = d end
    end
    for _, nonc in ipairs(subsets(rest, 0, 2)) do
      for _, size in ipairs({ 1, 2, 4 }) do
        local cluster = { 1, 1, 1 }
        local pos = { x = 1, y = 2, z = 3 }
        for _, d in ipairs(coll) do cluster[pos[d]] = size end
        for _, d in ipairs(nonc) do cluster[pos[d]] = 2 end
        local total = cluster[1] * cluster[2] * cluster[3]
        local name = string.format("test_tma_load_multicast_%s=%d%s", table.concat(coll), size,
                                   #nonc > 0 and "_" .. table.concat(nonc) or "")
        local function body()
          local csize = 1
          for _, d in ipairs(coll) do csize = csize * cluster[pos[d]] end
          local shape = { total / csize, csize * 8, 64 }
          -- JAX's grid counts blocks (here one cluster's worth), mgpu's counts clusters
          local k = cls.kernel{ out_shape = mgpu.shape(shape, "f16"), grid = { 1, 1, 1 }, grid_names = { "grid_x", "grid_y", "grid_z" },
            cluster = cluster, cluster_names = { "x", "y", "z" },
            scratch_shapes = { mgpu.SMEM({ shape[2], 64 }, "f16", { transforms = default_transforms("f16") }), mgpu.Barrier{} },
            body = function(x, out, s, bar)
              local function cluster_id(axes)
                local idx, stride = 0, 1
                local sorted = { table.unpack(axes) }
                table.sort(sorted)
                for _, d in ipairs(sorted) do
                  idx = idx + mgpu.axis_index(d) * stride
                  stride = stride * mgpu.axis_size(d)
                end
                return idx
              end
              local nidx, cidx = cluster_id(nonc), cluster_id(coll)
              mgpu.copy_gmem_to_smem(x:at(nidx), s, bar, { collective_axes = coll })
              mgpu.barrier_wait(bar)
              mgpu.commit_smem()
              local sl = ds(cidx * 8, 8)
              mgpu.copy_smem_to_gmem(s:at(sl), out:at(nidx, sl, all))
              mgpu.wait_smem_to_gmem(0)
            end }
          local x = C.normal(shape, "f16")
          C.equal(k(x), C.flat(x))
        end
        if total <= 8 then test(name, body)
        elseif total <= 16 then diverge(name, "new-cluster-16", "clusters of more than 8 blocks", "cluster", body) end
      end
    end
  end

  for _, axis in ipairs({ 0, 1 }) do
    test("test_reduction_is_batch_invariant(layout=WGMMA, axis=" .. axis .. ")", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), body = function(x, o)
        o:store(x:load{ layout = L.WGMMA }:sum(axis))
      end }
      local row = C.flat(C.uniform({ 128 }))
      local t = {}
      for r = 0, 127 do for c = 0, 127 do t[r * 128 + c + 1] = axis == 0 and row[r + 1] or row[c + 1] end end
      local got = C.flat(k(mgpu.from_table(t, "f32", { 128, 128 })))
      local sum = 0
      for _, v in ipairs(row) do sum = sum + v end
      C.close({ got[1] }, { sum }, 1e-6)
      C.equal(got, C.map(got, function() return got[1] end), "every row's sum")
    end)
  end

  diverge("test_reduction_fails_on_too_little_scratch_bytes_for_cross_warp_reduction", "new-reduction-scratch",
          "reduction_scratch_bytes = 0 means the default, and a (128, 128) WGMMA column sum needs 16 KiB, not 1 KiB",
          "expected an error", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128 }, "f32"), compiler_params = { reduction_scratch_bytes = 0 },
      body = function(x, y) y:store(x:load{ layout = L.WGMMA }:sum(0)) end }
    assert.matches("PallasCallTest%.lua:%d+: .*reduction.*scratch", C.err_of(k, mgpu.zeros({ 128, 128 }, "f32")))
  end)

  diverge("test_reduction_with_more_scratch_uses_less_synchronization", "new-reduction-scratch",
          "a (128, 128) WGMMA column sum needs 16 KiB of reduction scratch, not 1 KiB", "needs 16384 bytes", function()
    local function run(bytes)
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 128 }, "f32"), compiler_params = { reduction_scratch_bytes = bytes },
        body = function(x, y) y:store(x:load{ layout = L.WGMMA }:sum(0)) end }
      return k
    end
    local x = C.uniform({ 128, 128 })
    local k0, k1 = run(1024), run(2048)
    local out0, out1 = k0(x), k1(x)
    local hx, want = C.flat(x), {}
    for c = 1, 128 do
      want[c] = 0
      for r = 0, 127 do want[c] = want[c] + hx[r * 128 + c] end
    end
    C.close(out0, want, 1e-5)
    C.equal(out1, C.flat(out0))
    local function syncs(k)
      local _, n = k:lower(x).ptx:gsub("bar%.sync", "")
      local _, m = k:lower(x).ptx:gsub("barrier%.sync", "")
      return n + m
    end
    assert.is_true(syncs(k1) < syncs(k0), "2048 bytes of scratch need fewer barriers than 1024")
  end)

  local reduce_layouts = {
    { "WGMMA", L.WGMMA },
    { "TILED(WGMMA as a custom tiling)", L.TILED{ tiling = { { 64, 8 }, { 16, 8 }, { 8, 8 }, { 2 } }, warp_dims = { -7 },
                                                  lane_dims = { -3, -2 }, vector_dim = -1 } },
  }
  local rtol = { f32 = 1e-5, f16 = 2e-3, bf16 = 1e-2, i32 = 0, u32 = 0 }
  for _, lay in ipairs(reduce_layouts) do
    for _, r in ipairs(reducers) do
      for _, dtype in ipairs({ "f32", "f16", "bf16", "i32", "u32" }) do
        test(string.format("test_reduce_with_layout(layout=%s, op=%s, dtype=%s)", lay[1], r[1], dtype), function()
          local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, dtype), body = function(x, y)
            local v = x:load{ layout = lay[2] }
            y:store(v[r[2]](v, 1))
          end }
          local x
          if dtype == "i32" then x = C.uniform({ 128, 128 }, "i32", -8192, 8192)
          elseif dtype == "u32" then x = C.uniform({ 128, 128 }, "u32", 0, 16384)
          else x = C.uniform({ 128, 128 }, dtype) end
          local hx, want = C.flat(x), {}
          for row = 0, 127 do
            local acc
            for c = 1, 128 do local v = hx[row * 128 + c]; acc = acc and r[3](acc, v) or v end
            want[row + 1] = acc
          end
          if dtype:sub(1, 1) == "f" or dtype == "bf16" then
            C.close(k(x), C.round(want, dtype), rtol[dtype], 5e-5)
          else
            C.equal(k(x), C.map(want, function(v) return wrap32(v, dtype) end))
          end
        end)
      end
    end
  end

  for _, axis in ipairs({ 0, 1 }) do
    for _, hint in ipairs({ true, false }) do
      local name = string.format("test_broadcast_in_dim(layout=WGMMA, axis=%d, hint=%s)", axis, tostring(hint))
      local function body()
        local k = cls.kernel{ out_shape = mgpu.shape({ 128, 128 }, "f32"), body = function(x, y)
          local b = x:load{ layout = L.WGMMA:reduce(axis) }:broadcast_in_dim({ 128, 128 }, { 1 - axis })
          if hint then b = mgpu.layout_cast(b, L.WGMMA) end
          y:store(b)
        end }
        local x = C.uniform({ 128 })
        local hx, want = C.flat(x), {}
        for r = 0, 127 do for c = 0, 127 do want[r * 128 + c + 1] = axis == 0 and hx[c + 1] or hx[r + 1] end end
        C.equal(k(x), want)
      end
      test(name, body)
    end
  end

  test("test_broadcast_in_dim_wg_strided_majormost_dim", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 128 }, "f32"), body = function(x, y)
      y:store(x:load{ layout = L.WG_STRIDED({ 128 }, 1) }:broadcast_in_dim({ 64, 128 }, { 1 }))
    end }
    local x = C.uniform({ 128 })
    local hx, want = C.flat(x), {}
    for r = 0, 63 do for c = 1, 128 do want[r * 128 + c] = hx[c] end end
    C.equal(k(x), want)
  end)

  for _, shape in ipairs({ { 4, 128 }, { 2, 4, 128 } }) do
    diverge("test_broadcast_wg_strided_majormost_dim(out_shape=(" .. table.concat(shape, ", ") .. "))", "new-implicit-broadcast",
            "binary ops do not broadcast size-1 dims", "do not match", function()
      local k = cls.pallas_call{ out_shape = mgpu.shape(shape, "f32"), body = function(x, side, y)
        local xs = x:load{ layout = L.WG_STRIDED({ 128 }, 1) }
        local ss = side:load{ layout = L.WG_STRIDED(shape, 1) }
        local unit = {}
        for _ = 1, #shape - 1 do unit[#unit + 1] = 1 end
        unit[#unit + 1] = 128
        y:store(xs:reshape(unit) + ss)
      end }
      local x, side = C.uniform({ 128 }), C.uniform(shape)
      local hx = C.flat(x)
      C.equal(k(x, side), C.round(C.map(side, function(v, i) return v + hx[(i - 1) % 128 + 1] end), "f32"))
    end)
  end

  diverge("test_broadcast_in_dim_size_one_dimension", "new-implicit-broadcast", "broadcast_in_dim does not expand size-1 dims",
          "has size 1 but target dim", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2, 4, 128 }, "f32"), body = function(src, dst)
      dst:store(src:load{ layout = L.WG_STRIDED({ 1, 128 }, 1) }:broadcast_in_dim({ 2, 4, 128 }, { 1, 2 }))
    end }
    local x = C.normal({ 1, 128 })
    local hx = C.flat(x)
    C.equal(k(x), C.map(mgpu.zeros({ 2 * 4 * 128 }, "f32"), function(_, i) return hx[(i - 1) % 128 + 1] end))
  end)

  -- test_copy_layout: a load in each layout stored back unchanged (JAX skips splat, transposed,
  -- TILED and MMA layouts; the tcgen05 ones need Blackwell).
  local copy_layouts = {
    { "wgmma", function() return L.WGMMA end, "f32", 128 },
    { "wgmma_8bit", function() return L.WGMMA_8BIT end, "f32", 128 },
    { "wgmma_upcast_2x", function() return L.WGMMA_UPCAST_2X end, "f8e5m2", 64 },
    { "wgmma_upcast_4x", function() return L.WGMMA_UPCAST_4X end, "f8e5m2", 64 },
    { "wg_strided", function() return L.WG_STRIDED({ 64, 128 }, 2) end, "f32" },
    { "smem_gmem_copy", function() return L.SMEM_GMEM_COPY end, "f32", 128 },
    { "tma_indices", function() return L.TMA_INDICES end, "f32", 128 },
    { "tma_indices_4", function() return L.TMA_INDICES_4 end, "f32", 128 },
  }
  local layout_gaps = { wgmma_upcast_2x = true, wgmma_upcast_4x = true, smem_gmem_copy = true, tma_indices = true, tma_indices_4 = true }
  for _, cl in ipairs(copy_layouts) do
    local function body()
      local ts = cl[4] and { T.tiling{ 8, cl[4] * 8 / (cl[3] == "f32" and 32 or 8) }, T.swizzle(cl[4]) } or {}
      local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 128 }, cl[3]),
        in_specs = { mgpu.BlockSpec{ transforms = ts } }, out_specs = mgpu.BlockSpec{ transforms = ts },
        body = function(x, o) o:store(x:load{ layout = cl[2]() }) end }
      local x = C.normal({ 64, 128 }, cl[3])
      C.equal(k(x), C.flat(x))
    end
    if layout_gaps[cl[1]] then
      diverge("test_copy_layout_" .. cl[1], "new-layouts", "Layout." .. cl[1]:upper() .. " is not provided", "is not provided", body)
    else
      test("test_copy_layout_" .. cl[1], body)
    end
  end

  diverge("test_line_info", "new-line-info", "the PTX has no .file/.loc line info (only comments)", ".file", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), body = function(x, o) o:store(x:load() + x:at(0):load()) end }
    local x = ints({ 256 }, "f32", -1000, 1000)
    local hx = C.flat(x)
    C.equal(k(x), C.map(x, function(v) return v + hx[1] end))
    local ptx = k:lower(x).ptx
    assert(ptx:find(".file", 1, true), "no .file directive in the PTX")
    assert(ptx:find(".loc", 1, true), "no .loc directive in the PTX")
    assert.matches('%.file%s+%d+%s+".*PallasCallTest_conf%.lua"', ptx)
  end)

  diverge("test_e8m0_reciprocal_ptx", "new-e8m0", "mgpu has no f8e8m0 dtype", "e8m0", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 64, 128 }, "f8e8m0"), body = function(x, o) o:store(1 / x:load()) end }
    k(mgpu.iota({ 64, 128 }, "f8e8m0"))
  end)

  test("test_clz_ptx", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 128 }, "i32"), body = function(x, o) o:store(mgpu.clz(x:load())) end }
    local x = C.uniform({ 128 }, "i32", -2 ^ 31, 2 ^ 31)
    C.equal(k(x), C.map(x, clz32))
    assert.matches("clz%.b32", k:lower(x).ptx)
  end)

  test("test_collective_arrival_count", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "i32"), cluster = { 2 }, cluster_names = { "x" },
      scratch_shapes = { mgpu.ClusterBarrier{ collective_axes = { "x" }, num_arrivals = 4 } },
      body = function(dst, bar)
        for _ = 1, 4 do mgpu.barrier_arrive(bar) end
        mgpu.barrier_wait(bar)
        dst:store(mgpu.broadcast(1, { 128 }, "i32"))
      end }
    C.equal(k(), C.map(mgpu.zeros({ 128 }, "i32"), function() return 1 end))
  end)

  diverge("test_leader_tracked_cluster_barrier", "new-leader_tracked", "ClusterBarrier has no leader_tracked", "leader_tracked", function()
    local k = cls.kernel{ out_shape = mgpu.shape({}, "i32"), cluster = { 2 }, cluster_names = { "x" },
      scratch_shapes = { mgpu.ClusterBarrier{ collective_axes = { "x" }, num_arrivals = 1, leader_tracked = true } },
      body = function(dst, bar)
        mgpu.barrier_arrive(bar)
        mgpu.when(mgpu.eq(mgpu.axis_index("x"), 0), function()
          mgpu.barrier_wait(bar)
          dst:store(42)
        end)
      end }
    C.equal(k(), { 42 })
  end)

  for _, axis in ipairs({ "x", "y" }) do
    test("test_cluster_ref_read(axis_name=" .. axis .. ")", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 2, 64, 32 }, "f32"), cluster = axis == "x" and { 2, 1 } or { 1, 2 },
        cluster_names = { "x", "y" },
        scratch_shapes = { mgpu.SMEM({ 64, 32 }, "f32", { transforms = default_transforms("f32") }), mgpu.Barrier{},
                           mgpu.ClusterBarrier{ collective_axes = { axis } } },
        body = function(src, dst, s, copy_bar, cluster_bar)
          local me = mgpu.axis_index(axis)
          mgpu.copy_gmem_to_smem(src:at(me), s, copy_bar)
          mgpu.barrier_wait(copy_bar)
          mgpu.barrier_arrive(cluster_bar)
          mgpu.barrier_wait(cluster_bar)
          dst:at(me):store(mgpu.cluster_ref(s, { [axis] = 1 - me }):load())
        end }
      local x = C.normal({ 2, 64, 32 })
      local hx = C.flat(x)
      C.equal(k(x), C.concat({ table.unpack(hx, 2049, 4096) }, { table.unpack(hx, 1, 2048) }))
    end)
  end

  test("test_cluster_ref_write", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2, 64, 32 }, "f32"), cluster = { 2 }, cluster_names = { "c" },
      scratch_shapes = { mgpu.SMEM({ 64, 32 }, "f32", { transforms = default_transforms("f32") }), mgpu.Barrier{ num_arrivals = 1 } },
      body = function(x, o, s, bar)
        local me = mgpu.axis_index("c")
        local v = x:at(me):load{ layout = L.WGMMA }
        mgpu.async_store_smem(v, s, bar, { cluster_idx = 1 - me, cluster_dim = "c" })
        mgpu.barrier_wait(bar)
        o:at(me):store(s:load{ layout = L.WGMMA })
      end }
    local t = {}
    for i = 1, 2 * 64 * 32 do t[i] = i - 1 end
    local x = mgpu.from_table(t, "f32", { 2, 64, 32 })
    C.equal(k(x), C.concat({ table.unpack(t, 2049, 4096) }, { table.unpack(t, 1, 2048) }))
  end)

  test("test_cluster_ref_write_atomic", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2, 64, 32 }, "i32"), cluster = { 2 }, cluster_names = { "c" },
      scratch_shapes = { mgpu.SMEM({ 64, 32 }, "i32", { transforms = default_transforms("i32") }),
                         mgpu.ClusterBarrier{ collective_axes = { "c" }, num_arrivals = 1 },
                         mgpu.Barrier{ num_arrivals = 1 }, mgpu.Barrier{ num_arrivals = 1 } },
      body = function(x, init, o, s, cluster_bar, init_bar, store_bar)
        local me = mgpu.axis_index("c")
        mgpu.copy_gmem_to_smem(init:at(me), s, init_bar)
        mgpu.barrier_wait(init_bar)
        mgpu.barrier_arrive(cluster_bar)
        mgpu.barrier_wait(cluster_bar)
        local v = x:at(me):load{ layout = L.WGMMA }
        mgpu.async_store_smem(v, s, store_bar, { cluster_idx = 1 - me, cluster_dim = "c", atomic = "add" })
        mgpu.barrier_wait(store_bar)
        o:at(me):store(s:load{ layout = L.WGMMA })
      end }
    local t, want = {}, {}
    for i = 1, 2 * 64 * 32 do t[i] = i - 1 end
    for i = 1, 4096 do want[i] = 10 + t[i <= 2048 and i + 2048 or i - 2048] end
    C.equal(k(mgpu.from_table(t, "i32", { 2, 64, 32 }), mgpu.full({ 2, 64, 32 }, 10, "i32")), want)
  end)

  test("test_replicated_layout", function()
    local k = cls.pallas_call{ out_shape = mgpu.shape({ 32 }, "f32"), body = function(src, dst)
      dst:store(src:load{ layout = L.TILED{ tiling = { { 32 }, { 1 } }, warp_dims = { mgpu.Replicated(4) }, lane_dims = { -2 },
                                            vector_dim = -1 } })
    end }
    local x = C.normal({ 32 })
    C.equal(k(x), C.flat(x))
  end)

  for _, dtype in ipairs({ "f32", "i32" }) do
    for _, lay in ipairs({ "WGMMA", "None" }) do
      diverge(string.format("test_atomic_add(dtype=%s, layout=%s)", dtype, lay), "new-smem-atomics",
              "atomic_add of an array into an SMEM ref", "atomic", function()
        local layout = lay == "WGMMA" and L.WGMMA or nil
        local k = cls.kernel{ out_shape = mgpu.shape({ 128, 64 }, dtype), num_threads = 2, thread_name = "wg",
          scratch_shapes = { mgpu.SMEM({ 128, 64 }, dtype, { transforms = layout and default_transforms(dtype, 64) or {} }),
                             mgpu.Barrier{ num_arrivals = 2 } },
          body = function(inp, out, s, bar)
            local wg = mgpu.axis_index("wg")
            mgpu.when(mgpu.eq(wg, 0), function()
              local z = mgpu.broadcast(0, { 128, 64 }, dtype)
              s:store(layout and mgpu.layout_cast(z, layout) or z)
            end)
            mgpu.barrier_arrive(bar)
            mgpu.barrier_wait(bar)
            mgpu.atomic_add(s, inp:at(ds(wg * 128, 128)):load(layout and { layout = layout } or nil))
            mgpu.barrier_arrive(bar)
            mgpu.barrier_wait(bar)
            mgpu.when(mgpu.eq(wg, 0), function() out:store(s:load()) end)
          end }
        local inp = ints({ 256, 64 }, dtype, -1000, 1000)
        local h = C.flat(inp)
        C.equal(k(inp), C.map(mgpu.zeros({ 128 * 64 }, "f32"), function(_, i) return h[i] + h[i + 128 * 64] end))
      end)
    end
  end

  diverge("test_griddepcontrol", "new-griddepcontrol", "mgpu has no griddepcontrol_wait / launch_dependents (PDL is automatic)",
          "griddepcontrol", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), body = function(x, o)
      mgpu.griddepcontrol_wait()
      o:store(x:load() + 1.0)
      mgpu.griddepcontrol_launch_dependents()
    end }
    k(C.normal({ 128 }))
  end)

  diverge("test_griddepcontrol_multi_kernel", "new-griddepcontrol", "mgpu has no griddepcontrol_wait / launch_dependents",
          "griddepcontrol", function()
    local a = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), body = function(x, o)
      o:store(x:load() + 1.0)
      mgpu.griddepcontrol_launch_dependents()
    end }
    local b = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), body = function(x, o)
      mgpu.griddepcontrol_wait()
      o:store(x:load() * 2.0)
    end }
    local x = ints({ 128 }, "f32", -1000, 1000)
    C.equal(b(a(x)), C.map(x, function(v) return (v + 1) * 2 end))
  end)

  for _, dtype in ipairs({ "bf16", "f16", "f8e4m3", "f8e5m2", "i8", "int4" }) do
    diverge("test_mma(dtype=" .. dtype .. ")", "new-mma", "mgpu has no mma (mma.sync) nor Layout.MMA_*", "MMA_", function()
      local acc_dt = dtype:find("^i") and "i32" or "f32"
      local k = cls.kernel{ out_shape = mgpu.shape({ 128, 8 }, acc_dt), body = function(a, b, o)
        local acc = mgpu.layout_cast(mgpu.broadcast(0, { 128, 8 }, acc_dt), L.MMA_ACC)
        o:store(mgpu.mma(acc, a:load{ layout = L.MMA_LHS }, mgpu.transpose_ref(b, { 1, 0 }):load{ layout = L.MMA_RHS }))
      end }
      k(C.uniform({ 128, 128 }, "f32"), C.uniform({ 8, 128 }, "f32"))
    end)
  end
end
