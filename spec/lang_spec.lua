-- The kernel language's views and loops: Layout.WGMMA_TRANSPOSED through transposed SMEM refs,
-- ref:reshape of SMEM refs, and refs carried by loops.  Numerics against double-precision
-- references are the cases of spec/support/lang_cases.lua (here in the interpreter, on the GPU
-- by tools/run_cases.lua); this spec adds what the PTX must look like and the errors.
local mgpu = require "mgpu"
local cases = dofile("spec/support/lang_cases.lua")
local util = dofile("spec/support/util.lua")
local err_of = util.err_of
local T = mgpu.transforms
local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }

-- The error lowering a one-block kernel with this body and scratch raises.
local function lower_err(body, scratch)
  local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }, "f32"), scratch_shapes = scratch, body = body }
  return err_of(k.lower, k, mgpu.abstract({ 64, 64 }, "bf16"))
end

describe("kernel language", function()
  util.case_specs(it, cases)

  describe("Layout.WGMMA_TRANSPOSED", function()
    local function transposed_ptx(layout)
      local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 128, 64 }, "bf16"),
        scratch_shapes = { mgpu.SMEM({ 64, 128 }, "bf16", { transforms = xf }) },
        body = function(x, o, s) o:store(mgpu.transpose_ref(s, { 1, 0 }):load{ layout = layout }) end }
      return k:lower(mgpu.abstract({ 1 }, "f32")).ptx
    end

    it("moves 32-bit words through a transposed swizzled ref, without bank conflicts", function()
      assert.matches("smem load &smem bf16%[128,64%]: 4%-byte accesses, 32 instructions, bank conflicts: none",
                     transposed_ptx(mgpu.Layout.WGMMA_TRANSPOSED))
      -- the WGMMA layout's pairs run along the strided dim there: 16-bit accesses
      assert.matches("smem load &smem bf16%[128,64%]: 2%-byte accesses", transposed_ptx(mgpu.Layout.WGMMA))
    end)

    it("is a layout of its own: mixing it with WGMMA names both", function()
      local err = lower_err(function(x, o, s)
        local y = mgpu.transpose_ref(s, { 1, 0 }):load{ layout = mgpu.Layout.WGMMA_TRANSPOSED }
        mgpu.run_scoped(function(acc) mgpu.wgmma(acc, y, s); o:store(acc:load()) end, mgpu.ACC({ 64, 64 }, "f32"))
      end, { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }) })
      assert.matches("lang_spec.lua:%d+: layout inference failed: .*must have layout WGMMA %(asked for at .*lang_spec.lua:%d+%) "
                     .. "and layout WGMMA_TRANSPOSED %(asked for at .*lang_spec.lua:%d+%)", err)
    end)
  end)

  describe("ref:reshape", function()
    local scratch = { mgpu.SMEM({ 3, 2, 64, 64 }, "bf16", { transforms = xf }) }
    local function reshape_err(fn, sc) return lower_err(function(x, o, s) fn(s, o) end, sc or scratch) end

    it("names the dim of the new shape that would change the tiled dims or split a tile", function()
      assert.matches("lang_spec.lua:%d+: reshape: dim 1 of the new shape {6, 4096} changes the tiled dims {64} of "
                     .. "{3, 2, 64, 64}: only the first tiled dim may be merged or split, with the leading dims",
                     reshape_err(function(s) s:reshape({ 6, 4096 }) end))
      assert.matches("reshape: dim 2 of the new shape {3, 64, 128} changes the tiled dims {64}",
                     reshape_err(function(s) s:reshape({ 3, 64, 128 }) end))
      assert.matches("lang_spec.lua:%d+: reshape: dim 1 of the new shape {96, 4, 64} is 4, not a multiple of the tiling's 8 "
                     .. "%(tiles stay whole%)", reshape_err(function(s) s:reshape({ 96, 4, 64 }) end))
      assert.matches("reshape: the ref starts at row 4 of its buffer, inside a tile of 8 rows",
                     reshape_err(function(s) s:reshape({ 384, 64 }):at(mgpu.ds(4, 16)):reshape({ 16, 64 }) end))
      assert.matches("with several tilings only the leading, untiled dims may be merged or split",
                     reshape_err(function(s) s:reshape({ 128, 64 }) end,
                                 { mgpu.SMEM({ 2, 64, 64 }, "f32", { transforms = { T.tiling{ 8, 32 }, T.tiling{ 4, 8 } } }) }))
    end)

    it("merges and splits the first tiled dim in whole tiles", function()
      local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }, "f32"), scratch_shapes = scratch,
        body = function(x, o, s)
          o:at(mgpu.ds(0, 8), mgpu.all):store(s:reshape({ 384, 64 }):at(mgpu.ds(8, 16)):reshape({ 2, 8, 64 }):at(1):load():astype("f32"))
          o:at(mgpu.ds(8, 8), mgpu.all):store(s:at(1):reshape({ 2, 64, 64 }):reshape({ 16, 8, 64 }):at(3):load():astype("f32"))
        end }
      assert.matches("reshape_ref", k:lower(mgpu.abstract({ 64, 64 }, "bf16")).ir)
    end)

    it("refuses views that are not contiguous or not whole where the buffer is tiled", function()
      assert.matches("lang_spec.lua:%d+: reshape: the ref drops dim 1 of its buffer between its dims 0 and 1",
                     reshape_err(function(s) s:at(mgpu.all, 1):reshape({ 3, 64, 64 }) end))
      assert.matches("reshape: dim 1 of the ref {2, 2, 64, 64} is a slice of 3; only the outermost untiled dim",
                     reshape_err(function(s) s:at(mgpu.all, mgpu.ds(0, 2)):reshape({ 4, 64, 64 }) end,
                                 { mgpu.SMEM({ 2, 3, 64, 64 }, "bf16", { transforms = xf }) }))
      assert.matches("reshape: dim 1 of the ref {3, 32, 64} is a slice of 64",
                     reshape_err(function(s) s:at(mgpu.all, 0, mgpu.ds(0, 32)):reshape({ 3, 32, 64 }) end))
      assert.matches("reshape: the ref is transposed %(transpose_ref%); reshape it before transposing",
                     reshape_err(function(s) mgpu.transpose_ref(s:at(0, 0), { 1, 0 }):reshape({ 1, 64, 64 }) end))
      assert.matches("reshape: the allocation's transforms permute its tiles",
                     reshape_err(function(s) s:reshape({ 1, 64, 128 }) end,
                                 { mgpu.SMEM({ 64, 128 }, "bf16", { transforms = { T.tiling{ 8, 64 }, T.transpose{ 1, 0, 2, 3 } } }) }))
    end)

    it("refuses other element counts, GMEM refs and starts between rows", function()
      assert.matches("reshape: {5, 64, 64} does not have the 24576 elements of {3, 2, 64, 64}",
                     reshape_err(function(s) s:reshape({ 5, 64, 64 }) end))
      assert.matches("lang_spec.lua:%d+: reshape: only SMEM refs can be reshaped",
                     lower_err(function(x, o) o:reshape({ 4096 }) end, {}))
      assert.matches("lang_spec.lua:%d+: reshape: only SMEM refs can be reshaped",
                     lower_err(function(x, o, b) b:reshape({ 2, 1 }) end, { mgpu.Barrier{ num_barriers = 2 } }))
      assert.matches("reshape: the ref starts at element 4096 of its buffer, not at a whole row of 8192",
                     reshape_err(function(s) s:reshape({ 6, 64, 64 }):at(mgpu.ds(1, 2)):reshape({ 1, 2, 64, 64 }) end))
    end)
  end)

  describe("refs carried by loops", function()
    it("names the carry, both refs and both lines when the body returns another buffer", function()
      local err = lower_err(function(x, o, a, b)
        mgpu.while_loop(function(i) return mgpu.lt(i, 3) end, function(i, cur, other) return i + 1, other, cur end, 0, a, b)
      end, { mgpu.SMEM({ 64, 64 }, "f32"), mgpu.SMEM({ 64, 64 }, "f32") })
      assert.matches("lang_spec.lua:%d+: while_loop: carry 2 %(cur%) starts as f32%[64,64%], SMEM f32%[64,64%] %(%%%d+%) %(made at "
                     .. ".*lang_spec.lua:%d+%) but the body returns f32%[64,64%], SMEM f32%[64,64%] %(%%%d+%) %(made at .*lang_spec.lua:%d+%): "
                     .. "a carried ref keeps its buffer", err)
      assert.matches("allocate them as one, mgpu.SMEM%({2, %.%.%.}%), and carry views of its slots", err)
    end)

    it("names a changed view, transforms included, and a ref that became a value", function()
      local sc = { mgpu.SMEM({ 2, 64, 64 }, "f32", { transforms = { T.tiling{ 8, 32 } } }) }
      local err = lower_err(function(x, o, a)
        mgpu.fori(0, 3, function(_, cur) return mgpu.transpose_ref(cur, { 1, 0 }) end, a:at(0))
      end, sc)
      assert.matches("fori: carry 1 %(cur%) starts as f32%[64,64%], at%(i%) of SMEM f32%[2,64,64%] tiling%(8,32%) %(%%%d+%) %(made at "
                     .. ".*lang_spec.lua:%d+%) but the body returns f32%[64,64%], at%(i%):transpose{1,0} of SMEM", err)
      assert.matches("lang_spec.lua:%d+: fori: carry 1 %(cur%) is a ref %(f32%[64,64%], at%(i%) of SMEM .* made at .*%) but the body "
                     .. "returns a traced value", lower_err(function(x, o, a)
        mgpu.fori(0, 3, function(_, cur) return cur:load() end, a:at(0))
      end, sc))
    end)

    it("carries a ref as its indices: i32 loop values and views rebuilt from the root", function()
      local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }, "f32"), scratch_shapes = { mgpu.SMEM({ 2, 64 }, "f32") },
        body = function(x, o, s)
          local cur = mgpu.fori(0, 4, function(_, cur, other) return other, cur end, s:at(0), s:at(1))
          o:store(cur:load())
        end }
      local ir = k:lower(mgpu.abstract({ 1 }, "f32")).ir
      assert.matches('= for %%%d+, %%%d+, %%%d+, %%%d+, %%%d+ "cur#1,other#1" : i32, i32', ir)
      assert.matches("view %%3%[%%%d+%] : &smem f32%[64%]", ir)
    end)
  end)
end)
