-- JAX's PipelineWGTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/PipelineTest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("PipelineWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("PipelineWGTest", function() dofile("spec/conformance/cases/PipelineTest.lua")(cls) end)
