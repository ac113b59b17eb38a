-- examples/matmul.lua loaded with --lib: operands it cannot take are errors
-- naming the sizes, and the default configuration builds for any K (a
-- single K step keeps no wgmma group in flight); stream-K (sk=1) computes
-- the whole product however the last round's K steps fall on the blocks;
-- without it the grid is only as large as the rounds of tiles need; split-K
-- (split=S) computes the whole product however K falls on the splits, and
-- for_shape takes it only where few tiles leave the SMs idle; the hand-over
-- of the reduce-adds to the last block (tools/tma_handover.lua) is exact.
local mgpu = require "mgpu"
local lib = loadfile("examples/matmul.lua")("--lib")
local err_of = dofile("spec/support/util.lua").err_of
local unpack = table.unpack or unpack

describe("examples/matmul.lua", function()
  local mm = lib.build{}

  it("refuses an N that is not a multiple of 64", function()
    local a, b = mgpu.random.normal({ 64, 64 }, "bf16"), mgpu.random.normal({ 64, 1000 }, "bf16")
    assert.matches("matmul: N = 1000 must be a multiple of 64", err_of(mm, a, b))
  end)

  it("refuses operands whose inner dimensions differ", function()
    local a, b = mgpu.random.normal({ 64, 64 }, "bf16"), mgpu.random.normal({ 128, 64 }, "bf16")
    assert.matches("matmul: A is 64x64 but B is 128x64", err_of(mm, a, b))
  end)

  it("refuses operands of other dtypes, FP8 without its scales, and mixed dtypes other than FP8's", function()
    local a, b = mgpu.random.normal({ 64, 64 }, "bf16"), mgpu.random.normal({ 64, 64 }, "f16")
    assert.matches("matmul: A and B are bf16 and f16 but the kernel was built for bf16 and bf16", err_of(mm, a, b))
    local f8 = lib.build{ dtype = "f8e4m3", b_dtype = "f8e5m2" }
    local a8, b8, s = mgpu.zeros({ 64, 128 }, "f8e4m3"), mgpu.zeros({ 64, 128 }, "f8e5m2"), mgpu.zeros({}, "f32")
    assert.matches("matmul: FP8 takes a_scale and b_scale after B, f32 arrays of shape {}", err_of(f8, a8, b8))
    assert.matches("matmul: FP8 takes a_scale and b_scale", err_of(f8, a8, b8, s, mgpu.zeros({ 1 }, "f32")))
    assert.matches("matmul: A is 64x128 but B is 128x64 %(with FP8 operands B is taken as N x K%)",
                   err_of(f8, a8, mgpu.zeros({ 128, 64 }, "f8e5m2"), s, s))
    assert.matches("b_dtype may differ from dtype only between f8e4m3 and f8e5m2",
                   select(2, pcall(lib.build, { dtype = "bf16", b_dtype = "f8e4m3" })))
  end)

  it("multiplies with one K step under the default delay", function()
    local a, b = mgpu.random.normal({ 128, 64 }, "f16"), mgpu.random.normal({ 64, 256 }, "f16")
    local c = lib.build{ dtype = "f16" }(a, b)
    local H = mgpu.host
    assert.is_true(H.relerr(H.from(c), H.matmul(H.from(a), H.from(b))) < 1e-2)
  end)

  -- (M, N, K, options, what the blocks' stream-K ranges look like; 64x32 tiles keep them small)
  local sk_cases = {
    { 256, 192, 128, { sms = 4 }, "clusters of two, one tile split between two blocks" },
    { 256, 256, 128, { sms = 6 }, "three blocks in one tile (a middle range, a partial inside the tile)" },
    { 200, 256, 152, { sms = 3, cluster = 1, mwarps = 1 },
      "two split tiles, a block owning one and starting the next; edge tiles, a K tile past the end" },
    { 256, 192, 32, { sms = 5, cluster = 1 }, "one K step: empty ranges, shorter than the pipeline's depth" },
    { 128, 128, 256, { sms = 6, cluster = 1 }, "fewer tiles than blocks: each tile's steps dealt over three" },
    { 256, 128, 256, { sms = 8 }, "fewer pairs of tiles than clusters" },
  }
  for _, case in ipairs(sk_cases) do
    local M, N, K, opts, what = case[1], case[2], case[3], case[4], case[5]
    it(string.format("sk=1 at %dx%dx%d: %s", M, N, K, what), function()
      local cfg = { sk = 1, tile_n = 64, tile_k = 32 }
      for k, v in pairs(opts) do cfg[k] = v end
      local H = mgpu.host
      local a, b = mgpu.random.normal({ M, K }, "bf16"), mgpu.random.normal({ K, N }, "bf16")
      local k = lib.build(cfg)
      for _ = 1, what == sk_cases[1][5] and 2 or 1 do   -- (the workspace and semaphores serve the next launch)
        local c = mgpu.full({ M, N }, 0 / 0, "bf16")
        k:call_into(c, a, b)
        assert.is_true(H.relerr(H.from(c), H.matmul(H.from(a), H.from(b))) < 1e-2)
      end
    end)
  end

  -- (M, N, K, options, what the splits look like; 128x64 blocks and K steps of 32 keep them small)
  local relu = function(t) return mgpu.max(t, 0.0) end
  -- (reduce: through the cluster's SMEM, the default where the split is 2, 4 or 8 with clusters of
  -- one, or through the GMEM workspace)
  local split_cases = {
    { 256, 128, 256, { split = 2, cluster = 1, sms = 8, reduce = "gmem" }, "GMEM: two splits of four tiles, launched twice" },
    { 256, 192, 320, { split = 3, sms = 18 }, "GMEM: clusters of two, ten K steps dealt 3, 3 and 4" },
    { 200, 128, 152, { split = 4, cluster = 1, mwarps = 1, sms = 16, reduce = "gmem" },
      "GMEM: edge tiles, a K tile past the end, splits of one step" },
    { 128, 128, 64, { split = 4, cluster = 1, sms = 8, reduce = "gmem" }, "GMEM: more splits than K steps: two" },
    { 256, 128, 512, { split = 2, cluster = 1, sms = 8, dtype = "f8e4m3", tile_k = false, reduce = "gmem" },
      "GMEM: FP8, the scales on the sum" },
    { 256, 128, 256, { split = 4, cluster = 1, sms = 8, reduce = "gmem" }, "GMEM: more split tiles than blocks: not split" },
    { 256, 256, 256, { split = 2, cluster = 1, sms = 8, tile_n = 128, reduce = "gmem" },
      "GMEM: 128-wide tiles, both chunks of the sum in flight" },
    { 128, 192, 256, { split = 2, cluster = 1, sms = 4, tile_n = 192, reduce = "gmem" },
      "GMEM: 192-wide tiles, three chunks through two slots" },
    { 256, 128, 256, { split = 2, cluster = 1, sms = 8 }, "SMEM: two splits of four tiles, bands of 32 columns" },
    { 200, 128, 152, { split = 4, cluster = 1, mwarps = 1, sms = 16 }, "SMEM: edge tiles, a K tile past the end" },
    { 128, 128, 64, { split = 4, cluster = 1, sms = 8 }, "SMEM: more splits than K steps, two blocks with none" },
    { 256, 128, 512, { split = 8, cluster = 1, sms = 8 }, "SMEM: clusters of eight, more than fit, bands of 8 columns" },
    { 256, 128, 256, { split = 2, cluster = 1, sms = 8, epilogue = relu }, "SMEM: a fused epilogue on the sum only" },
    { 256, 128, 512, { split = 2, cluster = 1, sms = 8, dtype = "f8e4m3", tile_k = false }, "SMEM: FP8, the scales on the sum" },
    { 128, 192, 256, { split = 2, cluster = 1, sms = 4, tile_n = 192 }, "SMEM: 192-wide tiles, bands of 96 columns" },
  }
  for _, case in ipairs(split_cases) do
    local M, N, K, opts, what = case[1], case[2], case[3], case[4], case[5]
    it(string.format("split=%d at %dx%dx%d: %s", opts.split, M, N, K, what), function()
      local cfg = { tile_n = 64, tile_k = 32 }
      for k, v in pairs(opts) do cfg[k] = v end
      if cfg.tile_k == false then cfg.tile_k = nil end
      local H = mgpu.host
      local f8 = cfg.dtype == "f8e4m3"
      local a = mgpu.random.normal({ M, K }, cfg.dtype or "bf16")
      local b = mgpu.random.normal(f8 and { N, K } or { K, N }, cfg.dtype or "bf16")
      local args = { a, b }
      if f8 then args[3], args[4] = mgpu.random.uniform({}, "f32", nil, 0.5, 2), mgpu.random.uniform({}, "f32", nil, 0.5, 2) end
      local ref = H.matmul(H.from(a), f8 and H.from(b):transpose() or H.from(b))
      if f8 then ref = ref * H.from(args[3]) * H.from(args[4]) end
      if cfg.epilogue then ref = ref:max(0) end
      local k = lib.build(cfg)
      for _ = 1, what == split_cases[1][5] and 2 or 1 do   -- (the workspace and counts serve the next launch)
        local c = mgpu.full({ M, N }, 0 / 0, f8 and "bf16" or cfg.dtype or "bf16")
        k:call_into(c, unpack(args))
        assert.is_true(H.relerr(H.from(c), ref) < 1e-2)
      end
    end)
  end

  it("splits K where few tiles leave the SMs idle over a long K, and only there", function()
    -- (132 SMs: 512x512 is 16 tiles of 128x128, 1024x1024 64; the large shapes fill the SMs; each
    -- case: M, N, K, the split, the tile width chosen with it, and whether the pairs add through SMEM)
    local cases = { { 512, 512, 4096, 4, 64 }, { 512, 512, 8192, 8, 128 }, { 1024, 1024, 4096, 2, 128, true },
                    { 512, 1024, 2048, 2, 64, true }, { 512, 512, 512, 1, 64 }, { 512, 512, 1024, 1, 64 },
                    { 1024, 1024, 2048, 1, 64 }, { 512, 2048, 8192, 2, 128, true }, { 1024, 2048, 8192, 1, 128 },
                    { 4096, 4096, 4096, 1, 256 }, { 8192, 8192, 8192, 1, 256 }, { 4096, 8192, 4096, 1, 256 } }
    for _, t in ipairs(cases) do
      local c = lib.for_shape(t[1], t[2], t[3], { sms = 132 })
      assert.equals(t[4], c.split, table.concat(t, "x", 1, 3))
      assert.equals(t[5], c.tile_n, table.concat(t, "x", 1, 3))
      assert.equals(t[6] or false, lib.geometry(c).dsmem, table.concat(t, "x", 1, 3))
    end
    assert.is_false(lib.geometry(lib.for_shape(1024, 1024, 4096, { sms = 132, reduce = "gmem" })).dsmem)
    assert.equals(0, lib.for_shape(512, 512, 1024, { sms = 132 }).delay)            -- (narrow tiles: none in flight)
    assert.is_nil(lib.for_shape(4096, 4096, 4096, { sms = 132 }).delay)             -- (the default, 1)
    assert.equals(1, lib.for_shape(512, 512, 1024, { sms = 132, delay = 1 }).delay)
    assert.equals(4, lib.for_shape(512, 512, 4096, { sms = 132, reduce = "dsmem" }).split)   -- (2, 4 or 8 only)
    assert.equals(1, lib.for_shape(512, 512, 4096, { sms = 132, split = 1 }).split)
    assert.equals(1, lib.for_shape(512, 512, 4096, { sms = 132, tile_n = 256 }).split)   -- (no SMEM for its slots)
    assert.equals(128, lib.tile_n_for(4096, 4096, 4096, { sms = 132, split = 2 }))   -- (a split asked for: its partials' SMEM)
    -- the grid: a pair of blocks per tile and split; a kernel built with split=auto does not split
    local a, b = mgpu.abstract({ 512, 4096 }, "bf16"), mgpu.abstract({ 4096, 512 }, "bf16")
    local function grid(cfg) return lib.build(cfg):lower(a, b).ir:match("grid=%((%d+)%)") end
    assert.equals("64", grid{ sms = 132, tile_n = 128, split = 8 })
    assert.equals("8", grid{ sms = 132, tile_n = 128, sk = 0 })
    local ptx = lib.build{ sms = 132, tile_n = 128, split = 8 }:lower(a, b).ptx
    local wait, red = ptx:find("griddepcontrol.wait;", 1, true), ptx:find("cp.reduce.async.bulk", 1, true)
    assert.is_truthy(wait and red and wait < red)
    assert.matches("split must be auto or a whole number", select(2, pcall(lib.build, { split = 0 })))
    assert.matches("split needs sched=static", select(2, pcall(lib.build, { split = 2, sched = "dynamic" })))
    assert.matches("reduce must be auto, dsmem or gmem", select(2, pcall(lib.build, { reduce = "smem" })))
    assert.matches("reduce=dsmem needs split=2, 4 or 8, cluster=1", select(2, pcall(lib.build, { split = 3, cluster = 1, reduce = "dsmem" })))
    assert.matches("reduce=dsmem needs split=2, 4 or 8, cluster=1", select(2, pcall(lib.build, { split = 2, reduce = "dsmem" })))
  end)

  it("hands TMA reduce-adds to the last block, read back with TMA (tools/tma_handover.lua)", function()
    local util = dofile("spec/support/util.lua")
    local out = util.output("MGPU_INTERPRET=1 " .. util.bin .. " tools/tma_handover.lua tiles=3 splits=2 launches=1 2>&1; echo status=$?")
    assert.matches("3 tiles x 2 splits, generic reads: 0 of 1 launches wrong, 0 elements", out, 1, true)
    assert.matches("3 tiles x 2 splits, tma     reads: 0 of 1 launches wrong, 0 elements", out, 1, true)
    assert.matches("status=0", out, 1, true)
  end)

  it("takes clusters of one where its tiles take at most two rounds of the SMs, unless told", function()
    -- (132 SMs, 128x256 block tiles: 1024x8192 is 256 tiles, 2048x8192 512)
    local cases = { { 512, 512, 4096, 1 }, { 1024, 8192, 8192, 1 }, { 4096, 2048, 512, 1 }, { 2048, 8192, 1024, 2 },
                    { 8192, 8192, 8192, 2 }, { 1056, 8192, 64, 2 } }
    for _, t in ipairs(cases) do
      assert.equals(t[4], lib.cluster_for(t[1], t[2], t[3], { sms = 132 }), table.concat(t, "x", 1, 3))
      assert.equals(t[4], lib.for_shape(t[1], t[2], t[3], { sms = 132 }).cluster)
    end
    assert.equals(2, lib.cluster_for(512, 512, 4096, { sms = 132, cluster = 2 }))
    assert.equals(1, lib.cluster_for(8192, 8192, 8192, { sms = 132, sched = "dynamic" }))
    assert.equals(2, lib.cluster_for(512, 512, 4096, { sms = 132, tile_of = function() end }))
  end)

  it("takes only the clusters its rounds of tiles need, unless balance=0", function()
    -- 512x768 in 128x256 tiles: 6 pairs of tiles; sms=10 gives 5 clusters of two, so two rounds,
    -- which 3 clusters run as well as 5
    local a, b = mgpu.abstract({ 512, 64 }, "bf16"), mgpu.abstract({ 64, 768 }, "bf16")
    local function grid(cfg) return lib.build(cfg):lower(a, b).ir:match("grid=%((%d+)%)") end
    assert.equals("3", grid{ sms = 10, sk = 0 })
    assert.equals("5", grid{ sms = 10, sk = 0, balance = 0 })
    assert.equals("5", grid{ sms = 10, sk = 1 })   -- stream-K deals the last round over every block
    assert.matches("balance must be 0 or 1", select(2, pcall(lib.build, { balance = 2 })))
  end)

  it("takes narrower tiles where their rounds fill the SMs better, unless tile_n is given", function()
    -- (132 SMs, counted by hand: 3072³ takes 3 rounds of pairs of tiles at 256 and at 192, so the
    -- narrower ones are a quarter shorter; 2304x6144x1504 5 rounds of 192-wide against 4 of 256;
    -- 1024x1024x4096 in clusters of two one round at 64 wide, shorter than the GMEM split of 128-wide
    -- tiles (in clusters of one, which for_shape picks there, the split pairs of 128 win: above);
    -- 2048³ one round of 256 against two of 128)
    local cases = { { 3072, 3072, 3072, 192 }, { 2304, 6144, 1504, 192 }, { 4096, 4096, 4096, 256 },
                    { 4096, 8192, 4096, 256 }, { 8192, 8192, 8192, 256 }, { 1024, 8192, 4096, 256 },
                    { 1024, 1024, 4096, 64 }, { 2048, 2048, 2048, 256 }, { 128, 128, 64, 128 } }
    for _, t in ipairs(cases) do
      assert.equals(t[4], lib.tile_n_for(t[1], t[2], t[3], { sms = 132 }), table.concat(t, "x", 1, 3))
    end
    assert.equals(256, lib.tile_n_for(3072, 3072, 3072, { sms = 132, tile_n = 256 }))
    -- wgmmas 128 wide do not divide 192: of 256 and 128, 5 rounds of 128 are shorter than 3 of 256
    assert.equals(128, lib.tile_n_for(3072, 3072, 3072, { sms = 132, mma = 128 }))
    assert.equals(128, lib.tile_n_for(512, 192, 64, { sms = 132 }))   -- narrower than 256: halved
  end)

  it("waits for the kernels before it ahead of any global memory access (programmatic dependent launch), and prefetches its tensor maps first", function()
    local a, b = mgpu.abstract({ 4096, 4096 }, "bf16"), mgpu.abstract({ 4096, 4096 }, "bf16")
    local a8, scale = mgpu.abstract({ 4096, 4096 }, "f8e4m3"), mgpu.abstract({}, "f32")
    local counter = mgpu.abstract({ 2 }, "i32")
    for _, cfg in ipairs({ {}, { sk = 1 }, { sched = "dynamic" }, { cluster = 1, mwarps = 1 }, { dtype = "f8e4m3", sk = 1 } }) do
      local k = lib.build(cfg)
      local ptx = cfg.dtype and k:lower(a8, a8, scale, scale).ptx or k:lower(a, b, cfg.sched and counter or nil).ptx
      local wait = ptx:find("griddepcontrol.wait;", 1, true)
      local trigger = ptx:find("griddepcontrol.launch_dependents;", 1, true)
      assert.is_truthy(wait and trigger and trigger < wait)
      for _, op in ipairs({ "ld%.global", "st%.global", "ld%.volatile%.global", "cp%.async%.bulk", "cp%.reduce",
                            "atom%.", "red%.", "prefetch%.[^t]", "multimem%." }) do
        local at = ptx:find("[\t ]" .. op)
        assert.is_true(at == nil or at > wait, op)
      end
      -- every tensor map (a kernel parameter, not memory an earlier kernel writes) is prefetched
      -- once, before the wait
      local _, maps = ptx:gsub("%.param %.align 64 %.b8 ", "")
      local _, early = ptx:sub(1, wait):gsub("prefetch%.tensormap", "")
      local _, all = ptx:gsub("prefetch%.tensormap", "")
      assert.is_true(maps >= 2 and early == maps and all == maps, maps .. " maps, " .. early .. " prefetched early")
      assert.is_truthy(ptx:find("[\t ]cp%.async%.bulk%.tensor"))   -- (the patterns do find the kernel's accesses)
    end
  end)

  it("refuses sk=1 with dynamic scheduling, and an unknown sk", function()
    assert.matches("sk=1 needs sched=static", select(2, pcall(lib.build, { sk = 1, sched = "dynamic" })))
    assert.matches("sk must be 0, 1 or auto", select(2, pcall(lib.build, { sk = 3 })))
  end)
end)
