-- Grids of any rank (up to 8; past 3 the leading axes fold into CUDA's z),
-- tuples of axis names, and scratch_shapes given as a table of names.
local mgpu = require "mgpu"

local err_of = dofile("spec/support/util.lua").err_of

-- Every block of `grid` writes code(program ids...) into its row of a
-- { prod(grid), 128 } i32 output; returns the first column as a table.
local function run_grid(grid, names, code)
  local n = 1
  for i = 1, #grid do n = n * grid[i] end
  local k = mgpu.kernel{
    grid = grid, grid_names = names, out_shape = mgpu.shape({ n, 128 }, "i32"),
    body = function(o)
      local flat = mgpu.program_id(0)
      for i = 2, #grid do flat = flat * grid[i] + mgpu.program_id(i - 1) end
      o:at(flat, mgpu.all):store(code())
    end,
  }
  local t, out = k():to_table(), {}
  for i = 1, n do out[i] = t[(i - 1) * 128 + 1] end
  return out, k
end

describe("grids of any rank", function()
  it("gives every axis of a 4-D grid its logical index and size", function()
    local G = { 2, 3, 4, 5 }
    local got = run_grid(G, nil, function()
      local c = mgpu.num_programs(0) * 1000 + mgpu.num_programs(1) * 100 + mgpu.num_programs(2) * 10 + mgpu.num_programs(3)
      return ((mgpu.program_id(0) * 10 + mgpu.program_id(1)) * 10 + mgpu.program_id(2)) * 10 + mgpu.program_id(3)
             + c * 10000
    end)
    local i = 0
    for a = 0, 1 do for b = 0, 2 do for c = 0, 3 do for d = 0, 4 do
      i = i + 1
      assert.are.equal(((a * 10 + b) * 10 + c) * 10 + d + 2345 * 10000, got[i])
    end end end end
  end)

  it("runs 8-D grids and keeps the logical grid in the IR", function()
    local G = { 2, 1, 2, 3, 1, 2, 2, 3 }
    local got, k = run_grid(G, nil, function() return mgpu.program_id(3) * 10 + mgpu.program_id(7) end)
    local i = 0
    for _ = 1, 2 * 1 * 2 do for d = 0, 2 do for _ = 1, 1 * 2 * 2 do for h = 0, 2 do
      i = i + 1
      assert.are.equal(d * 10 + h, got[i])
    end end end end
    local low = k:lower()
    assert.matches("grid=%(2, 1, 2, 3, 1, 2, 2, 3%)", low.ir)
    -- axes 0..5 fold into z: axis 3 is (z / (1*2)) % 3, the last two run along y and x
    assert.matches("%%ctaid%.z", low.ptx)
    assert.matches("mul%.hi%.u32 %%r%d+, %%r%d+, 1431655766", low.ptx)   -- % 3 as a multiply by (2^32 + 2) / 3
    assert.is_nil(low.ptx:find("rem.u32", 1, true))
    assert.matches("%%ctaid%.x", low.ptx)
  end)

  it("keeps 1- to 3-D grids on x, y, z without division", function()
    local k = mgpu.kernel{ grid = { 4, 5, 6 }, out_shape = mgpu.shape({ 1 }, "i32"),
      body = function(o) o:store(mgpu.program_id(0) + mgpu.program_id(1) + mgpu.program_id(2)) end }
    local ptx = k:lower().ptx
    assert.matches("mov%.u32 %%r%d+, %%ctaid%.z", ptx)
    assert.is_nil(ptx:match("div%.u32"))
    assert.is_nil(ptx:match("rem%.u32"))
  end)

  it("refuses a folded grid that does not fit CUDA's z dimension, at the call", function()
    local k = mgpu.kernel{ grid = { 300, 300, 2, 2 }, out_shape = mgpu.shape({ 1 }, "i32"), body = function(o) end }
    local err = err_of(k)
    assert.matches("grid_spec.lua:%d+: kernel 'kernel': grid %(300, 300, 2, 2%) does not fit CUDA's launch grid: " ..
                   "axes 0, 1 fold into CUDA's z dimension, 90000 blocks %(at most 65535%)", err)
  end)

  it("refuses y past 65535 and more than 8 axes", function()
    local k = mgpu.kernel{ grid = { 70000, 2 }, out_shape = mgpu.shape({ 1 }, "i32"), body = function(o) end }
    assert.matches("grid_spec.lua:%d+: kernel 'kernel': grid %(70000, 2%) does not fit CUDA's launch grid: " ..
                   "axis 0 runs along CUDA's y dimension, 70000 blocks %(at most 65535%)", err_of(k))
    local k9 = mgpu.kernel{ grid = { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, out_shape = mgpu.shape({ 1 }, "i32"), body = function(o) end }
    assert.matches("grid_spec.lua:%d+: grid has 9 dimensions; at most 8 are supported", err_of(k9))
  end)

  it("counts a cluster along the folded axis", function()
    local k = mgpu.kernel{ grid = { 200, 200, 1, 1 }, cluster = { 1, 1, 2 }, out_shape = mgpu.shape({ 1 }, "i32"),
                           body = function(o) end }
    assert.matches("grid_spec.lua:%d+: .-80000 blocks counting the cluster %(at most 65535%)", err_of(k))
  end)

  it("names axes of a 5-D grid and indexes tuples of axes row-major", function()
    local names = { "a", "b", "c", "d", "e" }
    local got = run_grid({ 2, 3, 2, 2, 3 }, names, function()
      return mgpu.axis_index(names) * 1000 + mgpu.axis_index({ "e", "c" }) * 10 + mgpu.axis_size({ "b", "e" })
    end)
    local i = 0
    for _ = 1, 2 * 3 do for c = 0, 1 do for _ = 1, 2 do for e = 0, 2 do
      i = i + 1
      assert.are.equal((i - 1) * 1000 + (e * 2 + c) * 10 + 9, got[i])
    end end end end
  end)

  it("mixes grid and warpgroup axes in a tuple", function()
    local k = mgpu.kernel{
      grid = { 3 }, grid_names = { "x" }, num_threads = 2, thread_name = "wg",
      out_shape = mgpu.shape({ 6, 128 }, "i32"),
      body = function(o)
        local i = mgpu.axis_index({ "x", "wg" })
        assert.are.equal(2, mgpu.axis_size({ "wg" }))
        o:at(i, mgpu.all):store(i * 10 + mgpu.axis_size({ "x", "wg" }))
      end,
    }
    local t = k():to_table()
    for r = 0, 5 do assert.are.equal(r * 10 + 6, t[r * 128 + 1]) end
  end)

  it("names unknown axes in a tuple and rejects empty tuples", function()
    local function try(body)
      return err_of(mgpu.kernel{ grid = { 2 }, grid_names = { "x" }, out_shape = mgpu.shape({ 1 }, "i32"), body = body })
    end
    assert.matches("grid_spec.lua:%d+: unknown axis name 'y' %(grid axes: x;", try(function(o) mgpu.axis_index({ "x", "y" }) end))
    assert.matches("grid_spec.lua:%d+: axis_index: the table of axis names is empty", try(function(o) mgpu.axis_index({}) end))
    assert.matches("grid_spec.lua:%d+: axis_size: axis name 2 must be a string, got number",
                   try(function(o) mgpu.axis_size({ "x", 3 }) end))
  end)

  it("folds the parallel axes of a pallas_call with 4 of them", function()
    local k = mgpu.pallas_call{
      grid = { 2, 2, 2, 3 },
      in_specs = { mgpu.BlockSpec{ { 1, 1, 1, 1, 64 }, function(a, b, c, d) return a, b, c, d, 0 end } },
      out_specs = { mgpu.BlockSpec{ { 1, 1, 1, 1, 64 }, function(a, b, c, d) return a, b, c, d, 0 end } },
      out_shape = mgpu.shape({ 2, 2, 2, 3, 64 }, "f32"),
      body = function(x, o)
        local id = ((mgpu.program_id(0) * 2 + mgpu.program_id(1)) * 2 + mgpu.program_id(2)) * 3 + mgpu.program_id(3)
        o:store(x:load() + id:astype("f32"))
      end,
    }
    local x = mgpu.random.normal({ 2, 2, 2, 3, 64 }, "f32")
    local xt, ot = x:to_table(), k(x):to_table()
    for b = 0, 23 do
      for j = 1, 64 do assert.is_true(math.abs(xt[b * 64 + j] + b - ot[b * 64 + j]) <= 1e-5 * (1 + b)) end
    end
  end)
end)

describe("scratch_shapes as a table of names", function()
  it("passes one table of refs after the outputs", function()
    local seen
    local k = mgpu.kernel{
      grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
      scratch_shapes = { buf = mgpu.SMEM({ 128 }, "f32"), bar = mgpu.Barrier{ num_arrivals = 1 },
                         pair = { mgpu.SMEM({ 128 }, "f32"), mgpu.SMEM({ 128 }, "f32") } },
      body = function(x, o, scratch, ...)
        seen = { scratch.buf ~= nil, scratch.bar ~= nil, scratch.pair[2] ~= nil, select("#", ...) }
        scratch.buf:store(x:load() * 2)
        scratch.pair[2]:store(scratch.buf:load() + 1)
        o:store(scratch.pair[2]:load())
      end,
    }
    local x = mgpu.iota(128)
    local out = k(x):to_table()
    assert.are.same({ true, true, true, 0 }, seen)
    for i = 1, 128 do assert.are.equal((i - 1) * 2 + 1, out[i]) end
  end)

  it("keeps the list form", function()
    local k = mgpu.kernel{
      grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 128 }, "f32"), mgpu.SMEM({ 128 }, "f32") },
      body = function(x, o, s1, s2)
        s1:store(x:load() + 1)
        s2:store(s1:load() * 3)
        o:store(s2:load())
      end,
    }
    local out = k(mgpu.iota(128)):to_table()
    for i = 1, 128 do assert.are.equal(i * 3, out[i]) end
  end)

  it("passes a table of names to a pallas_call body", function()
    local k = mgpu.pallas_call{
      grid = { 2 },
      in_specs = { mgpu.BlockSpec{ { 64 }, function(i) return i end } },
      out_specs = { mgpu.BlockSpec{ { 64 }, function(i) return i end } },
      out_shape = mgpu.shape({ 128 }, "f32"),
      scratch_shapes = { tmp = mgpu.SMEM({ 64 }, "f32") },
      body = function(x, o, s)
        s.tmp:store(x:load() - 1)
        o:store(s.tmp:load())
      end,
    }
    local out = k(mgpu.iota(128)):to_table()
    for i = 1, 128 do assert.are.equal(i - 2, out[i]) end
  end)

  it("rejects mixed and malformed tables at the definition", function()
    assert.matches("grid_spec.lua:%d+: mgpu.kernel: scratch_shapes is either a list or a table of names, not both",
                   err_of(mgpu.kernel, { grid = { 1 }, out_shape = mgpu.shape({ 1 }, "f32"), body = function() end,
                                         scratch_shapes = { mgpu.SMEM({ 8 }, "f32"), b = mgpu.SMEM({ 8 }, "f32") } }))
    assert.matches("grid_spec.lua:%d+: mgpu.kernel: scratch_shapes.b must be mgpu.SMEM%(...%), mgpu.Barrier{...} or a table of them",
                   err_of(mgpu.kernel, { grid = { 1 }, out_shape = mgpu.shape({ 1 }, "f32"), body = function() end,
                                         scratch_shapes = { b = 3 } }))
  end)
end)
