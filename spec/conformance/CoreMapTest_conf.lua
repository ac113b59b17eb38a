-- JAX's CoreMapTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/CoreMapTest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("CoreMapTest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("CoreMapTest", function() dofile("spec/conformance/cases/CoreMapTest.lua")(cls) end)
