-- The Pallas names JAX's Hopper tests use that mgpu lacks (nil, or refused): each is a divergence
-- of its own (new-<name> in spec/conformance/README.md).
local mgpu = require "mgpu"
for _, name in ipairs({ "multiple_of", "concatenate", "async_prefetch", "barrier_test", "debug_check", "optimization_barrier",
                        "RefUnion", "griddepcontrol_wait", "griddepcontrol_launch_dependents",
                        "mma", "warp_map", "get_global", "semaphore_read" }) do
  print(string.format("mgpu.%s: %s", name, tostring(rawget(mgpu, name))))
end
for _, l in ipairs({ "SMEM_GMEM_COPY", "WGMMA_UPCAST_2X", "WGMMA_UPCAST_4X", "TMA_INDICES", "TMA_INDICES_4", "MMA_LHS" }) do
  print("mgpu.Layout." .. l .. ":", select(2, pcall(function() return mgpu.Layout[l] end)))
end
for _, dt in ipairs({ "int4", "u4", "f8e8m0" }) do print(dt .. ":", select(2, pcall(mgpu.shape, { 4 }, dt))) end
print(select(2, pcall(mgpu.BlockSpec, { { 128 }, function(i) return i end, oob_fill_mode = "undefined" })))
print(select(2, pcall(mgpu.ClusterBarrier, { collective_axes = { "x" }, leader_tracked = true })))
print(select(2, pcall(mgpu.pallas_call, { out_shape = mgpu.shape({ 4 }, "f32"), body = function() end, input_output_aliases = {} })))
