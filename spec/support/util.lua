--[[
Helpers the specs share: local util = dofile("spec/support/util.lua").
Marked as library code, so that errors raised through them are located at
the spec line that called them, as a user's script line would be.
]]
require("mgpu.compat").mark_lib()
local M = {}

--- The error fn(...) raises; fails the spec when it raises none.
function M.err_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error")
  return err
end

return M
