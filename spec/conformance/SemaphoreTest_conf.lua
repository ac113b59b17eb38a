-- JAX's SemaphoreTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/SemaphoreTest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("SemaphoreTest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("SemaphoreTest", function() dofile("spec/conformance/cases/SemaphoreTest.lua")(cls) end)
