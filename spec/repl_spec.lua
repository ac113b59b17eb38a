-- What the REPL shows: arrays with their elements (numpy-style, elided when
-- large, a bounded number read), tables with their contents, completion of
-- names and fields, mgpu.help's entries from the API reference, and
-- transcripts of the mgpu command's loop fed on stdin.  (Completion under a
-- terminal, through libedit, is spec/c/repl_test.c's.)
local mgpu = require "mgpu"
local format = require "mgpu.format"
local repl = require "mgpu.repl"
local help = require "mgpu.help"
local util = dofile("spec/support/util.lua")

-- The numbers in a text, in order (nan and inf included).
local function numbers(text)
  local out = {}
  for w in text:gmatch("[%w%.%+%-]+") do
    local v = tonumber(w) or (w == "nan" and 0 / 0) or (w == "inf" and math.huge) or (w == "-inf" and -math.huge)
    if v then out[#out + 1] = v end
  end
  return out
end

-- The text of an array whose elements come from a counting reader:
-- returns the text and how many elements were read.
local function counted(shape, dtype)
  local read = 0
  local text = format.array("a", shape, dtype or "f32", function(first, count)
    read = read + count
    local t = {}
    for i = 1, count do t[i] = first + i - 1 end
    return t
  end)
  return text, read
end

describe("an array's text", function()
  it("shows its dtype, shape and elements on one line when short", function()
    assert.are.equal("mgpu.array(f32[2,3], {{0, 1, 2}, {3, 4, 5}})", tostring(mgpu.array({ { 0, 1, 2 }, { 3, 4, 5 } })))
    assert.are.equal("mgpu.array(i32[3], {-7, 0, 12})", tostring(mgpu.array({ -7, 0, 12 }, "i32")))
    assert.are.equal("mgpu.array(pred[2], {true, false})", tostring(mgpu.array({ true, false }, "pred")))
    assert.are.equal("mgpu.array(f32[3], {inf, -inf, nan})", tostring(mgpu.array({ 1 / 0, -1 / 0, 0 / 0 })))
    assert.are.equal("mgpu.array(f32[], 2.5)", tostring(mgpu.full({}, 2.5)))
  end)

  it("shows random elements to six digits, as the array holds them", function()
    local a = mgpu.random.normal({ 3, 4 }, "f32")
    local shown, held = numbers(tostring(a):match("%], (.*)%)$")), a:to_table()
    assert.are.equal(#held, #shown)
    for i = 1, #held do assert.is_true(math.abs(shown[i] - held[i]) <= 1e-5 * math.max(1, math.abs(held[i]))) end
  end)

  it("elides the middle of a large array, numpy-style", function()
    assert.are.equal("mgpu.array(f32[4096], {0, 1, 2, ..., 4093, 4094, 4095})", tostring(mgpu.iota(4096)))
    local text = tostring(mgpu.iota({ 40, 50 }, "i32"))
    local rows = {}
    for line in text:gmatch("[^\n]+") do rows[#rows + 1] = line end
    assert.are.equal(7, #rows)                  -- three rows, "...", three rows
    assert.matches("^%s*%.%.%.,$", rows[4])
    for _, r in ipairs(rows) do assert.is_true(#r <= format.WIDTH, r) end
    local want = {}
    for _, i in ipairs({ 0, 1, 2, 37, 38, 39 }) do
      for _, j in ipairs({ 0, 1, 2, 47, 48, 49 }) do want[#want + 1] = i * 50 + j end
    end
    local got = numbers(text:match("%], (.*)%)$"))
    assert.are.same(want, got)
  end)

  it("reads a bounded number of elements however large the array", function()
    for _, shape in ipairs({ { 1000, 1000 }, { 100, 100, 100 }, { 3, 4, 5, 6, 7, 8, 9, 10 }, { 2, 2, 2, 2, 2, 2, 2, 2, 2, 2 } }) do
      local _, read = counted(shape)
      assert.is_true(read <= 2 * format.THRESHOLD, "read " .. read .. " elements")
    end
    local _, all = counted({ 10, 100 })
    assert.are.equal(1000, all)                 -- up to THRESHOLD: every element
  end)

  it("breaks long rows into lines no wider than WIDTH", function()
    local text = tostring(mgpu.iota({ 200 }, "f32", 0, 0.25))
    for line in text:gmatch("[^\n]+") do assert.is_true(#line <= format.WIDTH, line) end
    local got = numbers(text:match("%], (.*)%)$"))
    assert.are.equal(200, #got)
    for i = 1, 200 do assert.are.equal((i - 1) * 0.25, got[i]) end
  end)

  it("has no elements when abstract, and says so when they cannot be read", function()
    assert.are.equal("mgpu.abstract(bf16[4,4])", tostring(mgpu.abstract({ 4, 4 }, "bf16")))
    local text = format.array("mgpu.array(f32[2]", { 2 }, "f32", function() error("x.lua:3: the device is gone", 0) end)
    assert.are.equal("mgpu.array(f32[2], <elements unreadable: the device is gone>)", text)
  end)
end)

describe("a table's text", function()
  it("shows the contents, sequence first, nested", function()
    assert.are.equal('{1, 2, "x", { a = 1, b = {true} }}', format.value({ 1, 2, "x", { a = 1, b = { true } } }))
    assert.are.equal('{ 10, [2.5] = 1, c = 3, ["two words"] = 2 }', format.value({ 10, c = 3, ["two words"] = 2, [2.5] = 1 }))
    assert.are.equal("{{0, 1}, {2, 3}}", format.value(mgpu.iota({ 2, 2 }, "i32"):tolist()))
    assert.are.equal("{ a = mgpu.array(i32[2], {4, 5}) }", format.value({ a = mgpu.array({ 4, 5 }, "i32") }))
    assert.are.equal("{}", format.value({}))
  end)

  it("marks cycles and bounds depth and entries", function()
    local t = { 1 }
    t.self = t
    assert.are.equal("{ 1, self = <cycle> }", format.value(t))
    local shared = { 7 }
    assert.are.equal("{{7}, {7}}", format.value({ shared, shared }))   -- shared, not a cycle
    local deep = {}
    local d = deep
    for _ = 1, 20 do d.next = {}; d = d.next end
    assert.matches("{%.%.%.}", format.value(deep))
    local many = {}
    for i = 1, 500 do many[i] = i end
    local text = format.value(many)
    assert.matches("%.%.%. %(" .. (500 - format.MAX_ENTRIES) .. " more%)", text)
    assert.is_true(#text < 1000)
  end)

  it("puts one entry a line when it does not fit", function()
    local t = {}
    for i = 1, 12 do t["field_number_" .. i] = i * 1000 end
    local text = format.value(t)
    local n = 0
    for line in text:gmatch("[^\n]+") do n = n + 1; assert.is_true(#line <= format.WIDTH, line) end
    assert.are.equal(14, n)
    local big = format.value({ a = mgpu.iota({ 40, 40 }, "i32") })   -- an array's rows stay under each other
    local l1, l2 = big:match("\n([^\n]*{{[^\n]*)\n([^\n]*)")
    assert.are.equal(l1:find("{{", 1, true) + 1, l2:find("{", 1, true), big)
  end)
end)

describe("completion", function()
  local env = { mgpu = mgpu, x = mgpu.iota(3) }
  it("offers mgpu's names and the fields of nested tables", function()
    assert.are.same({ "mgpu.zeros" }, repl.complete("mgpu.zer", env))
    assert.are.same({ "mgpu.empty", "mgpu.empty_cache" }, repl.complete("mgpu.empt", env))
    assert.are.same({ "mgpu.random.normal" }, repl.complete("mgpu.random.n", env))
    assert.are.same({ "function" }, repl.complete("functio", env))
    assert.are.same({}, repl.complete("mgpu.no_such_name.", env))
  end)

  it("offers an array's fields after '.' and its methods after ':'", function()
    assert.are.same({ "x.shape", "x.size" }, repl.complete("x.s", env))
    assert.are.same({ "x:to_dlpack", "x:to_table", "x:tolist" }, repl.complete("x:to", env))
    assert.are.same({}, repl.complete("x:shap", env))   -- a field, not a method
  end)

  it("hides names starting with '_' until one is typed, and runs no __index function", function()
    for _, w in ipairs(repl.complete("mgpu.", env)) do assert.is_falsy(w:match("^mgpu%._"), w) end
    assert.are.same({ "mgpu._VERSION" }, repl.complete("mgpu._VER", env))
    assert.are.same({}, repl.complete("mgpu.tcgen05_mma.", env))   -- mgpu's __index raises for this name
  end)
end)

-- The level-3 entry names of docs/reference.md, in order.
local function reference_names()
  local f = assert(io.open("docs/reference.md"))
  local names, fenced = {}, false
  for line in f:lines() do
    if line:match("^%s*```") then fenced = not fenced end
    local name = not fenced and line:match("^###%s+`([^`]+)`")
    if name then names[#names + 1] = name end
  end
  f:close()
  return names
end

describe("mgpu.help", function()
  it("finds every entry of the reference by its name", function()
    local names = reference_names()
    assert.is_true(#names >= 2)
    for _, name in ipairs(names) do
      local text = help.entry(name:match("^[^%(%{%s]+"))
      assert.is_truthy(text, name)
      assert.are.equal("### `" .. name .. "`", text:match("^[^\n]+"))
    end
  end)

  it("takes a name without mgpu., or the function itself", function()
    assert.are.equal(help.entry("mgpu.kernel"), help.entry("kernel"))
    assert.are.equal(help.entry("mgpu.zeros"), help.entry(mgpu.zeros))
    assert.matches("^### `mgpu.kernel", help.entry("mgpu.kernel"))
  end)

  it("names the closest entries for an unknown name", function()
    local text, close = help.entry("kernl")
    assert.is_nil(text)
    assert.are.equal("mgpu.kernel", close[1])
    local out = util.output(string.format("%s -e \"require('mgpu').help('zeroz')\"", util.bin))
    assert.matches("mgpu.help: no entry for 'zeroz' in the API reference; close matches: mgpu.zeros", out, 1, true)
    assert.matches("help: expected a name %(such as \"kernel\"%) or a function of mgpu, got number",
                   util.err_of(mgpu.help, 5))
  end)

  it("reads an entry to the next heading of its level or above, outside code blocks", function()
    local path = util.script(table.concat({
      "# Title", "", "### `mgpu.alpha`", "", "```sh", "# a comment, not a heading", "### nor this", "```",
      "#### Details", "kept", "", "### `obj:beta`", "beta text", "## Section", "after", "### `mgpu.gamma(x)`", "gamma",
    }, "\n"))
    local function shown(name)
      return util.output(string.format("MGPU_REFERENCE=%s %s -e \"require('mgpu').help('%s')\"", path, util.bin, name))
    end
    assert.are.equal("### `mgpu.alpha`\n\n```sh\n# a comment, not a heading\n### nor this\n```\n#### Details\nkept\n", shown("alpha"))
    assert.are.equal("### `obj:beta`\nbeta text\n", shown("beta"))
    assert.are.equal("### `mgpu.gamma(x)`\ngamma\n", shown("mgpu.gamma"))
    os.remove(path)
  end)
end)

describe("the REPL", function()
  -- What the mgpu command's loop prints for these lines on stdin.
  local function session(lines)
    local input = util.script(table.concat(lines, "\n") .. "\n")
    local out = util.output(string.format("%s < %s", util.bin, input))
    os.remove(input)
    return out
  end

  it("prints arrays with their elements and tables with their contents", function()
    local out = session({ "x = mgpu.array({{0, 1, 2}, {3, 4, 5}}, 'i32')", "x", "x:tolist()", "{ n = 1, 'a' }",
                          "t = {}; t.t = t", "t", "mgpu.iota(5000)", "1, nil, 'text'" })
    assert.matches("mgpu.array(i32[2,3], {{0, 1, 2}, {3, 4, 5}})\n", out, 1, true)
    assert.matches("\n{{0, 1, 2}, {3, 4, 5}}\n", out, 1, true)
    assert.matches('\n{ "a", n = 1 }\n', out, 1, true)
    assert.matches("\n{ t = <cycle> }\n", out, 1, true)
    assert.matches("mgpu.array(f32[5000], {0, 1, 2, ..., 4997, 4998, 4999})\n", out, 1, true)
    assert.matches("\n1\tnil\ttext\n", out, 1, true)
  end)

  it("prints reference entries for help NAME and help(value)", function()
    local out = session({ "help kernel", "help(mgpu.zeros)", "help kernl", "help" })
    assert.matches(help.entry("kernel") .. "\n", out, 1, true)
    assert.matches(help.entry("zeros") .. "\n", out, 1, true)
    assert.matches("no entry for 'kernl' in the API reference; close matches: mgpu.kernel", out, 1, true)
    assert.matches("mgpu.help(name) prints a name's entry", out, 1, true)
  end)

  it("leaves help to a session that defines its own", function()
    local out = session({ "help = 41", "help + 1" })
    assert.is_truthy(out:match("^42\n") or out:match("\n42\n"), out)
  end)
end)
