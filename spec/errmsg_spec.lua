-- The table of error messages (lua/mgpu/errmsg.lua): the important texts
-- are locked (raised through the public API, compared after their
-- "file:line: " prefix, which must name this spec's line), every code of the
-- table is used by the library, every code the library names is in the
-- table, and no library site makes a message of its own.
local mgpu = require "mgpu"
local errmsg = require "mgpu.errmsg"
local compat = require "mgpu.compat"
local util = dofile("spec/support/util.lua")

-- The message fn(...) raises, after a "file:line: " prefix naming this spec.
local function message(fn, ...)
  local err = util.err_of(fn, ...)
  local msg = type(err) == "string" and err:match("^[^\n]-errmsg_spec%.lua:%d+: (.*)$")
  assert(msg, "not located in errmsg_spec.lua: " .. tostring(err))
  return msg
end

-- A call of a one-block kernel whose body (x, o) is `body`, given x = f32[128].
local function traced(body, opts)
  return function()
    local spec = { name = "k", grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"), body = body }
    for k, v in pairs(opts or {}) do spec[k] = v end
    return mgpu.kernel(spec)(mgpu.zeros({ 128 }))
  end
end

-- A kernel adding two f32[128] inputs.
local add = mgpu.kernel{ name = "add", grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
                         body = function(x, y, o) o:store(x:load() + y:load()) end }

-- A kernel of grid `grid` (its errors show when it is called).
local function with_grid(grid)
  return function() return mgpu.kernel{ grid = grid, out_shape = mgpu.shape({ 128 }, "f32"), body = function(o) end }() end
end

-- A pallas_call over f32[128] with these specs, called.
local function pallas(grid, in_spec, out_spec)
  return function()
    return mgpu.pallas_call{ grid = grid, in_specs = { in_spec }, out_specs = out_spec, out_shape = mgpu.shape({ 128 }, "f32"),
                             body = function(x, o) o:store(x:load()) end }(mgpu.zeros({ 128 }))
  end
end

local locked = {
  -- arguments and options
  { "BlockSpec: unknown option 'size'", function() return mgpu.BlockSpec{ size = 1 } end },
  { "mgpu.configure: unknown option 'bogus'", function() mgpu.configure{ bogus = 1 } end },
  { "mgpu.kernel: unknown option 'gird'", function() return mgpu.kernel{ gird = { 1 } } end },
  { "load: unknown option 'bogus'", traced(function(x, o) x:load({ bogus = 1 }) end) },
  { "BlockSpec expects a table of options", function() return mgpu.BlockSpec(5) end },
  { "zeros shape[1] must be an integer, got 2.5", function() return mgpu.zeros({ 2.5 }) end },
  { "zeros shape[1] must be at least 1, got 0", function() return mgpu.zeros({ 0 }) end },
  { "CompilerParams: unknown field 'foo'", function() return mgpu.CompilerParams{ foo = 1 } end },
  { "mgpu.configure{ quiet } must come before the first kernel or array is created",
    function() mgpu.zeros({ 1 }); mgpu.configure{ quiet = true } end },
  -- shapes and dtypes
  { "zeros: unknown dtype f33", function() return mgpu.zeros({ 4 }, "f33") end },
  { "from_table: 3 values do not fill shape [2,2]", function() return mgpu.from_table({ 1, 2, 3 }, "f32", { 2, 2 }) end },
  { "reshape: [4] does not have 3 elements", function() return mgpu.zeros({ 3 }):reshape({ 4 }) end },
  { "shapes [128] and [2,64] do not broadcast", function()
      return mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
                          body = function(x, y, o) o:store(x:load() + y:load()) end }(mgpu.zeros({ 128 }), mgpu.zeros({ 2, 64 }))
    end },
  { "kernel 'add': output 1 must be a f32[128] array",
    function() return add:call_into(mgpu.zeros({ 128 }, "bf16"), mgpu.zeros({ 128 }), mgpu.zeros({ 128 })) end },
  -- arrays
  { "index 2 = 5 is out of range 1..4", function() return mgpu.zeros({ 2, 4 }):get(1, 5) end },
  { "index 9 is out of range 1..8", function() return mgpu.zeros({ 2, 4 }):get(9) end },
  { 'array: element t[2] is a string ("x"), not a number', function() return mgpu.array({ 1, "x" }) end },
  { "array: ragged nested table: t[2] is a table of 1 but t[1] has 2 elements (rows at one depth must have the same length)",
    function() return mgpu.array({ { 1, 2 }, { 3 } }) end },
  { "arithmetic on mgpu arrays runs inside a kernel body (x:load() + y:load()); on the host read them with a:to_table() " ..
    "or use mgpu.host", function() local a = mgpu.zeros({ 2 }); return a + a end },
  -- kernels and launches
  { "kernel 'add' takes 2 inputs, got 1 argument (its body has 3 parameters: 2 inputs, 1 output)",
    function() return add(mgpu.zeros({ 128 })) end },
  { "kernel 'add': argument 1 of 2 is nil (the kernel takes 2 inputs)", function() return add(nil, mgpu.zeros({ 128 })) end },
  { "kernel 'add': argument 2 must be an mgpu array or a number, got string", function() return add(mgpu.zeros({ 128 }), "x") end },
  { "grid[1] must be at least 1, got 0", with_grid({ 0 }) },
  { "grid has 9 dimensions; at most 8 are supported", with_grid({ 1, 1, 1, 1, 1, 1, 1, 1, 1 }) },
  { "grid must be a table of sizes (or a function returning one)", with_grid("x") },
  { "kernel 'big' needs 4096 bytes of SMEM but compiler_params.vmem_limit_bytes (the SMEM budget) is 1000", function()
      return mgpu.kernel{ name = "big", grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
                          scratch_shapes = { mgpu.SMEM({ 1024 }, "f32") },
                          compiler_params = mgpu.CompilerParams{ vmem_limit_bytes = 1000 }, body = function(o, s) end }()
    end },
  { "num_threads (warpgroups per block) must be between 1 and 8, got 9 (1152 threads; a block has at most 1024, 128 per " ..
    "warpgroup)", function() return mgpu.kernel{ num_threads = 9, grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"),
                                                  body = function() end } end },
  { "a cluster may hold at most 8 blocks (the portable cluster size), got 16", function()
      return mgpu.kernel{ cluster = { 4, 4 }, grid = { 1 }, out_shape = mgpu.shape({ 128 }, "f32"), body = function() end }
    end },
  { "call_into: call it as k:call_into(...) (with a colon), got number as the kernel", function() return add.call_into(5) end },
  -- tracing
  { "at: index 200 is out of range for dimension 0 of size 128", traced(function(x, o) o:store(x:at(200):load()) end) },
  { "too many indices: ref of rank 1 indexed with 2", traced(function(x, o) x:at(1, 2) end) },
  { "use mgpu.lt(a, b) or a:lt(b): Lua turns < into a boolean", traced(function(x, o) local v = x:load(); return v < v end) },
  { "a ref cannot be used in arithmetic; load it first with ref:load()", traced(function(x, o) return x + 1 end) },
  { "kernel body raised a non-string error: { code = 7 }", traced(function(x, o) error({ code = 7 }) end) },
  -- barriers and copies
  { "Barrier: num_barriers must be between 1 and 32, got 40", function() return mgpu.Barrier{ num_barriers = 40 } end },
  { "Barrier: num_arrivals must be at least 1, got 0", function() return mgpu.Barrier{ num_arrivals = 0 } end },
  { "ClusterBarrier: collective_axes is required", function() return mgpu.ClusterBarrier{} end },
  { "barrier_wait: expected a barrier, got number", traced(function(x, o) mgpu.barrier_wait(3) end) },
  { 'copy_gmem_to_smem: oob must be "zeros", "undefined" or "promise_in_bounds", got bad',
    traced(function(x, o) mgpu.copy_gmem_to_smem(x, x, x, { oob = "bad" }) end) },
  -- pipelines and BlockSpecs
  { "CompilerParams: delay_release = 2 must be less than max_concurrent_steps = 2",
    function() return mgpu.CompilerParams{ max_concurrent_steps = 2, delay_release = 2 } end },
  { "emit_pipeline: input 1 has delay_release = 2, which must be less than max_concurrent_steps = 2", traced(function(x, o)
      mgpu.emit_pipeline(function() end, { grid = { 2 }, max_concurrent_steps = 2,
                                           in_specs = { mgpu.BlockSpec{ { 64 }, function(i) return i end, delay_release = 2 } } })(x)
    end) },
  { "emit_pipeline: grid is required", traced(function(x, o) mgpu.emit_pipeline(function() end, {}) end) },
  { "emit_pipeline_warp_specialized: memory_registers is required (40 is typical on the H100)", traced(function(x, o)
      mgpu.emit_pipeline_warp_specialized(function() end, { grid = { 2 } })
    end) },
  { "pallas_call input 1: index_map takes 1 argument but the grid has 2 axes",
    pallas({ 2, 2 }, mgpu.BlockSpec{ { 64 }, function(i) return i end }, mgpu.BlockSpec{ { 64 }, function(i, j) return i end }) },
  { "emit_pipeline input 1: block_shape has 2 dims but the array [128] has 1",
    pallas({ 2 }, mgpu.BlockSpec{ { 64, 1 }, function(i) return i, 0 end }, mgpu.BlockSpec{ { 64 }, function(i) return i end }) },
  { "emit_pipeline input 1: index_map returned 2 values, expected 1 (one per dim of the array [128])",
    pallas({ 2 }, mgpu.BlockSpec{ { 64 }, function(i) return i, 0 end }, mgpu.BlockSpec{ { 64 }, function(i) return i end }) },
  -- loops
  { "fori: unroll must be at least 1 (or true), got 0", traced(function(x, o) mgpu.fori(0, 4, function(i) end, { unroll = 0 }) end) },
  { "nd_loop: the body must be a function", traced(function(x, o) mgpu.nd_loop({ 4 }, {}, 5) end) },
  { "planar_snake: tile_width must be at least 1, got 0", traced(function(x, o) mgpu.planar_snake(0, { 4, 4 }, 1, 0) end) },
  -- wgmma, layouts, what mgpu does not provide
  { "ACC: dtype must be f32, f16 or i32 (for i8/u8 operands), got bf16", function() return mgpu.ACC({ 64, 64 }, "bf16") end },
  { "TMEM: the shape must be {rows, columns}, got 1 dims", function() return mgpu.TMEM({ 128 }, "f32") end },
  { "mgpu.Layout.TCGEN05_TRANSPOSED is not provided: not implemented yet; load TMEM with TCGEN05 or TCGEN05_TMEM_NATIVE",
    function() return mgpu.Layout.TCGEN05_TRANSPOSED end },
  { "mgpu.Layout has no member 'FOO' (it has TCGEN05, TCGEN05_TMEM_NATIVE, TILED, WGMMA, WGMMA_8BIT, WGMMA_COL, WGMMA_ROW, " ..
    "WGMMA_TRANSPOSED, WG_SPLAT, WG_STRIDED)", function() return mgpu.Layout.FOO end },
}

describe("locked error messages", function()
  it("are at least 25", function() assert.is_true(#locked >= 25) end)

  for _, case in ipairs(locked) do
    it(case[1], function() assert.are.equal(case[1], message(case[2])) end)
  end

  it("are raised at the script's line, or at the line of the spec that is wrong", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local err = util.err_of(mgpu.BlockSpec, { size = 1 })
    assert.are.equal(line, tonumber(err:match("errmsg_spec%.lua:(%d+): ")))
    local spec_line = debug.getinfo(1, "l").currentline + 1
    local spec = mgpu.BlockSpec{ { 64 }, function(i) return i end }
    err = util.err_of(pallas({ 2, 2 }, spec, mgpu.BlockSpec{ { 64 }, function(i, j) return i end }))
    assert.are.equal(spec_line, tonumber(err:match("errmsg_spec%.lua:(%d+): ")))
  end)
end)

-- The library's sources but the table: { path = text }.
local function sources()
  local out = {}
  local p = assert(io.popen("ls lua/mgpu/*.lua"))
  for path in p:lines() do
    if not path:match("/errmsg%.lua$") then
      local f = assert(io.open(path))
      out[path] = f:read("*a")
      f:close()
    end
  end
  p:close()
  return out
end

-- The functions that take a code: its argument is the first, fail_at's the
-- second (after the location).
local takes_code = { fail = 1, fail_at = 2, message = 1, raise = 1 }

-- The codes named by the calls in `text` (the file at `path`), added to
-- `named` as code = "path:line", and the calls whose code is neither a
-- literal nor a forwarded parameter (`code`, `...`), added to `bad`.
local function codes_named(text, path, named, bad)
  for pos, name, after in text:gmatch("()([%w_]+)%(()") do
    local nth = takes_code[name]
    if nth then
      local args = text:match("^[^\n]*", after)
      local rest = nth == 1 and args or args:match("^%s*[%w_%.]+%s*,(.*)$")
      local code = rest and rest:match('^%s*"([%w_]+)"')
      local _, lines = text:sub(1, pos):gsub("\n", "")
      local where = path .. ":" .. (lines + 1)
      if code then named[code] = named[code] or where
      elseif not (rest and (rest:match("^%s*code%s*[,)]") or rest:match("^%s*%.%.%.%s*%)"))) then
        bad[#bad + 1] = where .. ": the code is not a literal"
      end
    end
  end
end

describe("the message table", function()
  local src = sources()

  it("maps upper-case codes to formats, one code per text", function()
    local seen = {}
    for code, fmt in pairs(errmsg) do
      assert.is_truthy(type(code) == "string" and code:match("^%u[%u%d_]*$"), "bad code " .. tostring(code))
      assert.are.equal("string", type(fmt), code)
      assert.is_nil(seen[fmt], code .. " has the text of " .. tostring(seen[fmt]))
      seen[fmt] = code
    end
  end)

  it("has no code the library does not use", function()
    local unused = {}
    for code in pairs(errmsg) do
      local used = false
      for _, text in pairs(src) do used = used or text:find('"' .. code .. '"', 1, true) ~= nil end
      if not used then unused[#unused + 1] = code end
    end
    table.sort(unused)
    assert.are.same({}, unused)
  end)

  it("has every code the library names, and every site names one", function()
    local named, bad = {}, {}
    for path, text in pairs(src) do codes_named(text, path, named, bad) end
    assert.is_truthy(named.UNKNOWN_OPTION and named.CORE_NOT_LOADED and named.INDEX_MAP_ARITY)   -- fail, raise, fail_at
    for code, where in pairs(named) do
      if not errmsg[code] then bad[#bad + 1] = where .. ": unknown code " .. code end
    end
    table.sort(bad)
    assert.are.same({}, bad)
  end)

  it("is the only source of messages: library errors re-raise or come from it", function()
    local made = {}
    for path, text in pairs(src) do
      for line in text:gmatch("[^\n]+") do
        local l = " " .. line
        if (l:match('[^%w_]error%(%s*["%[]') or l:match("[^%w_]error%(%s*string%.format"))
           and not line:find("mgpu internal error", 1, true) then
          made[#made + 1] = path .. ": " .. line
        end
      end
    end
    assert.are.same({}, made)
  end)

  it("refuses an unknown code loudly", function()
    local err = util.err_of(compat.fail, "NO_SUCH_CODE")
    assert.is_truthy(err:find('internal error: no message has the code "NO_SUCH_CODE"', 1, true), err)
    assert.is_truthy(util.err_of(compat.message, nil):find("no message has the code nil", 1, true))
  end)

  it("formats the arguments into the code's text", function()
    assert.are.equal("BlockSpec: unknown option 'x'", compat.message("UNKNOWN_OPTION", "BlockSpec", "x"))
  end)
end)
