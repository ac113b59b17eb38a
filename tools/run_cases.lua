--[[
Run the op cases of spec/support/cases.lua, math_cases.lua and lang_cases.lua and print a table.  On a GPU this
is the GPU check of every op's lowering; under `mgpu --emit-ptx` it only
traces and compiles them (results are not checked then).
  mgpu tools/run_cases.lua [pattern]
]]
local mgpu = require "mgpu"
mgpu.configure{ abstract_arrays = false }   -- the cases' references read their inputs, also under --emit-ptx
local cases = dofile("spec/support/cases.lua")
for _, file in ipairs({ "math_cases", "lang_cases" }) do
  for _, c in ipairs(dofile("spec/support/" .. file .. ".lua")) do cases[#cases + 1] = c end
end
local pattern = ...
local bad, ran = 0, 0
local mode = mgpu.device().mode
for _, c in ipairs(cases) do
  if not pattern or c.name:match(pattern) then
    ran = ran + 1
    local ok, err, tol = pcall(c.run, mgpu)
    if mode ~= "compile" then
      local pass = ok and err <= tol
      if not pass then bad = bad + 1 end
      print(string.format("%-36s %-4s %s", c.name, pass and "ok" or "FAIL",
                          ok and string.format("err %.2e (tol %.0e)", err, tol) or tostring(err)))
    elseif not ok then
      bad = bad + 1
      print(string.format("%-36s ERROR %s", c.name, tostring(err)))
    end
  end
end
print(string.format("%d cases on %s: %d passed, %d failed", ran, mode == "gpu" and mgpu.device().name or mode, ran - bad, bad))
os.exit(bad == 0 and 0 or 1, true)
