--[[
mgpu.compat -- what the library needs from Lua that differs between Lua 5.4
and LuaJIT (5.1), plus the helpers that give every error the user's line.

Library code is written in the common subset: no integer division operator,
no <const>, no bit operators, no goto.
]]
local M = {}

M.unpack = table.unpack or unpack
M.pack = table.pack or function(...) return { n = select("#", ...), ... } end

-- Chunks of the library: frames from these are skipped when looking for
-- the user's location.
M.lib_sources = {}
function M.mark_lib()
  M.lib_sources[debug.getinfo(2, "S").source] = true
end
M.mark_lib()

--- "file:line" of the innermost caller outside the mgpu library.
function M.where()
  local level = 2
  while true do
    local info = debug.getinfo(level, "Sl")
    if not info then return "?" end
    if info.what ~= "C" and not M.lib_sources[info.source] then
      return (info.short_src or "?") .. ":" .. (info.currentline or 0)
    end
    level = level + 1
  end
end

--- Raise "file:line: message" at the user's location.
function M.fail(fmt, ...)
  local msg = select("#", ...) > 0 and string.format(fmt, ...) or fmt
  error(M.where() .. ": " .. msg, 0)
end

--- True for numbers with an integer value (64.0 counts; 4.5 and inf do not).
function M.is_int(x)
  return type(x) == "number" and x == math.floor(x) and x > -math.huge and x < math.huge
end

--- x as an integer-valued number, or an error naming `what`.
function M.int(x, what)
  if not M.is_int(x) then
    M.fail("%s must be an integer, got %s", what, type(x) == "number" and tostring(x) or type(x))
  end
  return math.floor(x)
end

--- A shape from a number or a table of integer-valued numbers.
function M.shape(s, what)
  if type(s) == "number" then s = { s } end
  if type(s) ~= "table" then M.fail("%s must be a table of dimensions, got %s", what, type(s)) end
  local out = {}
  for i = 1, #s do
    local d = M.int(s[i], what .. "[" .. i .. "]")
    if d < 1 then M.fail("%s[%d] must be at least 1, got %d", what, i, d) end
    out[i] = d
  end
  return out
end

function M.numel(shape)
  local n = 1
  for i = 1, #shape do n = n * shape[i] end
  return n
end

function M.shape_str(shape)
  local parts = {}
  for i = 1, #shape do parts[i] = string.format("%d", shape[i]) end
  return "[" .. table.concat(parts, ",") .. "]"
end

--- Ceiling division of non-negative integers.
function M.cdiv(a, b)
  return math.floor((a + b - 1) / b)
end

return M
