-- JAX's PipelineSm90AWGTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/PipelineSm90ATest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("PipelineSm90AWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("PipelineSm90AWGTest", function() dofile("spec/conformance/cases/PipelineSm90ATest.lua")(cls) end)
