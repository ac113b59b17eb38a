--[[
Runs the Pallas conformance suite (spec/conformance/*_conf.lua) once with
busted and checks that spec/conformance/README.md states its counts:

  lua5.4 spec/conformance/run.lua BUSTED [busted options...]

(from the repository root, with the environment of the ctest entry
`conformance`: LUA_PATH, LUA_CPATH, MGPU_INTERPRET=1, MGPU_BIN).  Prints
the passed / pending counts per JAX class, the pendings per divergence and
every failure; exits 1 when a test fails or when the README's tables of
classes and divergences or its list of tests that do not apply disagree
with the run.
]]
local json = require "dkjson"

local busted = assert(arg[1], "usage: run.lua BUSTED [busted options...]")
local lua = arg[-1] or "lua5.4"
local extra = {}
for i = 2, #arg do extra[#extra + 1] = string.format("%q", arg[i]) end

-- A fresh directory for the PTX of the passing tests' kernels (support/conf.lua writes it).
local ptx_dir = os.getenv("MGPU_CONF_PTX_DIR")
if ptx_dir then assert(os.execute(string.format("rm -rf %q && mkdir -p %q", ptx_dir, ptx_dir))) end

local t0 = os.time()
local cmd = string.format("%s %s -o json --pattern=_conf %s spec/conformance", lua, busted, table.concat(extra, " "))
local p = assert(io.popen(cmd))
local out = p:read("*a")
p:close()
local run, _, err = json.decode(out)
if not run then
  io.stderr:write("conformance: busted's output is not JSON (", tostring(err), "):\n", out:sub(1, 2000), "\n")
  os.exit(1)
end

-- Per class: passed, pending, failed (busted names tests "Class Class.test_name").
local classes, order, divergences = {}, {}, {}
local function class_of(t) return t.name:match("^(%S+)") end
local function tally(list, field)
  for _, t in ipairs(list or {}) do
    local c = class_of(t)
    if not classes[c] then classes[c] = { passed = 0, pending = 0, failed = 0 }; order[#order + 1] = c end
    classes[c][field] = classes[c][field] + 1
    if field == "pending" then
      local tag = tostring(t.message):match("divergence ([%w_-]+)")
      if tag then divergences[tag] = (divergences[tag] or 0) + 1 end
    end
  end
end
tally(run.successes, "passed")
tally(run.pendings, "pending")
tally(run.failures, "failed")
tally(run.errors, "failed")
table.sort(order)

local bad = false
for _, kind in ipairs({ "failures", "errors" }) do
  for _, t in ipairs(run[kind] or {}) do
    bad = true
    local msg = type(t.message) == "table" and json.encode(t.message) or tostring(t.message)
    print(string.format("FAIL %s\n  %s", t.name, msg:gsub("\n", "\n  ")))
  end
end

-- The README: rows "| Class | source | passed | pending | not applicable |" of the table of
-- classes, rows "| id | what | pendings | reproducer |" of the table of divergences, and
-- bullets "- Class, Class: `test` ×N — why" of the tests that do not apply.
local f = assert(io.open("spec/conformance/README.md"))
local readme = f:read("*a")
f:close()
local stated, na, stated_div = {}, {}, {}
for line in readme:gmatch("[^\n]+") do
  local id, n_div = line:match("^| ([%w_-]+) |[^|]*| (%d+) |")
  if id and (id:match("^%d+$") or id:match("^new%-")) then stated_div[id] = tonumber(n_div) end
  local c, ps, pe, n = line:match("^| `?([%w]+)`? |[^|]*| (%d+) | (%d+) | (%d+) |")
  if c then stated[c] = { passed = tonumber(ps), pending = tonumber(pe), na = tonumber(n) } end
  local names = line:match("^%- ([%w, ]+): `")
  if names then
    local times = tonumber(line:match("` ×(%d+)")) or 1
    for c in names:gmatch("[%w]+") do na[c] = (na[c] or 0) + times end
  end
end

print(string.format("%-42s %7s %7s %7s %7s", "class", "passed", "pending", "failed", "n/a"))
local total = { passed = 0, pending = 0, failed = 0, na = 0 }
for _, c in ipairs(order) do
  local r = classes[c]
  print(string.format("%-42s %7d %7d %7d %7d", c, r.passed, r.pending, r.failed, na[c] or 0))
  for k in pairs(total) do total[k] = total[k] + (k == "na" and (na[c] or 0) or r[k]) end
  local s = stated[c]
  if not s then
    print("  the README's table has no row for " .. c); bad = true
  elseif s.passed ~= r.passed or s.pending ~= r.pending or s.na ~= (na[c] or 0) then
    print(string.format("  the README states %d passed, %d pending, %d not applicable", s.passed, s.pending, s.na)); bad = true
  end
end
for c in pairs(stated) do
  if not classes[c] then print("  the README's table lists " .. c .. ", which the run does not have"); bad = true end
end
print(string.format("%-42s %7d %7d %7d %7d", "total", total.passed, total.pending, total.failed, total.na))

local tags = {}
for tag in pairs(divergences) do tags[#tags + 1] = tag end
table.sort(tags, function(a, b)
  local na_, nb = tonumber(a), tonumber(b)
  if na_ and nb then return na_ < nb end
  if na_ or nb then return na_ ~= nil end
  return a < b
end)
local parts = {}
for _, tag in ipairs(tags) do parts[#parts + 1] = tag .. ": " .. divergences[tag] end
print("pending per divergence: " .. table.concat(parts, ", "))
for tag, n in pairs(divergences) do
  if stated_div[tag] ~= n then
    print(string.format("  the README's table of divergences states %s pendings for %s, the run has %d",
                        tostring(stated_div[tag]), tag, n))
    bad = true
  end
end
for tag, n in pairs(stated_div) do
  if n > 0 and not divergences[tag] then
    print("  the README's table of divergences lists " .. tag .. ", which no test shows"); bad = true
  end
end
print(string.format("%d tests in %d s", total.passed + total.pending + total.failed, os.time() - t0))
os.exit(bad and 1 or 0)
