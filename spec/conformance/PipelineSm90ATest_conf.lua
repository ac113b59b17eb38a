-- JAX's PipelineSm90ATest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/PipelineSm90ATest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("PipelineSm90ATest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("PipelineSm90ATest", function() dofile("spec/conformance/cases/PipelineSm90ATest.lua")(cls) end)
