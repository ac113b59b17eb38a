-- JAX's MatrixMultiplicationSm90ATest (tests/pallas/mgpu_matmul_test.py), which tests Pallas'
-- hopper_matmul_mgpu op, run against mgpu's counterpart, examples/matmul.lua (its
-- TuningConfig fields: tile_m, tile_n, tile_k, max_concurrent_steps as depth, epi_tile_n as
-- epi, wg_dimension as wg_dim, grid_tile_width as snake, cluster_dimension as cdim), at
-- 128x256x128 instead of 4096^3 and on a named subset of each parameter product (README; the
-- example has no C operand, no M-minor grid order and no M-chunked epilogue, so c_dtype,
-- grid_minor_dim=M and epi_tile_m below tile_m are left out).
local C = dofile("spec/conformance/support/conf.lua")
local mgpu = C.mgpu
local cls = C.class("MatrixMultiplicationSm90ATest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
local lib = loadfile("examples/matmul.lua")("--lib")
local M, N, K = 128, 256, 128

-- The matmul for these TuningConfig-like options, checked on fresh f16 inputs against float64
-- rounded to f16 (the op's f16 output: one f16 ulp).
local function check(opts)
  local cfg = { dtype = "f16", cluster = 1, sms = 1, tile_m = opts.tile_m, tile_n = opts.tile_n, tile_k = opts.tile_k,
                depth = opts.max_concurrent_steps, epi = opts.epi_tile_n or 0, wg_dim = opts.wg_dimension or "M",
                snake = opts.grid_tile_width }
  if opts.cluster_dimension then cfg.cluster, cfg.cdim, cfg.sms = 2, opts.cluster_dimension, 2 end
  local mm = C.wrap(lib.build(cfg))
  local a, b = C.normal({ M, K }, "f16"), C.normal({ K, N }, "f16")
  local want = mgpu.host.matmul(mgpu.host.from(a), mgpu.host.from(b)):round("f16"):to_table()
  C.close(mm(a, b), want, 1e-3, 1e-3)
end

describe("MatrixMultiplicationSm90ATest", function()
  local configs = {
    { tile_m = 64, tile_n = 64, tile_k = 64, max_concurrent_steps = 2, wg_dimension = "M" },
    { tile_m = 128, tile_n = 128, tile_k = 128, max_concurrent_steps = 4, epi_tile_n = 64, wg_dimension = "N" },
    { tile_m = 64, tile_n = 128, tile_k = 64, max_concurrent_steps = 4, epi_tile_n = 64, wg_dimension = "M" },
  }
  for _, o in ipairs(configs) do
    cls.test(string.format("test_hopper_matmul(tile_m=%d, tile_n=%d, tile_k=%d, max_concurrent_steps=%d, epi_tile_n=%s, " ..
                           "epi_tile_m=None, wg_dimension=%s, c_dtype=None)", o.tile_m, o.tile_n, o.tile_k, o.max_concurrent_steps,
                           tostring(o.epi_tile_n or "None"), o.wg_dimension), function() check(o) end)
  end
  cls.test("test_hopper_matmul_grid_tiling(grid_minor_dim=N, grid_tile_width=3)", function()
    check({ tile_m = 64, tile_n = 64, tile_k = 64, max_concurrent_steps = 2, epi_tile_n = 64, wg_dimension = "M", grid_tile_width = 3 })
  end)
  for _, cd in ipairs({ { "M", "N" }, { "N", "M" } }) do
    cls.test(string.format("test_hopper_matmul_cluster(tile_m=64, tile_n=64, wg_dimension=%s, cluster_dimension=%s)", cd[1], cd[2]),
             function()
      check({ tile_m = 64, tile_n = 64, tile_k = 64, max_concurrent_steps = 4, epi_tile_n = 64, wg_dimension = cd[1],
              cluster_dimension = cd[2] })
    end)
  end

  for _, name in ipairs({ "test_hopper_mixed_type_matmul(tile_m=64, tile_n=64, tile_k=64, epi_tile_m=None, epi_tile_n=None, " ..
                          "max_concurrent_steps=2, lhs_dtype=int8, rhs_dtype=f16, wg_dimension=M)",
                          "test_hopper_mixed_type_matmul_grid_tiling(grid_minor_dim=N, grid_tile_width=1)",
                          "test_hopper_mixed_type_matmul_cluster(tile_m=64, tile_n=64, wg_dimension=M, cluster_dimension=N)" }) do
    cls.diverge(name, "new-mixed-matmul", "no int8 x f16/bf16 matmul: examples/matmul.lua takes one 16-bit dtype",
                "swizzle(128) needs a minor dimension", function()
      local mm = lib.build({ dtype = "f16", cluster = 1, sms = 1, tile_m = 64, tile_n = 64, tile_k = 64, depth = 2 })
      mm(C.uniform({ M, K }, "i8", -5, 5), C.normal({ K, N }, "f16"))
    end)
  end
end)
