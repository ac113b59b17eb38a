-- JAX's WarpSpecializedPipelineWGTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/WarpSpecializedPipelineTest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("WarpSpecializedPipelineWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("WarpSpecializedPipelineWGTest", function() dofile("spec/conformance/cases/WarpSpecializedPipelineTest.lua")(cls) end)
