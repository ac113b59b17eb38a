-- JAX's WarpSpecializedPipelineTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/WarpSpecializedPipelineTest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("WarpSpecializedPipelineTest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("WarpSpecializedPipelineTest", function() dofile("spec/conformance/cases/WarpSpecializedPipelineTest.lua")(cls) end)
