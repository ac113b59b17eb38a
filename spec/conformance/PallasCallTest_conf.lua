-- JAX's PallasCallTest (tests/pallas/mosaic_gpu_test.py): the cases of
-- spec/conformance/cases/PallasCallTest.lua under Lane lowering semantics.
local C = dofile("spec/conformance/support/conf.lua")
local cls = C.class("PallasCallTest", function(name, ...) return _ENV[name](...) end, { semantics = "Lane" })
describe("PallasCallTest", function() dofile("spec/conformance/cases/PallasCallTest.lua")(cls) end)
