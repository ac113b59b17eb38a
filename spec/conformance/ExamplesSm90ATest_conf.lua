-- JAX's ExamplesSm90ATest (tests/pallas/mosaic_gpu_test.py): the wgmma stage of
-- spec/conformance/cases/ExamplesTest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("ExamplesSm90ATest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("ExamplesSm90ATest", function() dofile("spec/conformance/cases/ExamplesTest.lua")(cls, true) end)
