-- SMEM scratch: allocation plans, transforms, automatic barriers, bank
-- conflicts of the lowering, and the errors users meet.  (Numerical
-- round trips through every transform are cases in spec/support/cases.lua.)
local mgpu = require "mgpu"
local T = mgpu.transforms

local err_of = dofile("spec/support/util.lua").err_of

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

-- A kernel copying x through one scratch buffer with the given transforms and layout.
local function through(shape, dtype, xf, layout, params)
  return mgpu.kernel{
    out_shape = mgpu.shape(shape, dtype), compiler_params = params,
    scratch_shapes = { mgpu.SMEM(shape, dtype, { transforms = xf }) },
    body = function(x, o, s)
      s:store(x:load{ layout = layout })
      o:store(s:load{ layout = layout })
    end,
  }
end

describe("SMEM", function()
  it("finds swizzles like Pallas", function()
    assert.are.equal(128, mgpu.find_swizzle(64 * 16))
    assert.are.equal(64, mgpu.find_swizzle(32 * 16))
    assert.are.equal(32, mgpu.find_swizzle(16 * 16))
    assert.are.equal(16, mgpu.find_swizzle(8 * 16))
    assert.are.equal(128, mgpu.find_swizzle(192 * 16))
  end)

  it("aligns every allocation to 1024 bytes and reuses scoped space", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 256 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 100 }, "f32") },             -- 400 bytes -> 1024
      body = function(x, o, s)
        s:store(x:at(mgpu.ds(0, 100)):load())
        local a = mgpu.run_scoped(function(t) t:store(x:load() + 1.0); return t:load() end, mgpu.SMEM({ 256 }, "f32"))
        local b = mgpu.run_scoped(function(t) t:at(1):store(a); return t:at(1):load() end, mgpu.SMEM({ 2, 256 }, "f32"))
        o:store(b)
      end,
    }
    local low = k:lower(mgpu.zeros(256))
    -- 1024 (s) + max(1024, 2048): the two scopes share their bytes
    assert.are.equal(1024 + 2048, low.resources.smem_bytes)
    assert.matches("smem_alloc %[11, 100%]", low.ir)
    assert.matches("scoped : f32%[256%]", low.ir)
  end)

  it("names every live allocation when over the limit", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 64 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 256, 220 }, "f32"), mgpu.SMEM({ 64, 64 }, "bf16") },
      body = function(x, o, s, t)
        mgpu.run_scoped(function(u) u:store(1.0) end, mgpu.SMEM({ 10, 10 }, "f32"))
        o:store(x:load())
      end,
    }
    local err = err_of(k, mgpu.zeros(64))
    assert.matches("smem_spec.lua:%d+: kernel 'kernel' needs %d+ bytes of SMEM but a block may have 232448", err)
    assert.matches("smem_spec.lua:%d+: SMEM f32%[256,220%]: 225280 bytes", err)
    assert.matches("SMEM bf16%[64,64%]: 8192 bytes", err)
    assert.matches("SMEM f32%[10,10%]: 400 bytes %(1024 with 1024%-byte alignment%)", err)
  end)

  it("refuses a swizzle that does not match the minor dimension", function()
    local k = through({ 64, 64 }, "f32", { T.tiling{ 8, 64 }, T.swizzle(128) })
    local err = err_of(k, mgpu.zeros({ 64, 64 }))
    assert.matches("smem_spec.lua:%d+: SMEM f32%[64,64%] with transforms tiling%(8,64%);swizzle%(128%): swizzle%(128%) "
                   .. "needs a minor dimension of exactly 128 bytes, but it has 256", err)
  end)

  it("refuses bad transforms and views", function()
    assert.matches("smem_spec.lua:%d+: swizzle must be 16, 32, 64 or 128 bytes, got 48", err_of(T.swizzle, 48))
    local k = through({ 64, 64 }, "f32", { T.tiling{ 7, 8 } })
    assert.matches("tile size 7 does not divide dimension 0 of size 64", err_of(k, mgpu.zeros({ 64, 64 })))
    assert.matches("transforms%[1%] must be", err_of(mgpu.SMEM, { 4 }, "f32", { transforms = { "swizzle" } }))
    local v = mgpu.kernel{ out_shape = mgpu.shape({ 64 }, "f32"), scratch_shapes = { mgpu.SMEM({ 64 }, "f32") },
      body = function(x, o, s) s:at(mgpu.ds(32, 64)):store(1.0) end }
    assert.matches("smem_spec.lua:%d+: ds%(32, 64%) runs past dimension 0 of size 64", err_of(v, mgpu.zeros(64)))
    local esc = mgpu.kernel{ out_shape = mgpu.shape({ 64 }, "f32"),
      body = function(x, o) mgpu.run_scoped(function(u) return u end, mgpu.SMEM({ 64 }, "f32")) end }
    assert.matches("smem_spec.lua:%d+: run_scoped: result 1 is a ref", err_of(esc, mgpu.zeros(64)))
    assert.matches("scratch_shapes%[1%] must be mgpu.SMEM", err_of(mgpu.kernel, { out_shape = mgpu.shape({ 1 }),
      scratch_shapes = { 3 }, body = function() end }))
  end)

  it("refuses unsupported layout casts and reductions over missing axes", function()
    local splat = mgpu.kernel{ out_shape = mgpu.shape({ 64, 64 }, "f32"),
      body = function(x, o) o:store(mgpu.layout_cast(x:load(), mgpu.Layout.WG_SPLAT)) end }
    assert.matches("smem_spec.lua:%d+: layout inference failed: layout WG_SPLAT .* only arrays broadcast from a scalar",
                   err_of(splat, mgpu.zeros({ 64, 64 })))
    local wg = mgpu.kernel{ out_shape = mgpu.shape({ 60, 64 }, "f32"),
      body = function(x, o) o:store(mgpu.layout_cast(x:load(), mgpu.Layout.WGMMA)) end }
    assert.matches("smem_spec.lua:%d+: layout_cast: layout wgmma does not fit f32%[60,64%]", err_of(wg, mgpu.zeros({ 60, 64 })))
    local red = mgpu.kernel{ out_shape = mgpu.shape({ 64 }, "f32"), body = function(x, o) o:store(x:load():sum(2)) end }
    assert.matches("smem_spec.lua:%d+: reduce_sum: axis 2 does not exist in f32%[64,64%]", err_of(red, mgpu.zeros({ 64, 64 })))
  end)

  it("moves WGMMA and strided arrays without bank conflicts", function()
    for _, c in ipairs({
      { "bf16", { T.tiling{ 8, 64 }, T.swizzle(128) }, mgpu.Layout.WGMMA },
      { "bf16", { T.tiling{ 8, 32 }, T.swizzle(64) }, mgpu.Layout.WGMMA },
      { "f16", { T.tiling{ 8, 16 }, T.swizzle(32) }, mgpu.Layout.WGMMA },
      { "f32", { T.tiling{ 8, 8 }, T.swizzle(32) }, mgpu.Layout.WGMMA },
      { "bf16", { T.tiling{ 8, 64 }, T.swizzle(128) }, nil },
      { "f32", {}, nil },
      { "bf16", {}, nil },
    }) do
      local ptx = through({ 64, 128 }, c[1], c[2], c[3]):lower(mgpu.zeros({ 64, 128 }, c[1])).ptx
      assert.are.equal(2, count(ptx, "bank conflicts: none"))
      if not c[3] then assert.matches("smem load [^\n]*: 16%-byte accesses", ptx) end
    end
    -- and says so when there are some (f32 fragments against a 128-byte swizzle: 2-way)
    local ptx = through({ 64, 128 }, "f32", { T.tiling{ 8, 32 }, T.swizzle(128) }, mgpu.Layout.WGMMA)
                :lower(mgpu.zeros({ 64, 128 })).ptx
    assert.matches("bank conflicts: yes %(512 wavefronts for 256%)", ptx)
  end)

  it("inserts warpgroup barriers around stores unless told not to", function()
    local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }
    local ptx = through({ 64, 64 }, "bf16", xf):lower(mgpu.zeros({ 64, 64 }, "bf16")).ptx
    assert.are.equal(1, count(ptx, "bar%.sync"))        -- after the store; nothing was read before it
    local k2 = mgpu.kernel{ out_shape = mgpu.shape({ 64 }, "f32"), scratch_shapes = { mgpu.SMEM({ 64 }, "f32") },
      body = function(x, o, s) s:store(x:load()); s:store(s:load() + 1.0); o:store(s:load()) end }
    ptx = k2:lower(mgpu.zeros(64)).ptx
    assert.are.equal(3, count(ptx, "bar%.sync"))        -- after, before (a read happened) and after the second store
    local raw = through({ 64, 64 }, "bf16", xf, nil, mgpu.CompilerParams{ unsafe_no_auto_barriers = true })
    assert.are.equal(0, count(raw:lower(mgpu.zeros({ 64, 64 }, "bf16")).ptx, "bar%.sync"))
    -- a store straight before commit_smem: the commit's fence and barrier order it, alone; a store
    -- with other work before the commit keeps its own barrier
    local function committed(between)
      return mgpu.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), scratch_shapes = { mgpu.SMEM({ 128 }, "f32") },
        body = function(x, o, s)
          s:store(x:load() * 2.0)
          if between then between(o) end
          mgpu.commit_smem()
          mgpu.copy_smem_to_gmem(s, o)
          mgpu.wait_smem_to_gmem(0)
        end }:lower(mgpu.zeros(128)).ptx
    end
    local ptx3 = committed()
    assert.matches("st%.shared[^\n]*\n[^\n]*smem store[^\n]*\n[^\n]*\n\tfence%.proxy%.async%.shared::cta;\n\tbar%.sync", ptx3)
    assert.are.equal(2, count(ptx3, "bar%.sync"))        -- the commit's and the wait's
    local ptx4 = committed(function(o) o:at(mgpu.ds(0, 1)):store(mgpu.broadcast(1.0, { 1 }, "f32")) end)
    assert.are.equal(3, count(ptx4, "bar%.sync"))        -- the store's too: an instruction came between
  end)

  it("computes swizzled addresses once per thread", function()
    local ptx = through({ 64, 64 }, "bf16", { T.tiling{ 8, 64 }, T.swizzle(128) }, mgpu.Layout.WGMMA)
                :lower(mgpu.zeros({ 64, 64 }, "bf16")).ptx
    -- one full swizzle per access (an XOR of two registers), XORs with constants for the other chunks:
    -- the load's 8 16-byte chunks, the store's 4 stmatrix instructions
    assert.are.equal(2, count(ptx, "xor%.b32 %%r%d+, %%r%d+, %%r%d+;"))
    assert.are.equal(7 + 3, count(ptx, "xor%.b32 %%r%d+, %%r%d+, %d+;"))
  end)

  it("stores 16-bit WGMMA fragments with stmatrix, other arrays element by element", function()
    local function store_of(shape, dtype, xf, layout)
      local ptx = through(shape, dtype, xf, layout):lower(mgpu.zeros(shape, dtype)).ptx
      return ptx:match("// smem store [^\n]*"), count(ptx, "stmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16 %[")
    end
    local c, n = store_of({ 64, 256 }, "bf16", { T.tiling{ 8, 64 }, T.swizzle(128) }, mgpu.Layout.WGMMA)
    assert.matches("stmatrix, 16 instructions, bank conflicts: none", c, 1, true)
    assert.are.equal(16, n)   -- four 8x8 matrices each: 64 x 256 / 128 threads / 2 per register / 4
    c, n = store_of({ 128, 64 }, "f16", { T.tiling{ 8, 16 }, T.swizzle(32) }, mgpu.Layout.WGMMA)
    assert.matches("stmatrix, 8 instructions, bank conflicts: none", c, 1, true)
    assert.are.equal(8, n)
    -- f32 fragments and 16-bit arrays in a strided layout: plain stores
    for _, t in ipairs({ { { 64, 64 }, "f32", { T.tiling{ 8, 32 }, T.swizzle(128) }, mgpu.Layout.WGMMA },
                         { { 64, 64 }, "bf16", { T.tiling{ 8, 64 }, T.swizzle(128) } } }) do
      c, n = store_of(t[1], t[2], t[3], t[4])
      assert.are.equal(0, n)
      assert.matches("byte accesses", c, 1, true)
    end
  end)
end)
