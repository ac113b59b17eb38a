-- JAX's ExamplesTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/ExamplesTest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("ExamplesTest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("ExamplesTest", function() dofile("spec/conformance/cases/ExamplesTest.lua")(cls) end)
