-- Pipelines and persistent loops (emit_pipeline, emit_pipeline_warp_specialized,
-- nd_loop, planar_snake, pallas_call, BlockSpec): results in the interpreter
-- on fresh random inputs against plain Lua, and the errors for misuse.
local mgpu = require "mgpu"

local function err_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error")
  return tostring(err)
end

local function maxdiff(got, want)
  local d = 0
  for i = 1, #want do d = math.max(d, math.abs(got[i] - want[i])) end
  assert(#got == #want, "lengths differ")
  return d
end

local function spec1(n) return mgpu.BlockSpec{ { n }, function(i) return i end } end

-- out[r][c] = sum over j of x[r][j * bc + c]: the row blocks of x summed (x is R x C).
local function block_row_sums(x, R, C, bc)
  local xt, want = x:to_table(), {}
  for r = 0, R - 1 do
    for c = 0, bc - 1 do
      local s = 0
      for j = 0, C / bc - 1 do s = s + xt[r * C + j * bc + c + 1] end
      want[r * bc + c + 1] = s
    end
  end
  return want
end

describe("emit_pipeline", function()
  for depth = 1, 4 do
    it("maps blocks through " .. depth .. " slot(s), the last block partial", function()
      local n, b = 1000, 128                    -- 8 steps; the last block is clipped
      local k = mgpu.kernel{
        out_shape = mgpu.shape({ n }, "f32"),
        body = function(x, o)
          mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load() * 2.0 + 1.0) end,
            { grid = { mgpu.cdiv(n, b) }, max_concurrent_steps = depth, in_specs = { spec1(b) }, out_specs = { spec1(b) } })(x, o)
        end,
      }
      local x = mgpu.random.normal(n, "f32")
      local want = {}
      for i, v in ipairs(x:to_table()) do want[i] = v * 2 + 1 end
      assert.is_true(maxdiff(k(x):to_table(), want) < 1e-5)
    end)
  end

  it("runs nothing over a traced grid of zero steps, and a step or two of one", function()
    -- the prologue's fetches of steps 0 and 1 are guarded: with a traced step count their views
    -- (block 1 lies outside the 128 elements) are built with traced starts
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 256 }, "f32"), grid = { 1 },
      body = function(x, n, o)
        o:store(mgpu.broadcast(7.0, { 256 }))
        mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load() + 1.0) end,
          { grid = { n }, max_concurrent_steps = 3, in_specs = { spec1(128) }, out_specs = { spec1(128) } })(x, o)
      end,
    }
    local x = mgpu.random.normal({ 256 }, "f32")
    local xt = x:to_table()
    for n = 0, 2 do
      local want = {}
      for i = 1, 256 do want[i] = i <= 128 * n and xt[i] + 1 or 7 end
      assert.is_true(maxdiff(k(x, n):to_table(), want) < 1e-6)
    end
  end)

  it("carries values across steps and returns the final carry", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 256 }, "f32"),
      body = function(x, o)
        local pipe = mgpu.emit_pipeline(function(idx, xs, acc)
          return { sum = acc.sum + xs:load(), steps = acc.steps + 1, tag = acc.tag }
        end, { grid = { 6 }, max_concurrent_steps = 2, in_specs = { mgpu.BlockSpec{ { 256 }, function(i) return i end } },
               init_carry = { sum = mgpu.broadcast(0.0, { 256 }), steps = 0, tag = "rows" } })
        local final = pipe(x)
        assert(final.tag == "rows", "a carry entry that is not a value comes back as it was")
        o:store(final.sum + final.steps:astype("f32"))
      end,
    }
    local x = mgpu.random.normal(6 * 256, "f32")
    local xt, want = x:to_table(), {}
    for j = 1, 256 do
      local s = 0
      for i = 0, 5 do s = s + xt[i * 256 + j] end
      want[j] = s + 6
    end
    assert.is_true(maxdiff(k(x):to_table(), want) < 1e-4)
  end)

  it("stores an output whose block does not change once, when it changes (row sums over a sequential axis)", function()
    local R, C, br, bc = 32, 1024, 8, 256
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ R, bc }, "f32"),
      body = function(x, o)
        mgpu.emit_pipeline(function(idx, xs, os)
          mgpu.cond(mgpu.eq(idx[2], 0), function() os:store(xs:load()) end,
                    function() os:store(os:load() + xs:load()) end)
        end, { grid = { R / br, C / bc }, max_concurrent_steps = 3,
               in_specs = { mgpu.BlockSpec{ { br, bc }, function(i, j) return i, j end } },
               out_specs = { mgpu.BlockSpec{ { br, bc }, function(i, j) return i, 0 end } } })(x, o)
      end,
    }
    local x = mgpu.random.normal({ R, C }, "f32")
    assert.is_true(maxdiff(k(x):to_table(), block_row_sums(x, R, C, bc)) < 1e-4)
  end)

  it("squeezes dims and indexes Element dims by offset", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 4, 512 }, "f32"),
      body = function(x, o)
        mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load() - 3.0) end, {
          grid = { 4, 2 }, max_concurrent_steps = 2,
          in_specs = { mgpu.BlockSpec{ { mgpu.squeezed, mgpu.Element(256) }, function(r, c) return r, c * 256 end } },
          out_specs = { mgpu.BlockSpec{ { nil, 256 }, function(r, c) return r, c end } },
        })(x, o)
      end,
    }
    local x = mgpu.random.normal({ 4, 512 }, "f32")
    local want = {}
    for i, v in ipairs(x:to_table()) do want[i] = v - 3 end
    assert.is_true(maxdiff(k(x):to_table(), want) < 1e-5)
  end)

  it("honours delay_release (inputs refilled one step later)", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 2048 }, "f32"),
      body = function(x, y, o)
        mgpu.emit_pipeline(function(_, xs, ys, os) os:store(xs:load() * ys:load()) end, {
          grid = { 8 }, max_concurrent_steps = 3,
          in_specs = { mgpu.BlockSpec{ { 256 }, function(i) return i end, delay_release = 1 },
                       mgpu.BlockSpec{ { 256 }, function(i) return i end, delay_release = 2 } },
          out_specs = { spec1(256) },
        })(x, y, o)
      end,
    }
    local x, y = mgpu.random.normal(2048, "f32"), mgpu.random.normal(2048, "f32")
    local xt, yt, want = x:to_table(), y:to_table(), {}
    for i = 1, 2048 do want[i] = xt[i] * yt[i] end
    assert.is_true(maxdiff(k(x, y):to_table(), want) < 1e-5)
  end)

  it("runs nothing for a traced grid of zero steps", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 512 }, "f32"),
      body = function(n, x, o)
        o:store(-1.0)
        mgpu.emit_pipeline(function(_, xs, os) os:store(xs:load()) end, {
          grid = { n }, max_concurrent_steps = 2, in_specs = { spec1(256) }, out_specs = { spec1(256) } })(x, o)
      end,
    }
    local x = mgpu.random.normal(512, "f32")
    assert.are.same({ -1, -1 }, { k(0, x):get(1), k(0, x):get(512) })
    assert.are.equal(x:get(300), k(2, x):get(300))
  end)
end)

-- -- Warp-specialized pipelines --------------------------------------------------------

-- out[b] = sum over the K steps of x blocks, computed by `ncomp` compute warpgroups that
-- each take a half (or all) of the rows; opts tweak the pipeline.
local function ws_sum(ncomp, opts)
  opts = opts or {}
  local steps, rows, cols = 5, 64 * ncomp, 64
  local k = mgpu.kernel{
    out_shape = mgpu.shape({ rows, cols }, "f32"), num_threads = ncomp + 1, thread_name = "wg",
    body = function(x, o)
      local wg = mgpu.axis_index("wg")
      local mine = mgpu.ds(wg * 64, 64)
      local function body(_, xs, ...)
        local rest = { ... }
        local carry = rest[#rest]
        if opts.manual_ready then mgpu.barrier_wait(rest[1]) end
        local nxt = carry + xs:at(mine, mgpu.all):load()
        if opts.manual_consumed then
          mgpu.barrier_arrive(rest[opts.manual_ready and 2 or 1])
        end
        return nxt
      end
      mgpu.emit_pipeline_warp_specialized(body, {
        grid = { steps }, memory_registers = 40, num_compute_wgs = ncomp, wg_axis = "wg",
        max_concurrent_steps = opts.depth or 2, manual_ready_barriers = opts.manual_ready,
        manual_consumed_barriers = opts.manual_consumed, memory_warps = opts.memory_warps,
        in_specs = { mgpu.BlockSpec{ { rows, cols }, function(s) return s, 0 end } },
        compute_context = function(run)
          local total = run(mgpu.broadcast(0.0, { 64, cols }))
          o:at(mine, mgpu.all):store(total)
        end,
      })(x)
    end,
  }
  local x = mgpu.random.normal({ steps * rows, cols }, "f32")
  local xt, want = x:to_table(), {}
  for i = 1, rows * cols do
    local s = 0
    for st = 0, steps - 1 do s = s + xt[st * rows * cols + i] end
    want[i] = s
  end
  return maxdiff(k(x):to_table(), want)
end

describe("emit_pipeline_warp_specialized", function()
  it("sums blocks with one compute warpgroup", function() assert.is_true(ws_sum(1) < 1e-4) end)
  it("sums blocks with two compute warpgroups and 3 slots", function() assert.is_true(ws_sum(2, { depth = 3 }) < 1e-4) end)
  it("hands manual consumed barriers to the body", function()
    assert.is_true(ws_sum(2, { manual_consumed = true }) < 1e-4)
  end)
  it("hands manual ready and consumed barriers to the body", function()
    assert.is_true(ws_sum(1, { manual_ready = true, manual_consumed = true }) < 1e-4)
  end)
  it("runs the loads on the memory warpgroup's first warp with memory_warps = 1", function()
    assert.is_true(ws_sum(2, { depth = 3, memory_warps = 1 }) < 1e-4)
    assert.is_true(ws_sum(1, { manual_consumed = true, memory_warps = 1 }) < 1e-4)
  end)

  it("stores outputs from its one compute warpgroup", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 6 * 64, 64 }, "f32"), num_threads = 2, thread_name = "wg",
      body = function(x, o)
        local spec = mgpu.BlockSpec{ { 64, 64 }, function(s) return s, 0 end }
        mgpu.emit_pipeline_warp_specialized(function(_, xs, os) os:store(xs:load() * 3.0) end, {
          grid = { 6 }, memory_registers = 40, num_compute_wgs = 1, wg_axis = "wg", max_concurrent_steps = 3,
          in_specs = { spec }, out_specs = { spec } })(x, o)
      end,
    }
    local x = mgpu.random.normal({ 6 * 64, 64 }, "f32")
    local want = {}
    for i, v in ipairs(x:to_table()) do want[i] = 3 * v end
    assert.is_true(maxdiff(k(x):to_table(), want) < 1e-5)
  end)

  -- the body TMA-stores each slot it reads to o (and sums it), leaving the store in flight;
  -- before_release waits until the store has read the slot, so the memory warpgroup may refill it
  local function forward_copy(delay, wait)
    local steps, calls = 6, {}
    local k = mgpu.kernel{
      out_shape = { mgpu.shape({ steps * 64, 64 }, "f32"), mgpu.shape({ 64, 64 }, "f32") },
      num_threads = 2, thread_name = "wg",
      body = function(x, o, total)
        local function body(idx, xs, acc)
          mgpu.copy_smem_to_gmem(xs, o:at(mgpu.ds(idx[1] * 64, 64), mgpu.all))
          return acc + xs:load()
        end
        mgpu.emit_pipeline_warp_specialized(body, {
          grid = { steps }, memory_registers = 40, num_compute_wgs = 1, wg_axis = "wg", max_concurrent_steps = 3,
          in_specs = { mgpu.BlockSpec{ { 64, 64 }, function(s) return s, 0 end, delay_release = delay } },
          compute_context = function(run) total:store(run(mgpu.broadcast(0.0, { 64, 64 }))) end,
          before_release = function(pending)
            calls[#calls + 1] = pending
            if wait then mgpu.wait_smem_to_gmem(pending, { wait_read_only = true }) end
          end,
        })(x)
        mgpu.wait_smem_to_gmem(0)
      end,
    }
    local x = mgpu.random.normal({ steps * 64, 64 }, "f32")
    local got, sum = k(x)
    local xt, want = x:to_table(), {}
    for i = 1, 64 * 64 do
      want[i] = 0
      for st = 0, steps - 1 do want[i] = want[i] + xt[st * 64 * 64 + i] end
    end
    return maxdiff(got:to_table(), xt), maxdiff(sum:to_table(), want), calls
  end
  for delay = 0, 1 do
    it("waits out the body's stores from its slots in before_release, delay_release = " .. delay, function()
      local copied, summed, calls = forward_copy(delay, true)
      assert.are.equal(0, copied)
      assert.is_true(summed < 1e-3)
      -- traced once per release site: the loop's (pending delay), the end's (pending 0 per delayed slot)
      assert.are.same(delay == 0 and { 0 } or { 1, 0 }, calls)
    end)
  end
  it("copies refilled slots without the wait in before_release (the check above can fail)", function()
    assert.is_true(forward_copy(1, false) > 0.1)
  end)

  it("runs START, STEADY and STOP pipelines on one allocation", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 3, 64, 64 }, "f32"), num_threads = 2, thread_name = "wg",
      body = function(x, o)
        local function pipe(t, state)
          return mgpu.emit_pipeline_warp_specialized(function(_, xs, acc) return acc + xs:load() end, {
            grid = { 4 }, memory_registers = 40, num_compute_wgs = 1, wg_axis = "wg", max_concurrent_steps = 2,
            pipeline_state = state, step_offset = t * 4,
            in_specs = { mgpu.BlockSpec{ { 64, 64 }, function(s) return t * 4 + s, 0 end } },
            compute_context = function(run) o:at(t):store(run(mgpu.broadcast(0.0, { 64, 64 }))) end,
          })
        end
        local S = mgpu.PipelineState
        mgpu.run_scoped({ p = pipe(0, S.START):get_allocations(x) }, function(s)
          for t, state in ipairs({ S.START, S.STEADY, S.STOP }) do pipe(t - 1, state)(x, { allocations = s.p }) end
        end)
      end,
    }
    local x = mgpu.random.normal({ 12 * 64, 64 }, "f32")
    local xt, want = x:to_table(), {}
    for t = 0, 2 do
      for i = 1, 4096 do
        local s = 0
        for st = 0, 3 do s = s + xt[(t * 4 + st) * 4096 + i] end
        want[t * 4096 + i] = s
      end
    end
    assert.is_true(maxdiff(k(x):to_table(), want) < 1e-4)
  end)

  it("chains pipelines shorter than their depth, with traced step counts, through step_offset", function()
    -- step counts 1, 2 and 3 (traced) over a depth of 3: the slots rotate across the chain
    local counts = { 1, 2, 3 }
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 3, 64, 64 }, "f32"), num_threads = 2, thread_name = "wg", grid = { 1 },
      body = function(x, o)
        local one = mgpu.program_id(0) + 1          -- a traced 1
        local function pipe(t, state, first, n, offset)
          return mgpu.emit_pipeline_warp_specialized(function(_, xs, acc) return acc + xs:load() end, {
            grid = { n }, memory_registers = 40, num_compute_wgs = 1, wg_axis = "wg", max_concurrent_steps = 3,
            pipeline_state = state, step_offset = offset,
            in_specs = { mgpu.BlockSpec{ { 64, 64 }, function(s) return first + s, 0 end } },
            compute_context = function(run) o:at(t):store(run(mgpu.broadcast(0.0, { 64, 64 }))) end,
          })
        end
        local S = mgpu.PipelineState
        mgpu.run_scoped({ p = pipe(0, S.START, 0, 1, 0):get_allocations(x) }, function(s)
          local first = 0
          for t, state in ipairs({ S.START, S.STEADY, S.STOP }) do
            pipe(t - 1, state, first, one * counts[t], first)(x, { allocations = s.p })
            first = first + counts[t]
          end
        end)
      end,
    }
    local x = mgpu.random.normal({ 6 * 64, 64 }, "f32")
    local xt, want, first = x:to_table(), {}, 0
    for t = 0, 2 do
      for i = 1, 4096 do
        local s = 0
        for st = 0, counts[t + 1] - 1 do s = s + xt[(first + st) * 4096 + i] end
        want[t * 4096 + i] = s
      end
      first = first + counts[t + 1]
    end
    assert.is_true(maxdiff(k(x):to_table(), want) < 1e-4)
  end)

  it("multicasts inputs along different cluster axes of a 2x2 cluster", function()
    -- block (i, j) sums x's row block i (multicast along cn, to the blocks that share it) plus
    -- y's row block j (multicast along cm) over 5 steps; a slot is free once the block and the
    -- two blocks that write into it have released it
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 2, 2, 64, 64 }, "f32"), num_threads = 2, thread_name = "wg", grid = { 1 },
      cluster = { 2, 2 }, cluster_names = { "cm", "cn" },
      body = function(x, y, o)
        local i, j = mgpu.axis_index("cm"), mgpu.axis_index("cn")
        mgpu.emit_pipeline_warp_specialized(function(_, xs, ys, acc) return acc + xs:load() + ys:load() end, {
          grid = { 5 }, memory_registers = 40, num_compute_wgs = 1, wg_axis = "wg", max_concurrent_steps = 2,
          in_specs = { mgpu.BlockSpec{ { 64, 64 }, function(s) return i, s end, collective_axes = "cn" },
                       mgpu.BlockSpec{ { 64, 64 }, function(s) return j, s end, collective_axes = { "cm" } } },
          compute_context = function(run) o:at(i, j):store(run(mgpu.broadcast(0.0, { 64, 64 }))) end,
        })(x, y)
      end,
    }
    local x, y = mgpu.random.normal({ 128, 320 }, "f32"), mgpu.random.normal({ 128, 320 }, "f32")
    local xt, yt, want = x:to_table(), y:to_table(), {}
    for i = 0, 1 do
      for j = 0, 1 do
        for r = 0, 63 do
          for c = 0, 63 do
            local sum = 0
            for st = 0, 4 do sum = sum + xt[(i * 64 + r) * 320 + st * 64 + c + 1] + yt[(j * 64 + r) * 320 + st * 64 + c + 1] end
            want[((i * 2 + j) * 64 + r) * 64 + c + 1] = sum
          end
        end
      end
    end
    assert.is_true(maxdiff(k(x, y):to_table(), want) < 1e-4)
  end)

  it("refuses an input multicast along two cluster axes at once", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 64, 64 }, "f32"), num_threads = 2, thread_name = "wg", grid = { 1 },
      cluster = { 2, 2 }, cluster_names = { "cm", "cn" },
      body = function(x, o)
        mgpu.emit_pipeline_warp_specialized(function(_, xs) o:store(xs:load()) end, {
          grid = { 2 }, memory_registers = 40, num_compute_wgs = 1, wg_axis = "wg",
          in_specs = { mgpu.BlockSpec{ { 64, 64 }, function(s) return s, 0 end, collective_axes = { "cm", "cn" } } },
        })(x)
      end,
    }
    assert.matches("pipeline_spec.lua:%d+: emit_pipeline_warp_specialized: in_specs%[1%]: multicast along one cluster axis",
                   err_of(k, mgpu.random.normal({ 128, 64 }, "f32")))
  end)

  -- Pallas' test_delay_release: o = x + y in 32x64 blocks, inputs released one step late; with
  -- manual consumed barriers the body gets the barrier of the slot released at this step (the
  -- step before's) and arrives on it at every step but the first
  for _, static in ipairs({ true, false }) do
    for _, manual in ipairs({ false, true }) do
      for _, depth in ipairs({ 2, 3, 4 }) do
        for _, m in ipairs({ 64, 256 }) do
          it(("releases inputs one step late (depth %d, %dx%d, %s grid%s)"):format(depth, m, m,
              static and "static" or "traced", manual and ", manual consumed barriers" or ""), function()
            local k = mgpu.kernel{
              out_shape = mgpu.shape({ m, m }, "f32"), num_threads = 2, thread_name = "wg", grid = { 1 },
              body = function(x, y, o)
                local grid = { m / 32, m / 64 }
                if not static then
                  local one = mgpu.program_id(0) + 1
                  grid = { one * (m / 32), one * (m / 64) }
                end
                local spec = mgpu.BlockSpec{ { 32, 64 }, function(i, j) return i, j end, delay_release = 1 }
                local ospec = mgpu.BlockSpec{ { 32, 64 }, function(i, j) return i, j end }
                mgpu.emit_pipeline_warp_specialized(function(idx, xs, ys, os, cx, cy)
                  os:store(xs:load() + ys:load())
                  if manual then
                    mgpu.when(mgpu.bitwise_or(mgpu.ne(idx[1], 0), mgpu.ne(idx[2], 0)), function()
                      mgpu.barrier_arrive(cx)
                      mgpu.barrier_arrive(cy)
                    end)
                  end
                end, { grid = grid, max_concurrent_steps = depth, manual_consumed_barriers = manual,
                       num_compute_wgs = 1, memory_registers = 40, wg_axis = "wg",
                       in_specs = { spec, spec }, out_specs = { ospec } })(x, y, o)
              end,
            }
            local x, y = mgpu.random.normal({ m, m }, "f32"), mgpu.random.normal({ m, m }, "f32")
            local want, xt, yt = {}, x:to_table(), y:to_table()
            for i = 1, m * m do want[i] = xt[i] + yt[i] end
            assert.is_true(maxdiff(k(x, y):to_table(), want) < 1e-5)
          end)
        end
      end
    end
  end

  it("reports a deadlock when the body never releases its slots", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 64, 64 }, "f32"), num_threads = 2, thread_name = "wg",
      body = function(x, o)
        mgpu.emit_pipeline_warp_specialized(function(_, xs) o:store(xs:load()) end, {
          grid = { 4 }, memory_registers = 40, num_compute_wgs = 1, wg_axis = "wg", manual_consumed_barriers = true,
          in_specs = { mgpu.BlockSpec{ { 64, 64 }, function(s) return s, 0 end } },
        })(x)
      end,
    }
    assert.matches("deadlock", err_of(k, mgpu.random.normal({ 256, 64 }, "f32")))
  end)
end)

-- -- Loops -----------------------------------------------------------------------------

describe("nd_loop", function()
  it("splits a grid round robin over the blocks of an axis and carries a count", function()
    local k = mgpu.kernel{
      grid = { 4 }, grid_names = { "w" },
      out_shape = { mgpu.shape({ 2, 3 }, "i32"), mgpu.shape({ 4 }, "i32") },
      body = function(owner, count)
        local n = mgpu.nd_loop({ 2, 3 }, { collective_axes = "w", init_carry = 0 }, function(info, c)
          owner:at(info.index[1], info.index[2]):store(mgpu.axis_index("w") * 10 + info.local_index)
          return c + 1
        end)
        count:at(mgpu.program_id(0)):store(n)
      end,
    }
    local owner, count = k()
    -- points in row-major order 0..5 go to blocks 0,1,2,3,0,1 at local steps 0,0,0,0,1,1
    assert.are.same({ 0, 10, 20, 30, 1, 11 }, owner:to_table())
    assert.are.same({ 2, 2, 1, 1 }, count:to_table())
  end)

  it("walks a tiled grid tile by tile", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 4, 4 }, "i32"),
      body = function(order)
        mgpu.nd_loop({ 4, 4 }, { tiling = { 2, 2 } }, function(info)
          order:at(info.index[1], info.index[2]):store(info.local_index)
        end)
      end,
    }
    assert.are.same({ 0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15 }, k():to_table())
  end)
end)

describe("nd_loop over a traced grid", function()
  it("walks it tile by tile with a static tiling", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 4, 6 }, "i32"), grid = { 1 },
      body = function(rows, order)
        mgpu.nd_loop({ rows, 6 }, { tiling = { 2, 3 } }, function(info)
          order:at(info.index[1], info.index[2]):store(info.local_index)
        end)
      end,
    }
    -- tiles of 2x3, row-major inside, the tiles row-major
    assert.are.same({ 0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11, 12, 13, 14, 18, 19, 20, 15, 16, 17, 21, 22, 23 },
                    k(4):to_table())
  end)
end)

describe("planar_snake", function()
  local function table_of(shape, minor, width)
    local n = shape[1] * shape[2]
    local k = mgpu.kernel{
      grid = { n }, out_shape = mgpu.shape({ n, 2 }, "i32"),
      body = function(o)
        local l = mgpu.program_id(0)
        local i, j = mgpu.planar_snake(l, shape, minor, width)
        o:at(l, 0):store(i)
        o:at(l, 1):store(j)
      end,
    }
    local t, out = k():to_table(), {}
    for l = 0, n - 1 do out[l + 1] = { t[2 * l + 1], t[2 * l + 2] } end
    return out
  end

  it("matches the documented 8x8 order (minor dim 0, width 2)", function()
    local want = { { 0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7 } }
    local t = table_of({ 8, 8 }, 0, 2)
    -- linear indices 0..15 fill rows 0 and 1 column by column; 16..31 come back along rows 2 and 3
    local rank = {}
    for l, ij in ipairs(t) do rank[ij[1] * 8 + ij[2]] = l - 1 end
    assert.are.same({ 0, 2, 4, 6, 8, 10, 12, 14 }, { rank[0], rank[1], rank[2], rank[3], rank[4], rank[5], rank[6], rank[7] })
    assert.are.same({ 30, 28, 26, 24, 22, 20, 18, 16 }, { rank[16], rank[17], rank[18], rank[19], rank[20], rank[21], rank[22], rank[23] })
    assert.are.same({ 63, 61, 59, 57, 55, 53, 51, 49 }, { rank[56], rank[57], rank[58], rank[59], rank[60], rank[61], rank[62], rank[63] })
    assert.is_table(want)
  end)

  it("covers a partial last strip", function()
    assert.are.same({ { 0, 0 }, { 1, 0 }, { 0, 1 }, { 1, 1 }, { 0, 2 }, { 1, 2 }, { 2, 2 }, { 3, 2 }, { 2, 1 }, { 3, 1 },
                      { 2, 0 }, { 3, 0 }, { 4, 0 }, { 4, 1 }, { 4, 2 } }, table_of({ 5, 3 }, 0, 2))
  end)

  it("works with minor dim 1 and at trace time", function()
    local i, j = mgpu.planar_snake(5, { 3, 4 }, 1, 2)
    assert.are.same({ 2, 1 }, { i, j })   -- strip 0 is columns 0-1: (0,0) (0,1) (1,0) (1,1) (2,0) (2,1)
  end)

  it("refuses a constant index outside the grid", function()
    assert.are.same({ 0, 3 }, { mgpu.planar_snake(15, { 4, 4 }, 1, 2) })   -- the last index is fine
    -- index 100 of 4x4 once gave (2, 24)
    assert.matches("pipeline_spec.lua:%d+: planar_snake: index 100 is outside the 4x4 grid %(0 to 15%)",
                   err_of(mgpu.planar_snake, 100, { 4, 4 }, 1, 2))
    assert.matches("planar_snake: index %-1 is outside the 3x5 grid %(0 to 14%)", err_of(mgpu.planar_snake, -1, { 3, 5 }, 0, 2))
    assert.matches("planar_snake index must be an integer, got 2.5", err_of(mgpu.planar_snake, 2.5, { 4, 4 }, 1, 2))
  end)
end)

describe("pallas_call", function()
  for _, order in ipairs({ "parallel-first", "sequential-first" }) do
    it("turns the sequential axis into a pipeline (" .. order .. ")", function()
      local R, C, br, bc = 16, 1024, 8, 256
      local pf = order == "parallel-first"
      local function im(a, b) if pf then return a, b end return b, a end
      local k = mgpu.pallas_call{
        grid = pf and { R / br, C / bc } or { C / bc, R / br },
        in_specs = { mgpu.BlockSpec{ { br, bc }, function(a, b) local i, j = im(a, b); return i, j end } },
        out_specs = mgpu.BlockSpec{ { br, bc }, function(a, b) local i = im(a, b); return i, 0 end },
        out_shape = mgpu.shape({ R, bc }, "f32"),
        compiler_params = mgpu.CompilerParams{ dimension_semantics = pf and { "parallel", "sequential" } or { "sequential", "parallel" },
                                               max_concurrent_steps = 2 },
        body = function(xs, os)
          local j = mgpu.program_id(pf and 1 or 0)
          mgpu.cond(mgpu.eq(j, 0), function() os:store(xs:load()) end, function() os:store(os:load() + xs:load()) end)
        end,
      }
      local x = mgpu.random.normal({ R, C }, "f32")
      assert.is_true(maxdiff(k(x):to_table(), block_row_sums(x, R, C, bc)) < 1e-4)
    end)
  end
end)

describe("pallas_call without specs, with GMEM specs, with nested specs", function()
  local function plus(x, c)
    local want = {}
    for i, v in ipairs(x:to_table()) do want[i] = v + c end
    return want
  end

  it("pipelines each operand whole through SMEM when there are no grid and no specs", function()
    local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 256 }, "f32"),
                                body = function(x, o) o:store(x:load() + 1.0) end }
    local x = mgpu.random.normal({ 256 }, "f32")
    assert.is_true(maxdiff(k(x):to_table(), plus(x, 1)) < 1e-6)
    assert.matches("smem", k:lower(x).ir)
  end)

  it("hands GMEM blocks and whole GMEM arrays to the body", function()
    local G = mgpu.GMEM
    local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 512 }, "f32"), grid = { 4 },
      in_specs = { mgpu.BlockSpec{ { 128 }, function(i) return i end, memory_space = G } },
      out_specs = { mgpu.BlockSpec{ { 128 }, function(i) return i end, memory_space = G } },
      body = function(x, o) o:store(x:load() * 2.0) end }
    local whole = mgpu.pallas_call{ out_shape = mgpu.shape({ 512 }, "f32"), grid = { 4 },
      in_specs = { mgpu.BlockSpec{ memory_space = G } }, out_specs = { mgpu.BlockSpec{ memory_space = G } },
      body = function(x, o)
        local b = mgpu.ds(mgpu.program_id(0) * 128, 128)
        o:at(b):store(x:at(b):load() + 3.0)
      end }
    local x = mgpu.random.normal({ 512 }, "f32")
    local twice = {}
    for i, v in ipairs(x:to_table()) do twice[i] = 2 * v end
    assert.is_true(maxdiff(k(x):to_table(), twice) < 1e-6)
    assert.is_true(maxdiff(whole(x):to_table(), plus(x, 3)) < 1e-6)
    assert.is_nil(k:lower(x).ir:find("smem_alloc"))
  end)

  it("hands nested in_specs and out_specs to the body nested the same way", function()
    local S = mgpu.BlockSpec
    local k = mgpu.pallas_call{ out_shape = { mgpu.shape({ 128 }, "f32"), mgpu.shape({ 128 }, "f32") },
      in_specs = { { S{}, { b = S{} } } }, out_specs = { { sum = S{}, copy = S{ memory_space = mgpu.GMEM } } },
      body = function(xy, o)
        o.sum:store(xy[1]:load() + xy[2].b:load())
        o.copy:store(xy[1]:load())
      end }
    local x, y = mgpu.random.normal({ 128 }, "f32"), mgpu.random.normal({ 128 }, "f32")
    local copy, sum = k(x, y)     -- outputs in the specs' order: named keys sorted
    local want, xt, yt = {}, x:to_table(), y:to_table()
    for i = 1, 128 do want[i] = xt[i] + yt[i] end
    assert.is_true(maxdiff(sum:to_table(), want) < 1e-6)
    assert.is_true(maxdiff(copy:to_table(), xt) < 1e-6)
  end)

  it("refuses a number as an input without in_specs", function()
    local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 128 }, "f32"), body = function(x, s, o) o:store(x:load()) end }
    assert.matches("pallas_call input 2 is a number: a pallas_call without in_specs pipelines whole arrays",
                   err_of(k, mgpu.random.normal({ 128 }, "f32"), 2))
  end)
end)

describe("nested specs in pipelines", function()
  -- Pallas' test_elementwise_add with in_specs shaped (x, (y,)): the body gets (xs, { ys }), and
  -- with manual barriers those come nested the same way
  for _, manual in ipairs({ false, true }) do
    it("gives the warp-specialized body its refs and barriers nested as in_specs" .. (manual and " (manual)" or ""), function()
      local k = mgpu.kernel{
        out_shape = mgpu.shape({ 128, 128 }, "f32"), num_threads = 2, thread_name = "wg",
        body = function(x, y, o)
          local spec = mgpu.BlockSpec{ { 64, 64 }, function(i, j) return i, j end }
          mgpu.emit_pipeline_warp_specialized(function(_, xs, ys, os, rx, ry, cx, cy)
            if manual then
              mgpu.barrier_wait(rx)
              mgpu.barrier_wait(ry[1])
            end
            os:store(xs:load() + ys[1]:load())
            if manual then
              mgpu.barrier_arrive(cx)
              mgpu.barrier_arrive(cy[1])
            end
          end, { grid = { 2, 2 }, max_concurrent_steps = 2, num_compute_wgs = 1, memory_registers = 40, wg_axis = "wg",
                 manual_ready_barriers = manual, manual_consumed_barriers = manual,
                 in_specs = { spec, { spec } }, out_specs = { spec } })(x, { y }, o)
        end,
      }
      local x, y = mgpu.random.normal({ 128, 128 }, "f32"), mgpu.random.normal({ 128, 128 }, "f32")
      local want, xt, yt = {}, x:to_table(), y:to_table()
      for i = 1, 128 * 128 do want[i] = xt[i] + yt[i] end
      assert.is_true(maxdiff(k(x, y):to_table(), want) < 1e-6)
    end)
  end

  it("names the argument whose nesting differs from its specs", function()
    local k = mgpu.kernel{
      out_shape = mgpu.shape({ 128 }, "f32"),
      body = function(x, o)
        mgpu.emit_pipeline(function() end, { grid = { 1 }, in_specs = { { spec1(128) } }, out_specs = spec1(128) })(x, o)
      end,
    }
    assert.matches("emit_pipeline input argument 1 must be nested as its specs are: expected a table, got",
                   err_of(k, mgpu.random.normal({ 128 }, "f32")))
  end)
end)

describe("pipeline errors", function()
  local function run_body(body, opts)
    local spec = { out_shape = mgpu.shape({ 256 }, "f32"), body = body }
    for k, v in pairs(opts or {}) do spec[k] = v end
    return err_of(mgpu.kernel(spec), mgpu.zeros(256, "f32"))
  end
  local here = "pipeline_spec.lua:%d+: "

  it("refuses delay_release >= max_concurrent_steps", function()
    assert.matches(here .. "emit_pipeline: input 1 has delay_release = 2, which must be less than max_concurrent_steps = 2",
      err_of(mgpu.emit_pipeline, function() end, { grid = { 4 }, max_concurrent_steps = 2,
        in_specs = { mgpu.BlockSpec{ { 64 }, function(i) return i end, delay_release = 2 } } }))
  end)
  it("refuses grid dims below 1", function()
    assert.matches(here .. "emit_pipeline grid%[1%] must be at least 1, got 0",
      err_of(mgpu.emit_pipeline, function() end, { grid = { 0 } }))
  end)
  it("refuses a block shape of another rank than the array", function()
    assert.matches(here .. "emit_pipeline input 1: block_shape has 2 dims but the array %[256%] has 1", run_body(function(x)
      mgpu.emit_pipeline(function() end, { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 8, 128 } } } })(x)
    end))
  end)
  it("refuses an index map of the wrong arity", function()
    assert.matches(here .. "emit_pipeline input 1: index_map takes 2 arguments but the grid has 1 axes", run_body(function(x)
      mgpu.emit_pipeline(function() end, { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 128 }, function(i, j) return i end } } })(x)
    end))
  end)
  it("refuses an index map returning the wrong count, at the map's line", function()
    assert.matches(here .. "emit_pipeline input 1: index_map returned 2 values, expected 1", run_body(function(x)
      mgpu.emit_pipeline(function() end, { grid = { 2 }, in_specs = { mgpu.BlockSpec{ { 128 }, function(i) return i, 0 end } } })(x)
    end))
  end)
  local function ws(opts, threads, call)
    return run_body(function(x)
      local o = { grid = { 2 }, memory_registers = 40, num_compute_wgs = 1, wg_axis = "wg",
                  in_specs = { mgpu.BlockSpec{ { 128 }, function(i) return i end } } }
      for k, v in pairs(opts) do o[k] = v end
      local p = mgpu.emit_pipeline_warp_specialized(function() end, o)
      if call then p(x) end
    end, { num_threads = threads, thread_name = "wg" })
  end
  it("refuses a memory_thread_idx outside the threads", function()
    assert.matches(here .. "emit_pipeline_warp_specialized: memory_thread_idx = 5 is outside the kernel's 2 threads",
      ws({ memory_thread_idx = 5 }, 2, true))
  end)
  it("refuses num_threads other than num_compute_wgs + 1", function()
    assert.matches(here .. "emit_pipeline_warp_specialized: the kernel has num_threads = 3 but the pipeline needs num_compute_wgs %+ 1 = 2",
      ws({}, 3, true))
  end)
  it("refuses memory_warps other than 1 and 4", function()
    assert.matches(here .. "emit_pipeline_warp_specialized: memory_warps must be 4 %(the whole memory warpgroup loads%) or 1 %(its first warp%), got 2",
      ws({ memory_warps = 2 }, 2, false))
  end)
  it("refuses before_release with manual consumed barriers", function()
    assert.matches(here .. "emit_pipeline_warp_specialized: before_release runs where the pipeline releases slots, so not with manual_consumed_barriers",
      ws({ manual_consumed_barriers = true, before_release = function() end }, 2, false))
  end)
  it("refuses pipeline_state without allocations", function()
    assert.matches(here .. "emit_pipeline_warp_specialized: pipeline_state needs allocations",
      ws({ pipeline_state = mgpu.PipelineState.START }, 2, true))
  end)
  it("refuses unknown BlockSpec and CompilerParams options", function()
    assert.matches(here .. "BlockSpec: unknown option 'delay'", err_of(mgpu.BlockSpec, { delay = 1 }))
    assert.matches(here .. "CompilerParams: dimension_semantics%[2%] must be \"parallel\" or \"sequential\", got wrong",
      err_of(mgpu.CompilerParams, { dimension_semantics = { "parallel", "wrong" } }))
  end)
end)

describe("GMEM atomics", function()
  local function body_err(body, dt)
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 4 }, dt or "i32"), body = body }
    return err_of(k)
  end
  it("hand every warpgroup the old value (one read-modify-write each)", function()
    local k = mgpu.kernel{
      grid = { 3 }, num_threads = 2, thread_name = "wg", out_shape = { mgpu.shape({ 1 }, "u32"), mgpu.shape({ 3, 2 }, "u32") },
      body = function(c, got)
        got:at(mgpu.program_id(0), mgpu.axis_index("wg")):store(mgpu.atomic_add(c:at(0), 10))
      end,
    }
    local c, got = mgpu.zeros({ 1 }, "u32"), mgpu.zeros({ 3, 2 }, "u32")
    k:call_into({ c, got })
    local t = got:to_table()
    table.sort(t)
    assert.are.same({ 0, 10, 20, 30, 40, 50 }, t)
    assert.are.equal(60, c:get(1))
  end)
  it("refuse a ref of more than one element, at the script line", function()
    assert.matches("pipeline_spec.lua:%d+: atomic_add: the ref must be one element %(index every dim%), not &gmem i32%[4%]",
      body_err(function(c) mgpu.atomic_add(c, 1) end))
  end)
  it("refuse unsupported dtypes and options", function()
    assert.matches("atomic_max: f32 is not supported", body_err(function(c) mgpu.atomic_max(c:at(0), 1.5) end, "f32"))
    assert.matches("pipeline_spec.lua:%d+: atomic_add: sem must be relaxed, acquire, release or acq_rel, got seq",
      body_err(function(c) mgpu.atomic_add(c:at(0), 1, { sem = "seq" }) end))
    assert.matches("atomic_cas: expected 2 values after the ref", body_err(function(c) mgpu.atomic_cas(c:at(0), 1) end))
  end)
end)

describe("dynamic_scheduling_loop", function()
  -- every item's visit count (atomically), its last local index and is_last, per launch
  local function scheduler(opts)
    local nt, items, workers = opts.nt or 1, opts.items, opts.workers
    return mgpu.kernel{
      name = "dyn", grid = { workers }, grid_names = { "b" }, num_threads = nt, thread_name = nt > 1 and "wg" or nil,
      out_shape = { mgpu.shape({ items }, "i32"), mgpu.shape({ items }, "i32"), mgpu.shape({ workers }, "i32") },
      body = function(counter, visits, last, per_block)
        local n = mgpu.dynamic_scheduling_loop("b", { counter = counter, grid = opts.pallas_form and nil or { items },
                                                     thread_axis = nt > 1 and "wg" or nil, init_carry = 0 },
          function(info, count)
            local first_wg = nt == 1 or mgpu.eq(mgpu.axis_index("wg"), 0)
            mgpu.when(first_wg, function()
              mgpu.atomic_add(visits:at(info.index[1]), 1)
              last:at(info.index[1]):store(mgpu.select(info.is_last, 1, 0))
            end)
            return count + 1
          end)
        mgpu.when(nt == 1 or mgpu.eq(mgpu.axis_index("wg"), 0), function() per_block:at(mgpu.program_id(0)):store(n) end)
      end,
    }
  end
  local function check(opts)
    local k, counter = scheduler(opts), mgpu.zeros({ 2 }, "i32")
    for _ = 1, 2 do   -- the loop leaves the counter at zero for the next launch
      local visits, last, per_block = mgpu.zeros({ opts.items }, "i32"), mgpu.zeros({ opts.items }, "i32"),
                                      mgpu.zeros({ opts.workers }, "i32")
      k:call_into({ visits, last, per_block }, counter)
      for _, v in ipairs(visits:to_table()) do assert.are.equal(1, v) end
      local sum, lasts = 0, 0
      for _, v in ipairs(per_block:to_table()) do sum = sum + v; if v > 0 then lasts = lasts + 1 end end
      assert.are.equal(opts.items, sum)
      for _, v in ipairs(last:to_table()) do lasts = lasts - v end
      assert.are.equal(0, lasts)   -- one last item per block that ran any
      assert.are.same({ 0, 0 }, counter:to_table())
    end
  end
  it("claims every item exactly once with one warpgroup", function() check({ items = 37, workers = 5 }) end)
  it("claims for the block on the last warpgroup and publishes through SMEM", function()
    check({ items = 23, workers = 3, nt = 3 })
  end)
  it("takes the launch grid as the work without grid (blocks that find none exit)", function()
    check({ items = 6, workers = 6, pallas_form = true, nt = 2 })
  end)
  it("leaves blocks without items when there are more blocks than items", function() check({ items = 1, workers = 4 }) end)
  it("runs again in a loop and keeps every warpgroup in its scope until the claimer is done", function()
    local items = 9
    local k = mgpu.kernel{
      name = "dyn2", grid = { 2 }, grid_names = { "b" }, num_threads = 3, thread_name = "wg",
      out_shape = mgpu.shape({ 2, items }, "i32"),
      body = function(counter, visits)
        mgpu.fori(0, 2, function(r)
          mgpu.dynamic_scheduling_loop("b", { counter = counter:at(mgpu.ds(r * 2, 2)), grid = { items }, thread_axis = "wg" },
            function(info)
              mgpu.when(mgpu.eq(mgpu.axis_index("wg"), 0), function() mgpu.atomic_add(visits:at(r, info.index[1]), 1) end)
            end)
          -- SMEM of a new scope at the offsets the loop's slots had, written by the claimer's warpgroup
          mgpu.run_scoped(function(t)
            mgpu.when(mgpu.eq(mgpu.axis_index("wg"), 2), function() t:at(0):store(3); t:at(1):store(3) end)
          end, mgpu.SMEM({ 2 }, "i32"))
        end)
      end }
    local counter, visits = mgpu.zeros({ 4 }, "i32"), mgpu.zeros({ 2, items }, "i32")
    k:call_into(visits, counter)
    for _, v in ipairs(visits:to_table()) do assert.are.equal(1, v) end
    assert.are.same({ 0, 0, 0, 0 }, counter:to_table())
  end)
  it("runs two loops of one kernel on counters of their own", function()
    local k = mgpu.kernel{ name = "dyn3", grid = { 3 }, grid_names = { "b" }, out_shape = mgpu.shape({ 2, 7 }, "i32"),
      body = function(counter, visits)
        for r = 0, 1 do   -- two loops; a shared counter is refused (spec/hostile/dynamic_shared_counter.lua)
          mgpu.dynamic_scheduling_loop("b", { counter = counter:at(mgpu.ds(2 * r, 2)), grid = { 7 } },
            function(info) mgpu.atomic_add(visits:at(r, info.index[1]), 1) end)
        end
      end }
    local counter, visits = mgpu.zeros({ 4 }, "i32"), mgpu.zeros({ 2, 7 }, "i32")
    k:call_into(visits, counter)
    for _, v in ipairs(visits:to_table()) do assert.are.equal(1, v) end
    assert.are.same({ 0, 0, 0, 0 }, counter:to_table())
    local stale = mgpu.from_table({ 0, 0, 3, 0 }, "i32")   -- interpreted, a counter not zero at launch is refused
    assert.matches("pipeline_spec.lua:%d+: kernel 'dyn3': the dynamic_scheduling_loop counter %(argument 1 at offset 2%) " ..
                   "holds {3, 0} at launch", err_of(function() k:call_into(visits, stale) end))
  end)

  it("explains what Hopper needs and refuses bad options", function()
    local function body_err(opts, nt)
      local k = mgpu.kernel{ grid = { 2 }, grid_names = { "b" }, num_threads = nt or 1, thread_name = nt and "wg" or nil,
        out_shape = mgpu.shape({ 4 }, "i32"),
        body = function(c, o) mgpu.dynamic_scheduling_loop("b", opts(c, o), function() end) end }
      return err_of(k, mgpu.zeros({ 2 }, "i32"))
    end
    assert.matches("pipeline_spec.lua:%d+: dynamic_scheduling_loop: Hopper has no cluster launch control: pass counter",
      body_err(function() return {} end))
    assert.matches("counter must be a GMEM i32 ref of shape {n}, n >= 2", body_err(function(_, o) return { counter = o:at(mgpu.ds(0, 1)) } end))
    assert.matches("unknown option 'thread'", body_err(function(c) return { counter = c, thread = "wg" } end))
    assert.matches("cluster_axes needs cluster launch control", body_err(function(c) return { counter = c, cluster_axes = "x" } end))
    assert.matches("the kernel has 2 warpgroups: give thread_axis", body_err(function(c) return { counter = c } end, 2))
    local unnamed = mgpu.kernel{ grid = { 2, 3 }, grid_names = { "x" }, out_shape = mgpu.shape({ 4 }, "i32"),
      body = function(c) mgpu.dynamic_scheduling_loop("x", { counter = c, grid = { 5 } }, function() end) end }
    assert.matches("launch%-grid axis 1 %(unnamed%) is not in grid_names", err_of(unnamed, mgpu.zeros({ 2 }, "i32")))
    local clustered = mgpu.kernel{ grid = { 2 }, grid_names = { "b" }, cluster = { 2 }, cluster_names = { "c" },
      out_shape = mgpu.shape({ 4 }, "i32"),
      body = function(c) mgpu.dynamic_scheduling_loop("b", { counter = c }, function() end) end }
    assert.matches("pipeline_spec.lua:%d+: dynamic_scheduling_loop: blocks claim work one by one; clusters would need",
      err_of(clustered, mgpu.zeros({ 2 }, "i32")))
  end)
end)

describe("races between blocks in GMEM (interpreter)", function()
  it("reports blocks of a parallel pallas_call writing the same output block", function()
    local k = mgpu.pallas_call{ out_shape = mgpu.shape({ 128 }, "f32"), grid = { 4 },
      in_specs = { mgpu.BlockSpec{ { 128 }, function(i) return i end } },
      out_specs = { mgpu.BlockSpec{ { 128 }, function(_) return 0 end } },
      body = function(x, o) o:store(o:load() + x:load()) end }
    assert.matches("race between blocks: block %(1%) writes element 0 of output 1, which block %(0%) wrote at " ..
                   "spec/pipeline_spec.lua:%d+, with nothing ordering the two",
                   err_of(k, mgpu.random.normal({ 512 }, "f32")))
  end)

  it("reports a write of what another block read, naming the lines", function()
    local k = mgpu.kernel{ out_shape = mgpu.shape({ 2, 64 }, "f32"), grid = { 2 },
      body = function(x, o)
        local i = mgpu.program_id(0)
        o:at(i):store(x:load())
        o:at(i):store(o:at(1 - i):load())
      end }
    local msg = err_of(k, mgpu.random.normal({ 64 }, "f32"))
    -- block 0 read row 1 before block 1 (run after it here) wrote it
    assert.matches("spec/pipeline_spec.lua:%d+: race between blocks: block %(1%) writes element 64 of output 1, which block %(0%) read at spec/pipeline_spec.lua:%d+", msg)
  end)

  it("accepts blocks ordered by a semaphore, and atomics on one element", function()
    local k = mgpu.kernel{ out_shape = { mgpu.shape({ 64 }, "f32"), mgpu.shape({ 1 }, "i32") }, grid = { 2 },
      scratch_shapes = { mgpu.SemaphoreType.REGULAR },
      body = function(x, o, count, sem)
        local i = mgpu.program_id(0)
        mgpu.atomic_add(count:at(0), 1)
        mgpu.when(mgpu.eq(i, 0), function()
          o:store(x:load())
          mgpu.semaphore_signal(sem, 1)
        end)
        mgpu.when(mgpu.eq(i, 1), function()
          mgpu.semaphore_wait(sem, 1)
          o:store(o:load() * 2.0)
        end)
      end }
    local x, o, count = mgpu.random.normal({ 64 }, "f32"), mgpu.empty({ 64 }, "f32"), mgpu.zeros({ 1 }, "i32")
    k:call_into({ o, count }, x)
    local xt, ot = x:to_table(), o:to_table()
    for j = 1, 64 do assert.are.equal(2 * xt[j], ot[j]) end
    assert.are.equal(2, count:get(1))
  end)
end)
