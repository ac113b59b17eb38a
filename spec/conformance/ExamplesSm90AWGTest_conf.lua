-- JAX's ExamplesSm90AWGTest (tests/pallas/mosaic_gpu_test.py): the wgmma stage of
-- spec/conformance/cases/ExamplesTest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("ExamplesSm90AWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("ExamplesSm90AWGTest", function() dofile("spec/conformance/cases/ExamplesTest.lua")(cls, true) end)
