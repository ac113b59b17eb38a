-- JAX's PallasCallWGTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/PallasCallTest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("PallasCallWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("PallasCallWGTest", function() dofile("spec/conformance/cases/PallasCallTest.lua")(cls) end)
