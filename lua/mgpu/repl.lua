--[[
mgpu.repl -- the Lua side of the mgpu command's interactive loop: results
as text (mgpu.format), tab completion of names and fields, and the `help`
command (mgpu.help).
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local format = require "mgpu.format"
local help = require "mgpu.help"

local M = {}

--- The text the loop prints for a statement's results, tab-separated:
--- strings as they are, tables by their contents, arrays with their
--- elements, anything else as tostring shows it.
function M.show(...)
  local parts = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    parts[i] = type(v) == "string" and v or format.value(v)
  end
  return table.concat(parts, "\t")
end

--- Called as the loop starts: the global `help` is mgpu.help, unless the
--- session (a script run with -i) made one of its own.
function M.start()
  if rawget(_G, "help") == nil then rawset(_G, "help", help.help) end
end

--- The Lua code for a line typed at the prompt: `help` and `help NAME`
--- (NAME such as kernel, mgpu.kernel or ref:at) call mgpu.help, unless
--- `help` names something else in the session; any other line is itself.
function M.command(line)
  local mine = rawget(_G, "help")
  if mine ~= nil and mine ~= help.help then return line end
  if line:match("^%s*help%s*$") then return "require('mgpu.help').help()" end
  local name = line:match("^%s*help%s+([%w_%.:]+)%s*$")
  if name then return string.format("require('mgpu.help').help(%q)", name) end
  return line
end

local keywords = { "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
                   "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while" }

-- The tables whose fields a value offers: itself (a table) and the tables
-- its metatables' __index chain holds (methods; no __index function runs).
local function field_tables(v)
  local list, seen = {}, {}
  if type(v) == "table" then list[1] = v; seen[v] = true end
  local mt = getmetatable(v)
  for _ = 1, 8 do
    local idx = type(mt) == "table" and rawget(mt, "__index")
    if type(idx) ~= "table" or seen[idx] then break end
    list[#list + 1] = idx
    seen[idx] = true
    mt = getmetatable(idx)
  end
  return list
end

-- v's field k as the completion sees it: raw, or from the __index tables.
local function field(v, k)
  for _, t in ipairs(field_tables(v)) do
    local x = rawget(t, k)
    if x ~= nil then return x end
  end
  return nil
end

--- The words `word` (the text before the cursor: "mgpu.ze", "x:to",
--- "mgpu.random.n", "pri") may become, sorted: names of `env` (default the
--- globals) and keywords, or the fields of the value its dotted path names
--- (after ':', only its methods).  Names starting with '_' appear only
--- once typed.
function M.complete(word, env)
  env = env or _G
  local base, sep, prefix = word:match("^([%a_][%w_%.]*)([%.:])([%w_]*)$")
  local sources, out, seen = {}, {}, {}
  if base then
    local v = env
    for part in base:gmatch("[^%.]+") do
      v = field(v, part)
      if v == nil then return out end
    end
    sources = field_tables(v)
  else
    prefix = word:match("^[%a_][%w_]*$")
    if not prefix then return out end
    base, sep = "", ""
    sources = { env }
    for _, k in ipairs(keywords) do
      if k:sub(1, #prefix) == prefix then seen[k] = true; out[#out + 1] = k end
    end
  end
  for _, t in ipairs(sources) do
    for k, x in pairs(t) do
      if type(k) == "string" and k:match("^[%a_][%w_]*$") and k:sub(1, #prefix) == prefix and not seen[k]
         and (k:sub(1, 1) ~= "_" or prefix:sub(1, 1) == "_") and (sep ~= ":" or type(x) == "function") then
        seen[k] = true
        out[#out + 1] = base .. sep .. k
      end
    end
  end
  table.sort(out)
  return out
end

return M
