-- JAX's PipelineTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/PipelineTest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("PipelineTest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("PipelineTest", function() dofile("spec/conformance/cases/PipelineTest.lua")(cls) end)
