--[[
mgpu.compat -- what the library needs from Lua that differs between Lua 5.4
and LuaJIT (5.1), plus the helpers that give every error the user's line.

Library code is written in the common subset: no integer division operator,
no <const>, no bit operators, no goto.

Every message the library raises comes from mgpu.errmsg by its code:
fail("UNKNOWN_OPTION", what, k).
]]
local errmsg = require "mgpu.errmsg"

local M = {}

M.unpack = table.unpack or unpack
M.pack = table.pack or function(...) return { n = select("#", ...), ... } end

-- Chunks of the library: frames from these are skipped when looking for
-- the user's location.
M.lib_sources = {}
M.lib_short = {}      -- their short names, as error positions show them
function M.mark_lib()
  local info = debug.getinfo(2, "S")
  M.lib_sources[info.source] = true
  M.lib_short[info.short_src] = true
end
M.mark_lib()

--- "file:line" of the innermost caller outside the mgpu library.
function M.where() return M.where_from(2) or "?" end

--- A table's keys in a stable order: numbers first (ascending), then
--- strings, then anything else by its text.
function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if type(a) ~= type(b) then return type(a) == "number" end
    if type(a) == "number" or type(a) == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return keys
end

--- Refuse any key of the options table `opts` that `known` lacks.
function M.check_keys(opts, known, what)
  for k in pairs(opts) do
    if not known[k] then M.fail("UNKNOWN_OPTION", what, tostring(k)) end
  end
end

--- A short text for any Lua value: tostring (or __tostring) for most, a
--- one-line dump of a plain table's first entries ({ code = 7, "x" }).
function M.describe(v, depth)
  if type(v) == "string" then return string.format("%q", v) end
  local mt = getmetatable(v)
  if type(v) ~= "table" or (type(mt) == "table" and mt.__tostring) then return tostring(v) end
  if (depth or 0) >= 2 then return "{...}" end
  local keys, parts = M.sorted_keys(v), {}
  for i, k in ipairs(keys) do
    if i > 8 then parts[#parts + 1] = string.format("... (%d entries)", #keys); break end
    local val = M.describe(v[k], (depth or 0) + 1)
    if type(k) == "string" and k:match("^[%a_][%w_]*$") then parts[#parts + 1] = k .. " = " .. val
    elseif type(k) == "number" and k == i then parts[#parts + 1] = val
    else parts[#parts + 1] = "[" .. M.describe(k, 2) .. "] = " .. val end
  end
  if #parts == 0 then return "{}" end
  return "{ " .. table.concat(parts, ", ") .. " }"
end

--- "file:line" of the innermost Lua frame outside the library, starting
--- `level` frames up (for message handlers: where error() was called).
function M.where_from(level)
  while true do
    local info = debug.getinfo(level + 1, "Sl")
    if not info then return nil end
    if info.what ~= "C" and not M.lib_sources[info.source] then
      return (info.short_src or "?") .. ":" .. (info.currentline or 0)
    end
    level = level + 1
  end
end

--- The text of message `code` (a key of mgpu.errmsg: one table lookup)
--- formatted with the arguments.  A code the table lacks is a bug in mgpu:
--- an internal error naming it.
function M.message(code, ...)
  local fmt = errmsg[code]
  if type(fmt) ~= "string" then
    error("mgpu internal error: no message has the code " .. M.describe(code) .. " (see mgpu.errmsg)", 0)
  end
  return string.format(fmt, ...)
end

--- Raise "file:line: message" at the user's location; `code` names the
--- message (mgpu.errmsg), the other arguments fill in its format.
function M.fail(code, ...)
  error(M.where() .. ": " .. M.message(code, ...), 0)
end

--- Raise "where: message" at a location taken earlier ("file:line", e.g.
--- where a spec was made, when the error is found only when it is used).
function M.fail_at(where, code, ...)
  error((where or M.where()) .. ": " .. M.message(code, ...), 0)
end

--- The "file:line" a message starts with, or nil.
function M.position(msg)
  return type(msg) == "string" and msg:match("^([^\n:]+:%d+): ") or nil
end

--- Re-raise an error caught from the engine: a message that already starts
--- with a script position (an op's line) stays as it is; any other gets
--- the user's location.
function M.rethrow(err)
  if M.position(err) and not M.in_lib(M.position(err)) then error(err, 0) end
  M.fail("ENGINE_ERROR", tostring(err))
end

--- True when a "file:line" position lies in a chunk of the library.
function M.in_lib(pos)
  return M.lib_short[pos:match("^(.*):%d+$")] == true
end

--- A message handler for xpcall around user code (kernel bodies, grid and
--- out_shape functions): the result always starts with a script line.
--- error({ code = 7 }) becomes "file:line: <what> raised a non-string
--- error: { code = 7 }"; a string without a position (error(msg, 0)) or
--- with one inside the library (error(msg, 2) blaming the library's call,
--- a stack overflow inside a traced op) gets the innermost script line that
--- was running; `fallback` is used when there is none.
function M.user_error_handler(what, fallback)
  return function(e)
    local here = M.where_from(2) or fallback or "?"
    if type(e) ~= "string" then
      return here .. ": " .. M.message("NON_STRING_ERROR", what, M.describe(e))
    end
    local pos = M.position(e)
    if not pos then return here .. ": " .. e end
    if M.in_lib(pos) then return here .. e:sub(#pos + 1) end
    return e
  end
end

--- True for numbers with an integer value (64.0 counts; 4.5 and inf do not).
function M.is_int(x)
  return type(x) == "number" and x == math.floor(x) and x > -math.huge and x < math.huge
end

--- LuaJIT's 64-bit integer cdata (int64_t, uint64_t): exact integers a
--- double cannot hold.  Always false under Lua 5.4, whose integers are
--- 64-bit already.
local ffi = rawget(_G, "jit") and require "ffi"
function M.is_int64(x)
  return ffi and type(x) == "cdata" and (ffi.istype("int64_t", x) or ffi.istype("uint64_t", x)) or false
end

--- x as an integer-valued number, or an error naming `what`.
function M.int(x, what)
  if not M.is_int(x) then
    M.fail("NOT_INTEGER", what, type(x) == "number" and tostring(x) or type(x))
  end
  return math.floor(x)
end

--- A shape from a number or a table of integer-valued numbers.
function M.shape(s, what)
  if type(s) == "number" then s = { s } end
  if type(s) ~= "table" then M.fail("NOT_DIMENSIONS", what, type(s)) end
  local out = {}
  for i = 1, #s do
    local d = M.int(s[i], what .. "[" .. i .. "]")
    if d < 1 then M.fail("ITEM_LESS_THAN_ONE", what, i, d) end
    out[i] = d
  end
  return out
end

function M.numel(shape)
  local n = 1
  for i = 1, #shape do n = n * shape[i] end
  return n
end

--- True when two shapes have the same dims.
function M.same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

--- The checked arguments of rows(start, size) on an array of `shape` (device or host): rows
--- [start, start + size) of its first axis.
function M.rows_args(shape, start, size)
  start, size = M.int(start, "rows: start"), M.int(size, "rows: size")
  if #shape < 1 or start < 0 or size < 0 or start + size > shape[1] then
    M.fail("ROWS_RANGE", start, start + size, M.shape_str(shape))
  end
  return start, size
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
