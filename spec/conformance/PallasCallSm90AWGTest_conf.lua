-- JAX's PallasCallSm90AWGTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/PallasCallSm90ATest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("PallasCallSm90AWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("PallasCallSm90AWGTest", function() dofile("spec/conformance/cases/PallasCallSm90ATest.lua")(cls) end)
