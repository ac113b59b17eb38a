-- JAX's SemaphoreWGTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/SemaphoreTest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("SemaphoreWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("SemaphoreWGTest", function() dofile("spec/conformance/cases/SemaphoreTest.lua")(cls) end)
