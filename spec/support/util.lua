--[[
Helpers the specs share: local util = dofile("spec/support/util.lua").
Marked as library code, so that errors raised through them are located at
the spec line that called them, as a user's script line would be.
]]
require("mgpu.compat").mark_lib()
local M = {}

--- The mgpu command the specs run scripts with.
M.bin = os.getenv("MGPU_BIN") or "build/mgpu"

--- A temporary Lua script holding `body`; returns its path.
function M.script(body)
  local path = os.tmpname() .. ".lua"
  local f = assert(io.open(path, "w")); f:write(body); f:close()
  return path
end

--- What a shell command prints, stdout and stderr together.
function M.output(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  return out
end

--- The error fn(...) raises; fails the spec when it raises none.
function M.err_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error")
  return err
end

--- One spec per case of a case list (spec/support/*_cases.lua), declared
--- with busted's `it` (the spec file's own: chunks loaded here do not see
--- it): its run gives (error, tolerance) and the spec fails when error
--- exceeds tolerance; `what` names the error ("relative error" by default).
function M.case_specs(it, cases, what)
  for _, c in ipairs(cases) do
    it(c.name, function()
      local err, tol = c.run(require "mgpu")
      assert(err <= tol, string.format("%s: %s %.3g exceeds %.3g", c.name, what or "relative error", err, tol))
    end)
  end
end

return M
