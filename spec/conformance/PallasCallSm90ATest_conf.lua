-- JAX's PallasCallSm90ATest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/PallasCallSm90ATest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("PallasCallSm90ATest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("PallasCallSm90ATest", function() dofile("spec/conformance/cases/PallasCallSm90ATest.lua")(cls) end)
