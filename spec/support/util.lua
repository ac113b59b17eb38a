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

return M
