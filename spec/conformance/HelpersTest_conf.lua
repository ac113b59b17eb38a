-- JAX's HelpersTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/HelpersTest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("HelpersTest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("HelpersTest", function() dofile("spec/conformance/cases/HelpersTest.lua")(cls) end)
