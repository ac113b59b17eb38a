-- Every op against a double-precision Lua reference, in the interpreter,
-- with fresh random inputs and poisoned outputs (spec/support/cases.lua).
local mgpu = require "mgpu"
local cases = dofile("spec/support/cases.lua")

describe("ops in the interpreter", function()
  it("runs in interpret mode with poisoned outputs", function()
    assert.are.equal("interpret", mgpu.device().mode)
  end)
  dofile("spec/support/util.lua").case_specs(it, cases)
end)
