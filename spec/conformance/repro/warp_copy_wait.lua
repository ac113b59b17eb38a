-- new-warp-copy-wait: Pallas waits for SMEM->GMEM copies inside one warp (warp_map with
-- pl.when(warp_id == 0)); mgpu.single_warp refuses wait_smem_to_gmem.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), scratch_shapes = { mgpu.SMEM({ 256 }, "f32") },
  body = function(o, s)
    s:store(mgpu.broadcast(1, { 256 }, "f32"))
    mgpu.commit_smem()
    mgpu.single_warp(function()
      mgpu.copy_smem_to_gmem(s, o)
      mgpu.wait_smem_to_gmem(0)
    end)
  end }
print(k():get(1))
