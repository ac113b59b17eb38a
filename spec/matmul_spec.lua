-- examples/matmul.lua loaded with --lib: operands it cannot take are errors
-- naming the sizes, and the default configuration builds for any K (a
-- single K step keeps no wgmma group in flight).
local mgpu = require "mgpu"
local lib = loadfile("examples/matmul.lua")("--lib")
local err_of = dofile("spec/support/util.lua").err_of

describe("examples/matmul.lua", function()
  local mm = lib.build{}

  it("refuses an N that is not a multiple of 64", function()
    local a, b = mgpu.random.normal({ 64, 64 }, "bf16"), mgpu.random.normal({ 64, 1000 }, "bf16")
    assert.matches("matmul: N = 1000 must be a multiple of 64", err_of(mm, a, b))
  end)

  it("refuses operands whose inner dimensions differ", function()
    local a, b = mgpu.random.normal({ 64, 64 }, "bf16"), mgpu.random.normal({ 128, 64 }, "bf16")
    assert.matches("matmul: A is 64x64 but B is 128x64", err_of(mm, a, b))
  end)

  it("multiplies with one K step under the default delay", function()
    local a, b = mgpu.random.normal({ 128, 64 }, "f16"), mgpu.random.normal({ 64, 256 }, "f16")
    local c = lib.build{ dtype = "f16" }(a, b)
    local H = mgpu.host
    assert.is_true(H.relerr(H.from(c), H.matmul(H.from(a), H.from(b))) < 1e-2)
  end)
end)
