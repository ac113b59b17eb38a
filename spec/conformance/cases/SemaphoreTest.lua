-- The tests of JAX's SemaphoreTest (tests/pallas/mosaic_gpu_test.py): GMEM semaphores in
-- scratch, with the profiler, and global semaphores (pl.get_global, which mgpu lacks).
local C = dofile("spec/conformance/support/conf.lua")
local mgpu = C.mgpu

return function(cls)
  local test, diverge = cls.test, cls.diverge
  local function ones(n) return C.map(mgpu.zeros({ n }, "f32"), function() return 1 end) end
  local function no_get_global(name, fn)
    diverge(name, "new-get_global", "mgpu has no get_global (a semaphore shared by every block, without scratch)",
            "get_global", fn)
  end

  test("test_basic", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), scratch_shapes = { mgpu.SemaphoreType.REGULAR },
      grid = { 2 }, grid_names = { "x" },
      body = function(o, sem)
        mgpu.semaphore_signal(sem)
        o:store(mgpu.broadcast(1, { 128 }, "f32"))
        mgpu.semaphore_wait(sem)
      end }
    C.equal(k(), ones(128))
  end)

  test("test_with_profiler", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), scratch_shapes = { mgpu.SemaphoreType.REGULAR },
      grid = { 2 }, grid_names = { "x" }, compiler_params = { profile_space = 32, profile_dir = dir },
      body = function(o)
        mgpu.named_scope("output", function() o:store(mgpu.broadcast(1, { 128 }, "f32")) end)
      end }
    C.equal(k(), ones(128))
    local p = io.popen("cat " .. dir .. "/*.json; rm -rf " .. dir)
    local data = p:read("*a")
    p:close()
    local _, n = data:gsub('"name":%s*"output"', "")
    assert(n == 4, "two blocks, a begin and an end each: " .. n)
  end)

  for _, threads in ipairs({ 1, 2 }) do
    no_get_global(threads == 1 and "test_global_semaphore" or "test_global_semaphore_with_multiple_threads", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), grid = { 10 }, grid_names = { "x" },
        num_threads = threads, thread_name = threads > 1 and "wg" or nil,
        body = function(o)
          local sem = mgpu.get_global(mgpu.SemaphoreType.REGULAR)
          local b = mgpu.axis_index("x")
          mgpu.when(mgpu.eq(b, 0), function() mgpu.semaphore_signal(sem) end)
          mgpu.when(mgpu.eq(b, 1), function()
            mgpu.semaphore_wait(sem)
            o:store(mgpu.broadcast(1, { 128 }, "f32"))
          end)
        end }
      C.equal(k(), ones(128))
    end)
  end

  for _, scope in ipairs({ "sys", "gpu" }) do
    no_get_global("test_global_semaphore_with_multiple_warps(memory_scope=" .. scope .. ")", function()
      local k = cls.kernel{ out_shape = mgpu.shape({ 1 }, "i32"), body = function(o)
        local sem = mgpu.get_global(mgpu.SemaphoreType.REGULAR)
        mgpu.warp_map(function(w)
          mgpu.when(mgpu.eq(w, 0), function() mgpu.semaphore_signal(sem, 2, { memory_scope = scope }) end)
          mgpu.when(mgpu.eq(w, 1), function() mgpu.semaphore_wait(sem, 2, { memory_scope = scope, decrement = true }) end)
        end)
        o:at(0):store(mgpu.semaphore_read(sem))
      end }
      C.equal(k(), { 0 })
    end)
  end

  no_get_global("test_multiple_get_global_semaphores", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 2 }, "i32"), grid = { 10 }, grid_names = { "x" }, body = function(o)
      local s1, s2 = mgpu.get_global(mgpu.SemaphoreType.REGULAR), mgpu.get_global(mgpu.SemaphoreType.REGULAR)
      local b = mgpu.axis_index("x")
      mgpu.when(mgpu.eq(b, 0), function()
        mgpu.semaphore_signal(s1, 5)
        mgpu.semaphore_signal(s2, 10)
      end)
      mgpu.when(mgpu.eq(b, 1), function()
        mgpu.semaphore_wait(s1, 5, { decrement = false })
        mgpu.semaphore_wait(s2, 10, { decrement = false })
        o:at(0):store(mgpu.semaphore_read(s1))
        o:at(1):store(mgpu.semaphore_read(s2))
      end)
    end }
    C.equal(k(), { 5, 10 })
  end)

  no_get_global("test_get_global_in_and_outside_control_flow", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 3 }, "i32"), grid = { 1 }, grid_names = { "x" }, body = function(o)
      local before = mgpu.get_global(mgpu.SemaphoreType.REGULAR)
      mgpu.when(mgpu.eq(mgpu.axis_index("x"), 0), function()
        local inside = mgpu.get_global(mgpu.SemaphoreType.REGULAR)
        mgpu.semaphore_signal(inside, 7)
        mgpu.semaphore_signal(before, 3)
        o:at(1):store(mgpu.semaphore_read(inside))
      end)
      local after = mgpu.get_global(mgpu.SemaphoreType.REGULAR)
      mgpu.semaphore_signal(after, 11)
      o:at(0):store(mgpu.semaphore_read(before))
      o:at(2):store(mgpu.semaphore_read(after))
    end }
    C.equal(k(), { 3, 7, 11 })
  end)

  no_get_global("test_multiple_semaphore_scopes", function()
    local k = cls.kernel{ out_shape = mgpu.shape({ 128 }, "f32"), grid = { 10 }, grid_names = { "x" }, body = function(o)
      local global = mgpu.get_global(mgpu.SemaphoreType.REGULAR)
      mgpu.run_scoped({ block_sem = mgpu.SemaphoreType.REGULAR }, function(s)
        local b = mgpu.axis_index("x")
        mgpu.semaphore_signal(s.block_sem)
        mgpu.when(mgpu.eq(b, 0), function() mgpu.semaphore_signal(global) end)
        mgpu.when(mgpu.eq(b, 1), function()
          mgpu.semaphore_wait(global)
          o:store(mgpu.broadcast(1, { 128 }, "f32"))
        end)
        mgpu.semaphore_wait(s.block_sem)
      end)
    end }
    C.equal(k(), ones(128))
  end)
end
