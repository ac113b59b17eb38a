-- The test of JAX's PipelineSm90ATest (tests/pallas/mosaic_gpu_test.py): a matmul whose
-- output tiles are a pallas_call grid and whose K steps an emit_pipeline inside each block,
-- on a 1x2 grid of 128x128 tiles and 2 K steps instead of JAX's 132x4 and 10 (README).
local assert = require "luassert"
local C = dofile("spec/conformance/support/conf.lua")
local mgpu, T = C.mgpu, C.T

return function(cls)
  -- f16 results: the kernel's f32 sums round like the f64 reference's to within an f16 ulp.
  cls.test("test_realistic_matmul", function()
    local gm, gn, gk, tile, tk = 1, 2, 2, 128, 64
    local m, n, kk = gm * tile, gn * tile, gk * tk
    local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }
    local k = cls.pallas_call{ out_shape = mgpu.shape({ m, n }, "f16"), grid = { gm, gn },
      in_specs = { mgpu.BlockSpec{ memory_space = mgpu.GMEM }, mgpu.BlockSpec{ memory_space = mgpu.GMEM } },
      out_specs = mgpu.BlockSpec{ { tile, tile }, function(i, j) return i, j end, transforms = xf },
      scratch_shapes = { mgpu.ACC({ tile, tile }, "f32") },
      body = function(a, b, o, acc)
        local pm, pn = mgpu.program_id(0), mgpu.program_id(1)
        mgpu.emit_pipeline(function(_, as, bs)
          assert.are.same({ tile, tk }, as.shape)
          assert.are.same({ tk, tile }, bs.shape)
          mgpu.wgmma(acc, as, bs)
          mgpu.wgmma_wait(1)
        end, { in_specs = { mgpu.BlockSpec{ { tile, tk }, function(l) return pm, l end, transforms = xf, delay_release = 1 },
                            mgpu.BlockSpec{ { tk, tile }, function(l) return l, pn end, transforms = xf, delay_release = 1 } },
               grid = { gk }, max_concurrent_steps = 2 })(a, b)
        o:store(acc:load():astype("f16"))
      end }
    local a, b = C.uniform({ m, kk }, "f16"), C.uniform({ kk, n }, "f16")
    local want = mgpu.host.matmul(mgpu.host.from(a), mgpu.host.from(b)):round("f16"):to_table()
    C.close(k(a, b), want, 1e-3)
  end)
end
