-- JAX's HelpersWGTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/HelpersTest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("HelpersWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("HelpersWGTest", function() dofile("spec/conformance/cases/HelpersTest.lua")(cls) end)
