-- Hostile scripts (spec/hostile/*.lua): each makes one mistake (wrong types
-- or arity, absurd shapes, mismatched dtypes, recursion, errors raised in
-- bodies and index maps, misuse of a primitive) and must end in a clean
-- error at the right script line.  Each is run by the mgpu command in
-- interpret mode under a timeout; its first line says what is expected:
--   -- expect: LINE: a fragment of the message
-- and the run must exit non-zero without a signal, a timeout or a
-- sanitizer report, its first error line must start "mgpu: <script>:LINE: "
-- holding the fragment, and no library location (a [mgpu]/ chunk or a C
-- file) nor an internal Lua error ("attempt to ...") may show anywhere.
local util = dofile("spec/support/util.lua")

local TIMEOUT = 20   -- seconds per script

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

-- The hostile scripts, sorted.
local function scripts()
  local list = {}
  local p = assert(io.popen("ls spec/hostile/*.lua 2>/dev/null"))
  for line in p:lines() do list[#list + 1] = line end
  p:close()
  table.sort(list)
  return list
end

-- The expected line and message fragment from a script's first line.
local function expectation(path)
  local f = assert(io.open(path))
  local first = f:read("*l") or ""
  f:close()
  local line, frag = first:match("^%-%- expect: (%d+): (.-)%s*$")
  return tonumber(line), frag
end

-- The script's output (stdout and stderr) and exit status.
local function run(path)
  local cmd = string.format("MGPU_INTERPRET=1 timeout %d %s %s 2>&1; echo \"mgpu-exit-status=$?\"", TIMEOUT, util.bin, path)
  local out = util.output(cmd)
  local code = tonumber(out:match("mgpu%-exit%-status=(%d+)%s*$"))
  return out:gsub("mgpu%-exit%-status=%d+%s*$", ""), code
end

-- The first line of the report: what follows the interpret-mode notice.
local function first_error_line(out)
  for line in out:gmatch("[^\n]+") do
    if not line:match("kernels run in the interpreter$") then return line end
  end
  return ""
end

local function has(s, plain) return s:find(plain, 1, true) ~= nil end

describe("hostile scripts", function()
  local list = scripts()

  it("are at least 100, each with an expectation", function()
    assert.is_true(#list >= 100, "only " .. #list .. " scripts in spec/hostile")
    for _, path in ipairs(list) do
      local line, frag = expectation(path)
      assert.is_truthy(line, path .. ": the first line must be '-- expect: LINE: fragment'")
      assert.is_truthy(frag, path)
    end
  end)

  if not exists(util.bin) then
    pending("the mgpu command (" .. util.bin .. ") is not built")
    return
  end

  for _, path in ipairs(list) do
    it(path:match("([^/]+)%.lua$"), function()
      local line, frag = expectation(path)
      local out, code = run(path)
      local report = "\n" .. path .. " printed:\n" .. out
      assert.is_truthy(code, "no exit status" .. report)
      assert.are_not.equal(124, code, "timed out after " .. TIMEOUT .. " s" .. report)
      assert.is_true(code < 128, "ended by a signal (exit status " .. code .. ")" .. report)
      assert.are_not.equal(0, code, "succeeded" .. report)
      for _, bad in ipairs({ "AddressSanitizer", "LeakSanitizer", "runtime error:", "attempt to ", "[mgpu]/",
                             "stack traceback" }) do
        assert.is_false(has(out, bad), "reports '" .. bad .. "'" .. report)
      end
      assert.is_falsy(out:match("[%w_]+%.[ch]:%d+"), "names a C source location" .. report)
      local first = first_error_line(out)
      assert.are.equal(1, first:find("mgpu: " .. path .. ":" .. line .. ": ", 1, true),
                       "the first error line does not start at " .. path .. ":" .. line .. report)
      assert.is_true(has(first, frag), "the first error line lacks '" .. frag .. "'" .. report)
    end)
  end
end)
