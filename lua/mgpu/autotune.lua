--[[
mgpu.autotune -- pick the fastest of several kernel configurations.

  local k, cfg = mgpu.autotune{
    kernel_factory = function(cfg) return build(cfg) end,
    configs = { { tile_n = 128 }, { tile_n = 256 } },
    key = "matmul 4096x4096x4096 bf16",    -- or function(inputs...) return "..." end
    args = { a, b },                       -- or function() return a, b end
  }

Each config is built and launched once (a config whose factory or first
launch raises, e.g. too much SMEM, is skipped with a one-line note), then
timed with mgpu.bench (median of device-event timings) or opts.timer.  The
winner is kept per key (with the device name, the mode, the engine
version and its build's id, mgpu_engine_id) in autotune.txt next to the
kernel cache, so a later process takes it without timing.  Interpreted (or
compile-only) without a timer, timing means nothing: the first config that
works is taken, with a note, and not kept.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local context = require "mgpu.context"
local array = require "mgpu.array"
local bench = require "mgpu.bench"
local kernel = require "mgpu.kernel"

local M = {}
local fail = compat.fail

-- What a value of type t is, for notes.
local kinds = { ["function"] = "a function", userdata = "a userdata", thread = "a coroutine", cdata = "a cdata" }

--- A canonical one-line text for a config: sorted keys, every level, so
--- that the same config gives the same text in any process and different
--- configs different texts.  A value no later process could recognize (a
--- function, userdata, coroutine or cdata, a table used as a key, a table
--- that contains itself) is written as <function> etc.; the second result
--- then says what and where ("a function at .act").
local function canon(v, path, inside)
  local t = type(v)
  if t == "string" then return (string.format("%q", v):gsub("\\\n", "\\n")) end
  if t == "number" then   -- integers exactly (Lua 5.4's up to 2^63), other numbers to the last bit
    if (math.type and math.type(v) == "integer") or (compat.is_int(v) and math.abs(v) < 2 ^ 53) then
      return string.format("%d", v)
    end
    return string.format("%.17g", v)
  end
  if compat.is_int64(v) then return tostring(v) end   -- LuaJIT's 123LL, 123ULL
  if t == "boolean" or t == "nil" then return tostring(v) end
  path = path or ""
  local at = path == "" and "" or " at " .. path
  if t ~= "table" then return "<" .. t .. ">", (kinds[t] or t) .. at end
  inside = inside or {}
  if inside[v] then return "<cycle>", "a table that contains itself" .. at end
  inside[v] = true
  local parts, why = {}, nil
  for i, k in ipairs(compat.sorted_keys(v)) do
    local kt = type(k)
    local sub = (kt == "string" and k:match("^[%a_][%w_]*$")) and path .. "." .. k or path .. "[" .. tostring(k) .. "]"
    local val, w = canon(v[k], sub, inside)
    why = why or w
    if kt == "number" and k == i then parts[i] = val
    elseif kt == "string" and k:match("^[%a_][%w_]*$") then parts[i] = k .. "=" .. val
    else
      local ktext, kw = "<table>", "a table as a key" .. at
      if kt ~= "table" then ktext, kw = canon(k, sub) end
      why = why or kw
      parts[i] = "[" .. ktext .. "]=" .. val
    end
  end
  inside[v] = nil
  return "{" .. table.concat(parts, ",") .. "}", why
end
M.canon = canon

-- A timer's result for a note: -inf, nan, a string ("1.5"), a table.
local function timer_result(t)
  if type(t) == "number" then return t ~= t and "nan" or tostring(t) end
  if type(t) == "string" then return string.format("a string (%q)", t) end
  return "a " .. type(t)
end

local function first_line(err)
  local s = tostring(err)
  return s:match("^([^\n]*)") or s
end

local function escape(s) return (s:gsub("[%%\t\n\r]", function(c) return string.format("%%%02X", c:byte()) end)) end
local function unescape(s) return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)) end

local FILE, HEADER = "autotune.txt", "# mgpu autotune winners: key <tab> config <tab> ms"

--- The persisted entries: { [full key] = { cfg = text, ms = number } }.
local function read_entries(path)
  local entries = {}
  local f = io.open(path, "r")
  if not f then return entries end
  for line in f:lines() do
    local k, c, ms = line:match("^([^\t]+)\t([^\t]+)\t([^\t]*)$")
    if k then entries[unescape(k)] = { cfg = unescape(c), ms = tonumber(ms) } end
  end
  f:close()
  return entries
end

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function write_entries(dir, entries)
  local path = dir .. "/" .. FILE
  local tmp = string.format("%s.tmp.%d.%s", path, os.time(), tostring({}):match("0x(%x+)") or math.random(1e9))
  local f = io.open(tmp, "w")
  if not f then
    os.execute("mkdir -p " .. shell_quote(dir) .. " 2>/dev/null")
    f = io.open(tmp, "w")
  end
  if not f then return false, "cannot write " .. tmp end
  local keys = {}
  for k in pairs(entries) do keys[#keys + 1] = k end
  table.sort(keys)
  local lines = { HEADER }
  for _, k in ipairs(keys) do
    local e = entries[k]
    lines[#lines + 1] = escape(k) .. "\t" .. escape(e.cfg) .. "\t" .. (e.ms and string.format("%.6g", e.ms) or "")
  end
  local ok, err = f:write(table.concat(lines, "\n") .. "\n")
  f:close()
  if not ok then os.remove(tmp); return false, err end
  local rok, rerr = os.rename(tmp, path)
  if not rok then os.remove(tmp); return false, rerr end
  return true
end

local function stderr_is_tty()
  local r = os.execute("test -t 2")
  return r == true or r == 0
end

--- mgpu.autotune{ kernel_factory, configs, key, args, timer, bench, progress, log, cache_dir }
--- -> the best kernel, its config (and its milliseconds when timed in this call).
--- timer(kernel, inputs, config) -> ms replaces mgpu.bench (bench: its options);
--- progress: the progress line (default: when stderr is a terminal); log(line):
--- where notes go (default stderr); cache_dir: where winners are kept (default
--- the kernel cache's directory; false: not kept; nothing is kept while the
--- kernel cache is off).
function M.autotune(opts)
  if type(opts) ~= "table" then fail("AUTOTUNE_NOT_TABLE", type(opts)) end
  local known = { kernel_factory = true, configs = true, key = true, args = true, timer = true, bench = true,
                  progress = true, log = true, cache_dir = true }
  for k in pairs(opts) do
    if not known[k] then
      fail("AUTOTUNE_UNKNOWN_OPTION", tostring(k))
    end
  end
  local factory, configs, timer = opts.kernel_factory, opts.configs, opts.timer
  if type(factory) ~= "function" then fail("AUTOTUNE_FACTORY", type(factory)) end
  if type(configs) ~= "table" or #configs == 0 then
    fail("AUTOTUNE_CONFIGS", type(configs) == "table" and "an empty table" or type(configs))
  end
  for i = 1, #configs do
    if configs[i] == nil then fail("AUTOTUNE_CONFIG_NIL", i) end
  end
  if type(opts.key) ~= "string" and type(opts.key) ~= "function" then
    fail("AUTOTUNE_KEY", type(opts.key))
  end
  if timer ~= nil and type(timer) ~= "function" then fail("AUTOTUNE_TIMER", type(timer)) end
  if opts.bench ~= nil and type(opts.bench) ~= "table" then fail("AUTOTUNE_BENCH", type(opts.bench)) end
  if opts.log ~= nil and type(opts.log) ~= "function" then fail("AUTOTUNE_LOG", type(opts.log)) end
  if opts.cache_dir ~= nil and opts.cache_dir ~= false and (type(opts.cache_dir) ~= "string" or opts.cache_dir == "") then
    fail("AUTOTUNE_CACHE_DIR", compat.describe(opts.cache_dir))
  end
  local log = opts.log or function(line) io.stderr:write(line, "\n") end

  -- the inputs: a list, or a function returning them (or one list of them)
  local inputs
  if type(opts.args) == "function" then
    local r = compat.pack(opts.args())
    if r.n == 1 and type(r[1]) == "table" and not array.is_array(r[1]) then inputs = r[1]
    else inputs = r end
  elseif type(opts.args) == "table" and not array.is_array(opts.args) then
    inputs = opts.args
  elseif opts.args == nil then
    inputs = {}
  else
    fail("AUTOTUNE_ARGS", array.is_array(opts.args) and "an array (wrap it: args = { x })" or type(opts.args))
  end
  local n_in = inputs.n or #inputs

  local key = opts.key
  if type(key) == "function" then
    key = key(compat.unpack(inputs, 1, n_in))
    if type(key) ~= "string" then fail("AUTOTUNE_KEY_RESULT", type(key)) end
  end
  local info = context.info()
  local full_key = string.format("%s | %s %s | mgpu %s %s", key, info.mode, info.name or "", context.core.version(),
                                 context.core.engine_id())

  local can_time = timer ~= nil or info.mode == "gpu"
  local dir = nil
  local kernel_cache = context.core.kernel_cache_dir()   -- nil when MGPU_CACHE or MGPU_CACHE_MAX_MB turn it off
  if can_time and opts.cache_dir ~= false and kernel_cache then dir = opts.cache_dir or kernel_cache end
  local texts = {}
  for i = 1, #configs do
    local why
    texts[i], why = canon(configs[i])
    if why and dir then   -- no identity across processes: nothing is kept or taken
      log(string.format("autotune %s: config %d holds %s, which a later run cannot recognize: the winner is not kept " ..
                        "(configs of numbers, strings, booleans and tables of them are)", key, i, why))
      dir = nil
    end
  end

  -- a winner kept by an earlier run
  if dir then
    local e = read_entries(dir .. "/" .. FILE)[full_key]
    if e then
      for i = 1, #configs do
        if texts[i] == e.cfg then
          local ok, k = pcall(factory, configs[i])
          if ok and k ~= nil then return k, configs[i] end
          log(string.format("autotune: the kept winner %s no longer builds (%s); tuning again", texts[i], first_line(k)))
          break
        end
      end
    end
  end

  local function build(i)
    local ok, k = pcall(factory, configs[i])
    if not ok then return nil, first_line(k) end
    if k == nil then return nil, "the factory returned nil" end
    local ok2, out = pcall(function() return compat.pack(k(compat.unpack(inputs, 1, n_in))) end)
    if not ok2 then return nil, first_line(out) end
    return k, out
  end

  if not can_time then
    local why = info.mode == "interpret" and "kernels are interpreted (no GPU)" or "kernels are only compiled"
    for i = 1, #configs do
      local k, err = build(i)
      if k then
        log(string.format("autotune %s: %s, so timings mean nothing; taking the first config that works: %s",
                          key, why, texts[i]))
        return k, configs[i]
      end
      log(string.format("autotune %s: skipping %s: %s", key, texts[i], err))
    end
    fail("AUTOTUNE_NO_CONFIG", key, #configs)
  end

  local progress = opts.progress
  if progress == nil then progress = stderr_is_tty() end
  local bopts = opts.bench or {}
  local best, best_ms, best_k
  for i = 1, #configs do
    if progress then
      io.stderr:write(string.format("\rautotune %s: %d/%d %s%s\27[K", key, i, #configs, texts[i],
                                    best_ms and string.format(" (best %.4f ms)", best_ms) or ""))
    end
    local k, res = build(i)
    local ms
    if k then
      local ok, t = pcall(function()
        if timer then return timer(k, inputs, configs[i]) end
        if not kernel.is_kernel(k) then
          return (bench.bench(function() k(compat.unpack(inputs, 1, n_in)) end, bopts))
        end
        local list = {}
        for j = 1, res.n do list[j] = res[j] end
        local out = #list == 1 and list[1] or list
        return (bench.bench(function() k:call_into(out, compat.unpack(inputs, 1, n_in)) end, bopts))
      end)
      if not ok then res = first_line(t)
      elseif type(t) ~= "number" or not (t > 0 and t < math.huge) then
        res = "the timer returned " .. timer_result(t) .. "; it must return a finite, positive number of milliseconds"
      else ms = t end
    end
    if ms then
      if not best_ms or ms < best_ms then best, best_ms, best_k = i, ms, k end
    else
      if progress then io.stderr:write("\r\27[K") end
      log(string.format("autotune %s: skipping %s: %s", key, texts[i], res))
    end
  end
  if progress then io.stderr:write("\r\27[K") end
  if not best then fail("AUTOTUNE_NO_CONFIG", key, #configs) end

  if dir then
    local path = dir .. "/" .. FILE
    local entries = read_entries(path)
    entries[full_key] = { cfg = texts[best], ms = best_ms }
    local ok, err = write_entries(dir, entries)
    if not ok then log("autotune: cannot keep the winner in " .. path .. ": " .. tostring(err)) end
  end
  return best_k, configs[best], best_ms
end

return M
