-- Blackwell cluster launch control (sm_100a): try_cluster_cancel and
-- query_cluster_cancel, and dynamic_scheduling_loop built on them.  The
-- interpreter starts clusters one at a time in row-major order, so a
-- request cancels the next cluster to start; every item must be done
-- exactly once, by whichever cluster took it.
local mgpu = require "mgpu"
local err_of = dofile("spec/support/util.lua").err_of

describe("cluster launch control", function()
  local saved
  setup(function() saved = mgpu.device().target; mgpu.configure{ target = "sm_100a" } end)
  teardown(function() mgpu.configure{ target = saved } end)

  it("cancels the next cluster and names its place in the grid; when none is left, says so", function()
    -- every cluster that starts asks twice and records the answers (grid (2, 5), named j, i): cluster 0
    -- takes clusters 1 and 2, which never start; cluster 3 takes 4 and 5, ...; cluster 9 finds none left
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 2, 5, 3 }, "i32"), grid = { 2, 5 }, grid_names = { "i", "j" },
      scratch_shapes = { mgpu.TryClusterCancelResult(2), mgpu.Barrier{ num_barriers = 2 } },
      body = function(o, res, got)
        local i, j = mgpu.axis_index("i"), mgpu.axis_index("j")
        for s = 0, 1 do
          mgpu.try_cluster_cancel(res:at(s), got:at(s))
          mgpu.barrier_wait(got:at(s))
          local idx, ok = mgpu.query_cluster_cancel(res:at(s), { "j", "i" })
          if s == 0 then o:at(i, j, 0):store(mgpu.select(ok, 1, 0)) end
          o:at(i, j, 1 + s):store(mgpu.select(ok, idx[2] * 10 + idx[1], -2))
        end
      end }
    local t = k():to_table()   -- (outputs start poisoned: -1 where no cluster ran)
    local want = { [0] = { 1, 1, 2 }, [3] = { 1, 4, 10 }, [6] = { 1, 12, 13 }, [9] = { 0, -2, -2 } }
    for c = 0, 9 do
      assert.are.same(want[c] or { -1, -1, -1 }, { t[3 * c + 1], t[3 * c + 2], t[3 * c + 3] }, "cluster " .. c)
    end
  end)

  it("drives dynamic_scheduling_loop: every item once, several warpgroups, a carry", function()
    local k = mgpu.kernel{ out_shape = { mgpu.shape({ 6, 5 }, "i32"), mgpu.shape({ 30 }, "i32") }, grid = { 6, 5 },
      grid_names = { "i", "j" }, num_threads = 2, thread_name = "wg",
      body = function(o, count)
        local wg = mgpu.axis_index("wg")
        local n = mgpu.dynamic_scheduling_loop({ "i", "j" }, { thread_axis = "wg", init_carry = 0 }, function(info, c)
          mgpu.when(mgpu.eq(wg, 1), function()
            o:at(info.index[1], info.index[2]):store(o:at(info.index[1], info.index[2]):load() + 1)
          end)
          return c + 1
        end)
        mgpu.when(mgpu.eq(wg, 0), function()
          count:at(mgpu.axis_index("i") * 5 + mgpu.axis_index("j")):store(n)
        end)
      end }
    local o, count = mgpu.zeros({ 6, 5 }, "i32"), mgpu.full({ 30 }, -1, "i32")
    k:call_into({ o, count })
    for _, v in ipairs(o:to_table()) do assert.are.equal(1, v) end
    local total = 0
    for _, v in ipairs(count:to_table()) do if v > 0 then total = total + v end end
    assert.are.equal(30, total)
  end)

  it("takes items for a whole cluster (cluster_axes), its blocks together", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 8, 2 }, "i32"), grid = { 4 }, grid_names = { "m" },
      cluster = { 2 }, cluster_names = { "x" },
      body = function(o)
        local x = mgpu.axis_index("x")
        mgpu.dynamic_scheduling_loop({ "m" }, { cluster_axes = { "x" } }, function(info)
          o:at(info.index[1] * 2 + x, 0):store(info.index[1])
          o:at(info.index[1] * 2 + x, 1):store(info.local_index)
        end)
      end }
    assert.are.same({ 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3 }, k():to_table())
    local ptx = k:lower().ptx
    assert.matches("fence%.proxy%.async::generic%.acquire%.sync_restrict::shared::cluster%.cluster;\n\t@%%p%d+ clusterlaunchcontrol%." ..
                   "try_cancel%.async%.shared::cta%.mbarrier::complete_tx::bytes%.multicast::cluster::all%.b128 %[%%r%d+%], %[%%r%d+%];", ptx)
    assert.matches("clusterlaunchcontrol%.query_cancel%.is_canceled%.pred%.b128 %%p%d+, answer;\n\t@%%p%d+ clusterlaunchcontrol%." ..
                   "query_cancel%.get_first_ctaid%.v4%.b32%.b128 {%%r%d+, %%r%d+, %%r%d+, _}, answer;", ptx)
    assert.matches("fence%.proxy%.async::generic%.release%.sync_restrict::shared::cta%.cluster;\n\tshr%.u32 %%r%d+, %%r%d+, 1;", ptx)
  end)

  it("faults on reading an answer before its barrier completes", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 2 }, "i32"), grid = { 2 }, grid_names = { "i" },
      scratch_shapes = { mgpu.TryClusterCancelResult(), mgpu.Barrier{} },
      body = function(o, res, got)
        mgpu.try_cluster_cancel(res, got)
        local idx = mgpu.query_cluster_cancel(res, "i")
        mgpu.barrier_wait(got)
        o:at(mgpu.axis_index("i")):store(idx[1])
      end }
    assert.matches("query_cluster_cancel reads SMEM that the try_cluster_cancel at [^ ]*cluster_cancel_spec.lua:%d+ is still " ..
                   "writing", err_of(k))
  end)

  it("refuses misuse at the script line", function()
    local function lower(spec) return err_of(function() mgpu.kernel(spec):lower() end) end
    local base = { out_shape = mgpu.shape({ 4 }, "i32"), grid = { 4 }, grid_names = { "i" } }
    local function with(t) local s = {} for k, v in pairs(base) do s[k] = v end for k, v in pairs(t) do s[k] = v end return s end
    assert.matches("cluster_cancel_spec.lua:%d+: query_cluster_cancel: 'k' is not a grid axis %(grid_names: i%)",
                   lower(with{ scratch_shapes = { mgpu.TryClusterCancelResult() }, body = function(o, r) mgpu.query_cluster_cancel(r, "k") end }))
    assert.matches("cluster_cancel_spec.lua:%d+: try_cluster_cancel: the result must be 16 bytes of SMEM",
                   lower(with{ scratch_shapes = { mgpu.SMEM({ 2 }, "u32"), mgpu.Barrier{} }, body = function(o, r, b) mgpu.try_cluster_cancel(r, b) end }))
    assert.matches("cluster_cancel_spec.lua:%d+: dynamic_scheduling_loop: on sm_100a the launch grid is the work",
                   lower(with{ body = function(o) mgpu.dynamic_scheduling_loop("i", { grid = { 8 } }, function() end) end }))
    assert.matches("cluster_cancel_spec.lua:%d+: dynamic_scheduling_loop: the kernel's cluster has 2 blocks: give cluster_axes",
                   lower(with{ cluster = { 2 }, cluster_names = { "x" }, body = function(o) mgpu.dynamic_scheduling_loop("i", function() end) end }))
    mgpu.configure{ target = "sm_90a" }
    local e = lower(with{ scratch_shapes = { mgpu.TryClusterCancelResult(), mgpu.Barrier{} },
                          body = function(o, r, b) mgpu.try_cluster_cancel(r, b) end })
    mgpu.configure{ target = "sm_100a" }
    assert.matches("cluster_cancel_spec.lua:%d+: try_cluster_cancel is Blackwell%-only .* but this kernel's target is sm_90a", e)
  end)
end)
