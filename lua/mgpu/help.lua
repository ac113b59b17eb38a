--[[
mgpu.help -- the API reference (docs/reference.md) where code is written:
mgpu.help("kernel"), mgpu.help("mgpu.kernel"), mgpu.help("ref:at"),
mgpu.help(mgpu.zeros), and `help kernel` in the REPL.

An entry of the reference starts with a level-3 heading holding its name in
backticks (### `mgpu.kernel`) and runs to the next heading of level 3 or
less outside a code block.
]]
local compat = require "mgpu.compat"
compat.mark_lib()

local M = {}

-- This file's directory, when it was loaded from one.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\][^/\\]*$")

--- The places the reference is looked for, in order: $MGPU_REFERENCE, then
--- next to this module: the source tree (lua/mgpu -> docs), a luarocks tree
--- (beside the modules) and an installed tree (share/lua/5.4/mgpu ->
--- share/mgpu).  The mgpu command also carries a copy (mgpu.reference).
function M.paths()
  local list = {}
  local env = os.getenv("MGPU_REFERENCE")
  if env and env ~= "" then list[#list + 1] = env end
  if here then
    list[#list + 1] = here .. "/../../docs/reference.md"
    list[#list + 1] = here .. "/reference.md"
    list[#list + 1] = here .. "/../../../mgpu/reference.md"
  end
  return list
end

-- The reference's text, or nil.
local function reference_text()
  for _, path in ipairs(M.paths()) do
    local f = io.open(path)
    if f then
      local text = f:read("*a")
      f:close()
      return text
    end
  end
  local embedded = package.preload["mgpu.reference"]
  return embedded and embedded("mgpu.reference") or nil
end

-- The entries: a list of { name = "mgpu.kernel", text = ... } in order.
local entries
local function load_entries()
  if entries then return entries end
  local text = reference_text()
  if not text then return nil end
  entries = {}
  local current, fenced = nil, false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^%s*```") then fenced = not fenced end
    local level = not fenced and line:match("^(#+)%s")
    if level and #level <= 3 then
      current = nil
      local name = #level == 3 and line:match("^###%s+`([^`]+)`")
      if name then
        current = { name = name:match("^[^%(%{%s]+"), lines = {} }
        entries[#entries + 1] = current
      end
    end
    if current then current.lines[#current.lines + 1] = line end
  end
  for _, e in ipairs(entries) do
    while #e.lines > 0 and e.lines[#e.lines]:match("^%s*$") do e.lines[#e.lines] = nil end
    e.text = table.concat(e.lines, "\n")
    e.lines = nil
  end
  return entries
end

-- The name of a function of the mgpu module (mgpu.zeros, mgpu.random.normal,
-- array:tolist), or nil.
local function name_of(fn)
  local mgpu = require "mgpu"
  for k, v in pairs(mgpu) do
    if rawequal(v, fn) then return "mgpu." .. k end
  end
  for k, sub in pairs(mgpu) do
    if type(sub) == "table" and getmetatable(sub) == nil then
      for k2, v in pairs(sub) do
        if rawequal(v, fn) then return "mgpu." .. k .. "." .. tostring(k2) end
      end
    end
  end
  for k, v in pairs(require("mgpu.array").Array) do
    if rawequal(v, fn) then return "array:" .. k end
  end
  return nil
end

-- The last part of a name: "kernel" for mgpu.kernel, "at" for ref:at.
local function short(name) return name:match("([^%.:]+)$") or name end

-- Edit distance between two strings (insertions, deletions, substitutions).
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

--- The entry for `name` (a string, or a function of mgpu): its text, or nil
--- and the names of the closest entries (a list, best first), or nil and a
--- message when there is no reference.  A name (what comes before any
--- parenthesis or brace) matches an entry's whole name, that name without
--- "mgpu.", or its last part when only one entry ends so ("at" finds ref:at).
function M.entry(name)
  local list = load_entries()
  if not list then return nil, compat.message("HELP_NO_REFERENCE") end
  if type(name) == "function" then
    name = name_of(name)
    if not name then return nil, {} end
  end
  name = name:match("^%s*([^%(%{%s]*)")
  local ends = {}
  for _, e in ipairs(list) do
    if e.name == name or e.name == "mgpu." .. name then return e.text end
    if short(e.name) == short(name) then ends[#ends + 1] = e end
  end
  if #ends == 1 then return ends[1].text end
  local close = {}
  for _, e in ipairs(ends) do close[#close + 1] = { e.name, 0 } end
  local q = short(name):lower()
  for _, e in ipairs(list) do
    local s = short(e.name):lower()
    local d = distance(q, s)
    if short(e.name) ~= short(name) and (d <= math.max(2, math.floor(#q / 3)) or (#q >= 3 and s:find(q, 1, true))) then
      close[#close + 1] = { e.name, d }
    end
  end
  table.sort(close, function(x, y)   -- nearest first; among equals the shorter (mgpu.zeros before mgpu.host.zeros)
    if x[2] ~= y[2] then return x[2] < y[2] end
    if #x[1] ~= #y[1] then return #x[1] < #y[1] end
    return x[1] < y[1]
  end)
  local names = {}
  for i = 1, math.min(#close, 6) do names[i] = close[i][1] end
  return nil, names
end

-- The names of every entry, wrapped to lines of at most 78 characters.
local function index()
  local out, line = {}, " "
  for _, e in ipairs(load_entries()) do
    if #line + 1 + #e.name > 78 then out[#out + 1] = line; line = " " end
    line = line .. " " .. e.name
  end
  out[#out + 1] = line
  return table.concat(out, "\n")
end

--- mgpu.help(name): print the reference entry for `name` ("kernel",
--- "mgpu.kernel", "ref:at", or a function such as mgpu.zeros); for a name
--- without one, the closest names; with no name, how to ask and every name.
function M.help(name)
  if name ~= nil and type(name) ~= "string" and type(name) ~= "function" then
    compat.fail("HELP_NAME", type(name))
  end
  if name == nil then
    if not load_entries() then io.write(compat.message("HELP_NO_REFERENCE"), "\n"); return end
    io.write(compat.message("HELP_USAGE"), "\n", index(), "\n")
    return
  end
  local text, close = M.entry(name)
  if text then io.write(text, "\n"); return end
  if type(close) == "string" then io.write(close, "\n"); return end
  local what = type(name) == "string" and string.format("'%s'", name) or "this function"
  if #close == 0 then io.write(compat.message("HELP_NO_ENTRY", what), "\n"); return end
  io.write(compat.message("HELP_CLOSE", what, table.concat(close, ", ")), "\n")
end

return M
