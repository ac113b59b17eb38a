-- Every op against a double-precision Lua reference, in the interpreter,
-- with fresh random inputs and poisoned outputs (spec/support/cases.lua).
local mgpu = require "mgpu"
local cases = dofile("spec/support/cases.lua")

describe("ops in the interpreter", function()
  it("runs in interpret mode with poisoned outputs", function()
    assert.are.equal("interpret", mgpu.device().mode)
  end)
  for _, c in ipairs(cases) do
    it(c.name, function()
      local err, tol = c.run(mgpu)
      assert(err <= tol, string.format("%s: relative error %.3g exceeds %.3g", c.name, err, tol))
    end)
  end
end)
