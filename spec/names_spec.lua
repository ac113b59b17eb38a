-- Every name of the Pallas Mosaic GPU module page (jax.experimental.pallas.
-- mosaic_gpu) that applies to Hopper or Blackwell exists in mgpu; the others
-- raise an error that says what to use instead.
local mgpu = require "mgpu"

local err_of = dofile("spec/support/util.lua").err_of

-- The module page's names, in its order, with what they are in mgpu.
local provided = {
  -- classes
  "Barrier", "BlockSpec", "CompilerParams", "MemorySpace", "Layout", "SwizzleTransform", "TilingTransform",
  "TransposeTransform", "WGMMAAccumulatorRef",
  -- functions
  "kernel", "layout_cast", "set_max_registers", "planar_snake",
  -- loop-like functions
  "emit_pipeline", "emit_pipeline_warp_specialized", "nd_loop", "dynamic_scheduling_loop",
  -- synchronization
  "barrier_arrive", "barrier_wait",
  -- asynchronous copies
  "commit_smem", "copy_gmem_to_smem", "copy_smem_to_gmem", "wait_smem_to_gmem",
  -- Hopper-specific functions
  "wgmma", "wgmma_wait",
  -- Blackwell-specific functions
  "tcgen05_mma", "tcgen05_commit_arrive", "async_load_tmem", "async_store_tmem", "wait_load_tmem", "commit_tmem",
  "try_cluster_cancel", "query_cluster_cancel", "TryClusterCancelResult",
  -- aliases
  "ACC", "GMEM", "SMEM", "TMEM",
}

local not_provided = {
  as_torch_kernel = "called from Python: mgpu.as_torch_kernel%(script, name%) of the Python package",
}

describe("Pallas Mosaic GPU names", function()
  for _, name in ipairs(provided) do
    it("provides mgpu." .. name, function()
      assert.is_not_nil(rawget(mgpu, name), name)
    end)
  end

  it("aliases WGMMAAccumulatorRef to ACC and the memory spaces", function()
    assert.are.equal(mgpu.ACC, mgpu.WGMMAAccumulatorRef)
    assert.are.equal(mgpu.GMEM, mgpu.MemorySpace.GMEM)
    assert.are.equal(mgpu.SMEM, mgpu.MemorySpace.SMEM)
    assert.are.equal(mgpu.TMEM, mgpu.MemorySpace.TMEM)
  end)

  it("has the Hopper and Blackwell members of Layout under their Pallas names", function()
    local L = mgpu.Layout
    for _, m in ipairs({ "WGMMA", "WGMMA_8BIT", "WGMMA_TRANSPOSED", "WGMMA_ROW", "WGMMA_COL", "WG_SPLAT", "WG_STRIDED", "TILED",
                         "TCGEN05", "TCGEN05_TMEM_NATIVE" }) do
      assert.is_not_nil(rawget(L, m), m)
    end
    assert.are.equal(L.WGMMA:reduce(1), L.WGMMA_ROW)
    assert.are.equal(L.WGMMA:reduce(0), L.WGMMA_COL)
    assert.are.equal(L.WG_STRIDED(2), L.WG_STRIDED({ 128, 64 }, 2))     -- Pallas' (shape, vec_size)
    assert.are.equal(L.TCGEN05_TMEM_NATIVE(1), L.TCGEN05_TMEM_NATIVE)
    assert.matches("names_spec.lua:%d+: mgpu.Layout.TCGEN05_M64_COLLECTIVE is not provided: not implemented yet",
                   err_of(function() return L.TCGEN05_M64_COLLECTIVE end))
    assert.matches("names_spec.lua:%d+: mgpu.Layout wgmma takes no arguments", err_of(function() return L.WGMMA(2) end))
    assert.matches("names_spec.lua:%d+: mgpu.Layout.WGMMA_UPCAST_2X is not provided: not implemented yet",
                   err_of(function() return L.WGMMA_UPCAST_2X end))
  end)

  it("uses the row layout alias in a kernel", function()
    local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }, "f32"),
      body = function(x, o) o:store(mgpu.layout_cast(x:load(), mgpu.Layout.WGMMA):sum(1)) end }
    local ref = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 64 }, "f32"),
      body = function(x, o)
        o:store(mgpu.layout_cast(mgpu.layout_cast(x:load(), mgpu.Layout.WGMMA):sum(1), mgpu.Layout.WGMMA_ROW))
      end }
    local x = mgpu.random.normal({ 64, 64 }, "f32")
    assert.are.same(k(x):to_table(), ref(x):to_table())
  end)

  for name, why in pairs(not_provided) do
    it("says what to use instead of mgpu." .. name, function()
      assert.is_nil(rawget(mgpu, name))
      assert.matches("names_spec.lua:%d+: mgpu%." .. name .. " is not provided: .*" .. why,
                     err_of(function() return mgpu[name] end))
    end)
  end

  it("leaves other unknown names nil", function()
    assert.is_nil(mgpu.no_such_name)
  end)
end)
