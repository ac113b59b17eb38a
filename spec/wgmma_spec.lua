-- wgmma operands: i8/u8 with an i32 accumulator, mixed f8e4m3 x f8e5m2, 8-bit A from
-- registers (Layout.WGMMA_8BIT), the errors naming the dtype and shape rules, and the PTX.
-- Numerics against a double-precision reference are the wgmma/ cases of
-- spec/support/cases.lua (run by ops_spec here, on the GPU by tools/run_cases.lua).
local mgpu = require "mgpu"
local T = mgpu.transforms
local err_of = dofile("spec/support/util.lua").err_of

-- acc (M, N) += A (M, K) @ B (K, N) with B stored (N, K) and transposed (K-major) unless
-- o.bmn; o.areg loads A into registers in layout o.areg.
local function mm(adt, bdt, acc, o)
  o = o or {}
  local M, N, K = o.M or 64, o.N or 64, o.K or 128
  local function xf(dt)
    if o.plain then return nil end
    local bytes = ({ bf16 = 2, f16 = 2, f32 = 4 })[dt] or 1
    return { transforms = { T.tiling{ 8, math.floor(128 / bytes) }, T.swizzle(128) } }
  end
  return mgpu.kernel{
    out_shape = mgpu.shape({ M, N }, acc),
    scratch_shapes = { mgpu.SMEM({ M, K }, adt, xf(adt)), mgpu.SMEM(o.bmn and { K, N } or { N, K }, bdt, xf(bdt)) },
    body = function(c, a, b)
      if not o.bmn then b = mgpu.transpose_ref(b, { 1, 0 }) end
      if o.areg then a = a:load{ layout = o.areg } end
      mgpu.run_scoped(function(r)
        mgpu.wgmma(r, a, b)
        c:store(r:load())
      end, mgpu.ACC({ M, N }, acc))
    end,
  }
end

describe("wgmma operand rules", function()
  it("names the dtype rule at the script line", function()
    assert.matches("wgmma_spec.lua:%d+: wgmma: an i8 A needs an i8 or u8 B and an i32 accumulator, not B f8e4m3",
                   err_of(mm("i8", "f8e4m3", "i32")))
    assert.matches("wgmma_spec.lua:%d+: wgmma: an u8 A needs an i8 or u8 B and an i32 accumulator, not B u8 and a f32 accumulator",
                   err_of(mm("u8", "u8", "f32")))
    assert.matches("wgmma: an i32 accumulator needs i8 or u8 operands", err_of(mm("bf16", "bf16", "i32", { K = 64 })))
    assert.matches("wgmma: operand dtypes bf16 and f16 are not supported", err_of(mm("bf16", "f16", "f32", { K = 64 })))
    assert.matches("wgmma: A from registers must be 16%- or 8%-bit, not f32",
                   err_of(mm("f32", "f32", "f32", { K = 32, areg = mgpu.Layout.WGMMA })))
    assert.matches("ACC: dtype must be f32, f16 or i32", err_of(function() return mgpu.ACC({ 64, 64 }, "i16") end))
  end)

  it("names the shape rules", function()
    assert.matches("wgmma_spec.lua:%d+: wgmma: N = 40 is not a width wgmma has for 8%-bit integer operands: N must be 8, 24 or a multiple of 16",
                   err_of(mm("i8", "i8", "i32", { N = 40 })))
    assert.matches("wgmma_spec.lua:%d+: wgmma: K = 48 must be a multiple of 32 for f8e4m3 operands",
                   err_of(mm("f8e4m3", "f8e4m3", "f32", { K = 48, plain = true })))
    assert.matches("ACC: N must be a multiple of 8", err_of(mm("bf16", "bf16", "f32", { N = 12, K = 64, plain = true })))
    -- 8-bit operands must be K-major: B stored (K, N) is N-major
    assert.matches("wgmma: 8%-bit operands must be K%-major %(B transposed",
                   err_of(mm("i8", "i8", "i32", { bmn = true, N = 128 })))
    assert.matches("wgmma: 8%-bit operands must be K%-major %(B transposed",
                   err_of(mm("f8e4m3", "f8e5m2", "f32", { bmn = true, N = 128 })))
  end)

  it("runs i8, u8 and mixed operands in the interpreter", function()
    local t = {}
    for i = 0, 63 do for kk = 0, 127 do t[#t + 1] = (i + kk) % 7 - 3 end end
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 64, 64 }, "i32"),
      scratch_shapes = { mgpu.SMEM({ 64, 128 }, "i8", { transforms = { T.tiling{ 8, 128 }, T.swizzle(128) } }),
                         mgpu.SMEM({ 64, 128 }, "u8", { transforms = { T.tiling{ 8, 128 }, T.swizzle(128) } }) },
      body = function(a, b, c, as, bs)
        as:store(a:load()); bs:store(b:load())
        mgpu.commit_smem()
        mgpu.run_scoped(function(r)
          mgpu.wgmma(r, as:load{ layout = mgpu.Layout.WGMMA_8BIT }, mgpu.transpose_ref(bs, { 1, 0 }))
          c:store(r:load())
        end, mgpu.ACC({ 64, 64 }, "i32"))
      end,
    }
    local c = k(mgpu.from_table(t, "i8", { 64, 128 }), mgpu.full({ 64, 128 }, 200, "u8"))   -- B: every element 200
    local want = 0
    for kk = 0, 127 do want = want + ((2 + kk) % 7 - 3) * 200 end
    assert.are.equal(want, c:get(3, 9))
  end)
end)

describe("wgmma PTX", function()
  local function ptx(...)
    return mm(...):lower().ptx
  end

  it("emits s32 += s8/u8 without scale immediates", function()
    local p = ptx("i8", "i8", "i32")
    assert.matches("wgmma%.mma_async%.sync%.aligned%.m64n64k32%.s32%.s8%.s8 {%%r%d+, ", p)
    assert.matches("}, %%rd%d+, %%rd%d+, %%p%d+;", p)
    assert.matches("%.version 8%.0", p)
    -- s8 x u8 needs PTX ISA 8.4
    p = ptx("i8", "u8", "i32", { N = 48 })
    assert.matches("m64n48k32%.s32%.s8%.u8", p)
    assert.matches("%.version 8%.4", p)
  end)

  it("reads an accumulator while a later wgmma into another one runs", function()
    local xf = { transforms = { T.tiling{ 8, 64 }, T.swizzle(128) } }
    local function two(between)
      return mgpu.kernel{
        out_shape = { mgpu.shape({ 64, 64 }, "f32"), mgpu.shape({ 64, 64 }, "f32") }, grid = { 2 },
        scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", xf), mgpu.SMEM({ 64, 64 }, "bf16", xf) },
        body = function(x, y, a, b)
          mgpu.run_scoped(function(s, o)
            mgpu.wgmma(s, a, mgpu.transpose_ref(b, { 1, 0 }))
            mgpu.wgmma(o, a, b)
            if between then between() end
            x:store(s:load())   -- s's wgmma is done while o's may still run
            y:store(o:load())
          end, mgpu.ACC({ 64, 64 }, "f32"), mgpu.ACC({ 64, 64 }, "f32"))
        end,
      }:lower().ptx
    end
    local p = two()
    local w = {}
    for n in p:gmatch("wgmma%.wait_group%.sync%.aligned (%d+);") do w[#w + 1] = tonumber(n) end
    assert.are.same({ 1, 0 }, w)
    -- an explicit wait that already completed s's group: no second wait for it (Pallas'
    -- test_wgmma_accumulator_load_with_custom_wait: exactly the waits the script asks for)
    p = two(function() mgpu.wgmma_wait(1) end)
    w = {}
    for n in p:gmatch("wgmma%.wait_group%.sync%.aligned (%d+);") do w[#w + 1] = tonumber(n) end
    assert.are.same({ 1, 0 }, w)
    p = two(function() mgpu.wgmma_wait(2) end)   -- (this one leaves it possibly in flight)
    w = {}
    for n in p:gmatch("wgmma%.wait_group%.sync%.aligned (%d+);") do w[#w + 1] = tonumber(n) end
    assert.are.same({ 2, 1, 0 }, w)
    -- a nested region between: every group waited for
    p = two(function() mgpu.when(mgpu.eq(mgpu.program_id(0), 0), function() end) end)
    assert.is_nil(p:find("wgmma%.wait_group%.sync%.aligned [1-9]"))
  end)

  it("emits mixed f8 types and 8-bit A from registers", function()
    assert.matches("m64n64k32%.f32%.e4m3%.e5m2 {", ptx("f8e4m3", "f8e5m2", "f32"))
    assert.matches("m64n64k32%.f16%.e5m2%.e4m3 {", ptx("f8e5m2", "f8e4m3", "f16"))
    local p = ptx("i8", "i8", "i32", { areg = mgpu.Layout.WGMMA_8BIT })
    assert.matches("prmt%.b32 %%r%d+, %%r%d+, %%r%d+, 21520;", p)   -- 4 bytes per A register
    assert.matches("m64n64k32%.s32%.s8%.s8 {[^}]*}, {%%r%d+, %%r%d+, %%r%d+, %%r%d+}, %%rd%d+, %%p%d+;", p)
    p = ptx("f8e4m3", "f8e5m2", "f32", { areg = mgpu.Layout.WGMMA_8BIT })
    assert.matches("m64n64k32%.f32%.e4m3%.e5m2 {[^}]*}, {%%r%d+, %%r%d+, %%r%d+, %%r%d+}, %%rd%d+, %%p%d+, 1, 1;", p)
  end)
end)

describe("wgmma operand races (interpreter)", function()
  local xf = { transforms = { T.tiling{ 8, 64 }, T.swizzle(128) } }
  local function kernel(wait_first, overwrite)
    return mgpu.kernel{
      out_shape = mgpu.shape({ 64, 64 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", xf), mgpu.SMEM({ 64, 64 }, "bf16", xf), mgpu.Barrier{ num_arrivals = 2 } },
      body = function(a, b, o, as, bs, bar)
        mgpu.copy_gmem_to_smem(a, as, bar)
        mgpu.copy_gmem_to_smem(b, bs, bar)
        mgpu.barrier_wait(bar)
        mgpu.run_scoped(function(acc)
          mgpu.wgmma(acc, as, bs)
          if wait_first then mgpu.wgmma_wait(0) end
          overwrite(a, as, bar)
          mgpu.wgmma_wait(0)
          o:store(acc:load())
        end, mgpu.ACC({ 64, 64 }, "f32"))
      end }
  end
  local a, b = mgpu.random.normal({ 64, 64 }, "bf16"), mgpu.random.normal({ 64, 64 }, "bf16")

  it("reports a TMA load into an operand of a wgmma still in flight", function()
    local k = kernel(false, function(x, s, bar)
      mgpu.copy_gmem_to_smem(x, s, bar)
      mgpu.barrier_wait(bar)
    end)
    assert.matches("wgmma_spec.lua:%d+: copy_gmem_to_smem writes SMEM that the wgmma at spec/wgmma_spec.lua:%d+ is still reading",
                   err_of(k, a, b))
  end)

  it("reports a register store into one, and accepts both after wgmma_wait", function()
    local store = function(_, s) s:store(mgpu.broadcast(0.0, { 64, 64 }, "bf16")) end
    assert.matches("the SMEM store writes SMEM that the wgmma at spec/wgmma_spec.lua:%d+ is still reading",
                   err_of(kernel(false, store), a, b))
    local out = kernel(true, store)(a, b)
    assert.is_true(mgpu.host.relerr(out, mgpu.host.matmul(mgpu.host.from(a), mgpu.host.from(b))) < 1e-5)
  end)
end)
