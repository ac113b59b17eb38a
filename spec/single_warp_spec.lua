-- mgpu.single_warp: a region run by the warpgroup's first warp only (the
-- others skip it and wait at its end), for producer loops of scalar work,
-- barrier waits and TMA copies.  Results in the interpreter on fresh random
-- inputs, the PTX's branch and barrier, and the errors for what a single warp
-- cannot do, at the script line.
local mgpu = require "mgpu"
local util = dofile("spec/support/util.lua")
local function err_of(fn, ...) return tostring(util.err_of(fn, ...)) end

local here = "single_warp_spec.lua:%d+: "

-- A kernel whose body is body(x, o, s, bar, acc) with SMEM s (64 x 64 f32), a barrier and x, o 64 x 64.
local function kernel(body)
  return mgpu.kernel{
    out_shape = mgpu.shape({ 64, 64 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 64, 64 }, "f32"), mgpu.Barrier{ num_arrivals = 1 } },
    body = body,
  }
end

describe("single_warp", function()
  it("loads through TMA and waits on one warp; the warpgroup reads the result after it", function()
    local k = kernel(function(x, o, s, bar)
      mgpu.single_warp(function()
        mgpu.fori(0, 2, function(i)   -- a loop inside: the same barrier, phases 0 and 1
          mgpu.copy_gmem_to_smem(x, s, bar)
          mgpu.barrier_wait(bar)
        end)
      end)
      o:store(s:load() * 2.0)
    end)
    local x = mgpu.random.normal({ 64, 64 }, "f32")
    local want = {}
    for i, v in ipairs(x:to_table()) do want[i] = 2 * v end
    local got = k(x):to_table()
    for i = 1, #want do assert.are.equal(want[i], got[i]) end
    local ptx = k:lower(x).ptx
    -- warps 1-3 branch around the region (the warp index is broadcast from lane 0), then all
    -- four meet at a warpgroup barrier
    assert.matches("shfl%.sync%.idx%.b32 %%r%d+, %%r%d+, 0, 31, %-1;", ptx)
    assert.matches("setp%.ne%.u32 (%%p%d+), %%r%d+, 0;\n\t@%1 bra%.uni (%$L%d+);", ptx)
    local region = ptx:match("setp%.ne%.u32 %%p%d+, %%r%d+, 0;\n\t@%%p%d+ bra%.uni (%$L%d+);")
    assert.matches(region:gsub("%$", "%%$") .. ":\n\tbar%.sync [%%%w]+, 128;", ptx)
  end)

  it("nests (the inner region is already on one warp)", function()
    local k = kernel(function(x, o, s, bar)
      mgpu.single_warp(function()
        mgpu.copy_gmem_to_smem(x, s, bar)
        mgpu.single_warp(function() mgpu.barrier_wait(bar) end)
      end)
      o:store(s:load() * 4.0)
    end)
    local x = mgpu.random.normal({ 64, 64 }, "f32")
    local got, xt = k(x):to_table(), x:to_table()
    for i = 1, #xt do assert.are.equal(4 * xt[i], got[i]) end
    local _, branches = k:lower(x).ptx:gsub("setp%.ne%.u32 %%p%d+, %%r%d+, 0;\n\t@%%p%d+ bra%.uni", "")
    assert.are.equal(1, branches)
  end)

  local function refused(what, body)
    return err_of(kernel(body), mgpu.random.normal({ 64, 64 }, "f32"))
  end
  it("refuses arrays, wgmma and what needs a warpgroup barrier, at the line", function()
    assert.matches(here .. "load cannot run inside single_warp: it needs an array result", refused("load", function(x)
      mgpu.single_warp(function() local _ = x:load() end)
    end))
    assert.matches(here .. "store cannot run inside single_warp: it needs a warpgroup barrier in its lowering %(SMEM stores%)",
      refused("store", function(_, _, s) mgpu.single_warp(function() s:at(0, 0):store(1.0) end) end))
    assert.matches(here .. "commit_smem cannot run inside single_warp", refused("commit", function()
      mgpu.single_warp(function() mgpu.commit_smem() end)
    end))
    assert.matches(here .. "barrier_arrive cannot run inside single_warp", refused("arrive", function(_, _, _, bar)
      mgpu.single_warp(function() mgpu.barrier_arrive(bar) end)
    end))
    assert.matches(here .. "set_max_registers cannot run inside single_warp: it needs a warpgroup instruction",
      refused("setmaxnreg", function() mgpu.single_warp(function() mgpu.set_max_registers(40, { action = "decrease" }) end) end))
  end)
  it("refuses one barrier waited on both inside and outside", function()
    assert.matches(here .. "barrier_wait: this barrier is waited on both inside and outside single_warp",
      refused("mixed", function(x, o, s, bar)
        mgpu.single_warp(function()
          mgpu.copy_gmem_to_smem(x, s, bar)
          mgpu.barrier_wait(bar)
        end)
        mgpu.copy_gmem_to_smem(x, s, bar)
        mgpu.barrier_wait(bar)
      end))
  end)
  it("needs a function", function()
    assert.matches(here .. "single_warp: the argument must be a function", refused("arg", function()
      mgpu.single_warp(3)
    end))
  end)
end)
