--[[
mgpu.format -- values as text for people: arrays numpy-style (dtype, shape
and elements, the middle elided when large) and the contents of tables
(nested, cycles marked, bounded), as tostring(array) and the REPL show them.

  mgpu.array(f32[2,3], {{0, 1, 2}, {3, 4, 5}})
  mgpu.array(f32[4096], {0, 1, 2, ..., 4093, 4094, 4095})
]]
local compat = require "mgpu.compat"
compat.mark_lib()

local M = {}

M.THRESHOLD = 1000   -- an array of more elements shows the first and last EDGE along each dim
M.EDGE = 3
M.WIDTH = 80         -- text wider than this is broken into lines
M.MAX_ENTRIES = 64   -- a table shows at most this many entries, then how many more it has
M.MAX_DEPTH = 6      -- tables nested deeper show as {...}

local floats = { f16 = true, bf16 = true, f32 = true, f64 = true, f8e4m3 = true, f8e5m2 = true }

-- An element as text: integers without a fraction, floats to 6 digits.
local function element(v, float)
  if type(v) == "boolean" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" end
  if v == -math.huge then return "-inf" end
  if not float and v == math.floor(v) and v > -2 ^ 63 and v < 2 ^ 63 then return string.format("%d", v) end
  if not float then return string.format("%.0f", v) end
  return string.format("%.6g", v)
end

-- The indices shown along a dim of n: all, or the first and last `edge`
-- with false (the elision) between them.
local function shown(n, edge)
  local idx = {}
  if not edge or n <= 2 * edge then
    for i = 0, n - 1 do idx[#idx + 1] = i end
  else
    for i = 0, edge - 1 do idx[#idx + 1] = i end
    idx[#idx + 1] = false
    for i = n - edge, n - 1 do idx[#idx + 1] = i end
  end
  return idx
end

-- The elements of an array that its text shows, as nested lists of
-- strings ("..." where elided), reading at most about THRESHOLD of them
-- through fetch(first, count) (0-based, row-major; a list of numbers).
local function nested(shape, dtype, fetch)
  local rank, size = #shape, compat.numel(shape)
  local float = floats[dtype]
  if rank == 0 then return element(fetch(0, 1)[1], float) end
  local edge
  if size > M.THRESHOLD then   -- fewer edge elements for high ranks, so the text stays bounded
    edge = M.EDGE
    while edge > 1 and (2 * edge) ^ rank > 2 * M.THRESHOLD do edge = edge - 1 end
  end
  local all = not edge and fetch(0, size)
  local strides = {}
  strides[rank] = 1
  for d = rank - 1, 1, -1 do strides[d] = strides[d + 1] * shape[d + 1] end
  local function build(d, base)
    local out = {}
    if d == rank then   -- one row: read whole, or its two ends
      local n, head, tail = shape[d], nil, nil
      if not all then
        if n > 2 * edge then head, tail = fetch(base, edge), fetch(base + n - edge, edge) else head = fetch(base, n) end
      end
      for k, i in ipairs(shown(n, edge)) do
        if i == false then out[k] = "..."
        elseif all then out[k] = element(all[base + i + 1], float)
        elseif i < #head then out[k] = element(head[i + 1], float)
        else out[k] = element(tail[i - (n - edge) + 1], float) end
      end
      return out
    end
    for k, i in ipairs(shown(shape[d], edge)) do
      out[k] = i == false and "..." or build(d + 1, base + i * strides[d])
    end
    return out
  end
  return build(1, 0)
end

-- The widest element in a nested list.
local function widest(t)
  if type(t) == "string" then return #t end
  local w = 0
  for _, x in ipairs(t) do w = math.max(w, widest(x)) end
  return w
end

-- Nested lists of strings as {a, b, ...} on one line.
local function one_line(t)
  if type(t) == "string" then return t end
  local parts = {}
  for i, x in ipairs(t) do parts[i] = one_line(x) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- The same broken into lines: rows under each other, starting at column
-- `col`, elements right-aligned to width w, long rows wrapped.
local function lines(t, col, w)
  if type(t[1]) ~= "table" then   -- a row
    local out, line, start = {}, "{", col
    for i, x in ipairs(t) do
      local item = string.rep(" ", w - #x) .. x .. (i < #t and "," or "}")
      if #line > 1 and start + #line + 1 + #item > M.WIDTH then
        out[#out + 1] = line
        line, start = string.rep(" ", col + 1) .. item, 0
      else
        line = line .. (#line > 1 and " " or "") .. item
      end
    end
    out[#out + 1] = line
    return table.concat(out, "\n")
  end
  local parts = {}
  for i, x in ipairs(t) do
    local s = x == "..." and "..." or lines(x, col + 1, w)
    parts[i] = (i == 1 and "{" or string.rep(" ", col + 1)) .. s .. (i < #t and "," or "}")
  end
  return table.concat(parts, "\n")
end

--- The text of an array: `prefix` (such as "mgpu.array(f32[2,3]") and its
--- elements read through fetch(first, count), numpy-style: one line when it
--- fits in WIDTH, else rows under each other; arrays over THRESHOLD
--- elements show the first and last elements of each dim around "...".
function M.array(prefix, shape, dtype, fetch)
  local ok, t = pcall(nested, shape, dtype, fetch)
  if not ok then return prefix .. ", <elements unreadable: " .. tostring(t):gsub("^[^\n]-:%d+: ", "") .. ">)" end
  local flat = one_line(t)
  if type(t) == "string" or #prefix + 2 + #flat + 1 <= M.WIDTH then return prefix .. ", " .. flat .. ")" end
  return prefix .. ", " .. lines(t, #prefix + 2, widest(t)) .. ")"
end

-- -- Lua values -------------------------------------------------------------------------------

local function is_name(k) return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil end

--- Any Lua value as text, tables by their contents: the sequence first,
--- then the other keys in a stable order; a table inside itself shows as
--- <cycle>, one nested deeper than MAX_DEPTH as {...}, and each shows at
--- most MAX_ENTRIES entries.  Values with __tostring show that (its lines
--- indented to where it starts); strings are quoted.  One line when it fits
--- in WIDTH, else one entry a line.
function M.value(v)
  local path = {}
  local function render(x, depth, col)
    if type(x) == "string" then return string.format("%q", x) end
    local mt = getmetatable(x)
    if type(x) ~= "table" or (type(mt) == "table" and mt.__tostring) then
      local ok, s = pcall(tostring, x)
      if not ok then return "<" .. type(x) .. ">" end
      return (s:gsub("\n", "\n" .. string.rep(" ", col)))   -- (an array's rows stay aligned)
    end
    if path[x] then return "<cycle>" end
    if depth >= M.MAX_DEPTH then return "{...}" end
    path[x] = true
    local keys, n, items = compat.sorted_keys(x), #x, {}
    for i, k in ipairs(keys) do
      if i > M.MAX_ENTRIES then items[#items + 1] = string.format("... (%d more)", #keys - M.MAX_ENTRIES); break end
      local key = ""
      if not (type(k) == "number" and k == math.floor(k) and k >= 1 and k <= n) then
        key = is_name(k) and (k .. " = ") or ("[" .. render(k, M.MAX_DEPTH, 0) .. "] = ")
      end
      items[#items + 1] = key .. render(x[k], depth + 1, col + 2 + #key)
    end
    path[x] = nil
    if #items == 0 then return "{}" end
    local flat = table.concat(items, ", ")
    local multi = flat:find("\n", 1, true)
    if not multi and col + #flat + 4 <= M.WIDTH then
      return n == #keys and "{" .. flat .. "}" or "{ " .. flat .. " }"
    end
    local pad = string.rep(" ", col + 2)
    return "{\n" .. pad .. table.concat(items, ",\n" .. pad) .. ",\n" .. string.rep(" ", col) .. "}"
  end
  return render(v, 0, 0)
end

return M
