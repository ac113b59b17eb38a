-- JAX's CoreMapWGTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/CoreMapTest.lua under Warpgroup lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("CoreMapWGTest", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
describe("CoreMapWGTest", function() dofile("spec/conformance/cases/CoreMapTest.lua")(cls) end)
