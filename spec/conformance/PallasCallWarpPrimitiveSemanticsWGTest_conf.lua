-- JAX's PallasCallWarpPrimitiveSemanticsWGTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/PallasCallWarpPrimitiveSemanticsTest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("PallasCallWarpPrimitiveSemanticsWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("PallasCallWarpPrimitiveSemanticsWGTest", function() dofile("spec/conformance/cases/PallasCallWarpPrimitiveSemanticsTest.lua")(cls) end)
