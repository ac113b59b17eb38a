-- JAX's PallasCallWarpPrimitiveSemanticsTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/PallasCallWarpPrimitiveSemanticsTest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("PallasCallWarpPrimitiveSemanticsTest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("PallasCallWarpPrimitiveSemanticsTest", function() dofile("spec/conformance/cases/PallasCallWarpPrimitiveSemanticsTest.lua")(cls) end)
