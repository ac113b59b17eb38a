-- JAX's ExamplesWGTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/ExamplesTest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("ExamplesWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("ExamplesWGTest", function() dofile("spec/conformance/cases/ExamplesTest.lua")(cls) end)
