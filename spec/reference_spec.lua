-- docs/reference.md has an entry for every public name of mgpu, and every
-- entry names something that exists.  The public names are read from the
-- live module tables (mgpu and its namespaces, walked recursively) and from
-- the method tables of the objects users hold (device arrays, host arrays,
-- kernels, refs, traced values, layouts, warp-specialized pipelines).
-- An entry is a level-3 heading whose whole text is the name in backticks,
-- exactly as called: ### `mgpu.kernel`, ### `ref:at` (the format mgpu.help
-- reads).
local mgpu = require "mgpu"
local trace = require "mgpu.trace"

local REFERENCE = "docs/reference.md"

-- Names the module tables expose for mgpu's own modules, not for users:
-- the kernel wrapper's hooks into mgpu.distributed, and the warp-specialized
-- pipeline's internal steps.  Each is listed with who uses it.
local internal = {
  ["mgpu.distributed.check_sems"] = "kernel.lua: semaphores back at zero after an interpreted launch",
  ["mgpu.distributed.hidden_specs"] = "kernel.lua: the hidden GMEM scratch of a kernel",
  ["mgpu.distributed.is_sem_spec"] = "kernel.lua",
  ["mgpu.distributed.job_count"] = "kernel.lua: whether a kernel takes the peer table",
  ["mgpu.distributed.table_buffer"] = "kernel.lua: the peer table passed at launch",
  ["mgpu.distributed.take_hidden"] = "blockspec.lua: GMEM scratch refs",
  ["pipeline:slot"] = "pipeline.lua", ["pipeline:slot_add"] = "pipeline.lua",
  ["pipeline:memory"] = "pipeline.lua", ["pipeline:compute"] = "pipeline.lua",
}

-- The method tables of the objects users hold, by the prefix their
-- entries use (kind:method).
local function value_methods()   -- the methods of traced values (an upvalue of their __index)
  local index = trace.Value.__index
  for i = 1, 32 do
    local name, v = debug.getupvalue(index, i)
    if name == nil then break end
    if name == "methods" then return v end
  end
  error("the traced values' method table was not found")
end
local function kinds()
  local k = mgpu.kernel{ body = function() end, out_shape = mgpu.shape({ 1 }, "f32") }
  local pipe = mgpu.emit_pipeline_warp_specialized(function() end, {
    grid = { 1 }, memory_registers = 40, num_compute_wgs = 1, wg_axis = "wg",
    in_specs = { mgpu.BlockSpec{ { 8 } } } })
  return {
    array = getmetatable(mgpu.zeros({ 1 }, "f32")),
    hostarray = mgpu.host.Host,
    kernel = getmetatable(k),
    ref = trace.ref_methods,
    value = value_methods(),
    layout = getmetatable(mgpu.Layout.WGMMA),
    pipeline = getmetatable(pipe),
  }
end

local function public(key) return type(key) == "string" and (key:sub(1, 1) ~= "_" or key == "_VERSION") end

-- Every public name: mgpu.x.y for the module tables, kind:method for the objects.
local function public_names(method_tables)
  local names, seen = {}, {}
  local as_methods = {}
  for _, t in pairs(method_tables) do as_methods[t] = true end
  local function walk(t, prefix)   -- (keys in order: aliases of one table name the same entries on every host)
    seen[t] = true
    local keys = {}
    for key in next, t do if public(key) then keys[#keys + 1] = key end end
    table.sort(keys)
    for _, key in ipairs(keys) do
      local v = rawget(t, key)
      do
        local name = prefix .. "." .. key
        names[#names + 1] = name
        local mt = type(v) == "table" and getmetatable(v)
        -- namespaces: tables that are not objects with a method table of their own
        if type(v) == "table" and not seen[v] and not as_methods[v] and not (mt and type(mt.__index) == "table") then
          walk(v, name)
        end
      end
    end
  end
  walk(mgpu, "mgpu")
  for kind, t in pairs(method_tables) do
    for key in next, t do
      if type(key) == "string" and key:sub(1, 1) ~= "_" then names[#names + 1] = kind .. ":" .. key end
    end
  end
  local out = {}
  for _, n in ipairs(names) do if not internal[n] then out[#out + 1] = n end end
  table.sort(out)
  return out
end

-- The reference's entries: the names of its level-3 headings, and the
-- headings that do not have the entry form.
local function entries()
  local f = assert(io.open(REFERENCE))
  local list, malformed, count = {}, {}, {}
  for line in f:lines() do
    if line:match("^###%s") then
      local name = line:match("^### `([^`]+)`$")
      if name then
        list[#list + 1] = name
        count[name] = (count[name] or 0) + 1
      else
        malformed[#malformed + 1] = line
      end
    end
  end
  f:close()
  return list, malformed, count
end

-- Whether an entry's name is something that exists.
local function exists(name, method_tables)
  local kind, method = name:match("^(%a+):([%w_]+)$")
  if kind then return method_tables[kind] ~= nil and method_tables[kind][method] ~= nil end
  if not name:match("^mgpu[%.%w_]*$") then return false end
  local ok, v = pcall(function()
    local x = mgpu
    for part in name:gmatch("%.([%w_]+)") do x = x[part] end
    return x
  end)
  return ok and v ~= nil
end

describe("the API reference (docs/reference.md)", function()
  local method_tables = kinds()
  local names = public_names(method_tables)
  local list, malformed, count = entries()
  local documented = {}
  for _, n in ipairs(list) do documented[n] = true end

  it("has an entry for every public name", function()
    local missing = {}
    for _, n in ipairs(names) do if not documented[n] then missing[#missing + 1] = n end end
    assert(#missing == 0, #missing .. " public names have no entry in " .. REFERENCE .. ": " .. table.concat(missing, ", "))
    assert(#names > 200, "the walk found only " .. #names .. " names")
  end)

  it("names only things that exist, each once", function()
    local bad, twice = {}, {}
    for _, n in ipairs(list) do
      if not exists(n, method_tables) or internal[n] then bad[#bad + 1] = n end
      if count[n] > 1 and not twice[n] then twice[n] = true; twice[#twice + 1] = n end
    end
    assert(#bad == 0, "entries that name nothing public: " .. table.concat(bad, ", "))
    assert(#twice == 0, "entries given twice: " .. table.concat(twice, ", "))
  end)

  it("has only entry headings at level 3", function()
    assert(#malformed == 0, "level-3 headings that are not ### `name`: " .. table.concat(malformed, " | "))
  end)

  it("lists internal names that are still there", function()
    for n in pairs(internal) do
      assert(exists(n, method_tables), "the internal name " .. n .. " is gone: take it off the list")
    end
  end)
end)
