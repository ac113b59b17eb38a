-- new-line-info: Pallas' PTX carries .file/.loc line info pointing at the Python source; mgpu's
-- carries "// file:line" comments only.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 256 }, "f32"), body = function(x, o) o:store(x:load() + 1) end }
local ptx = k:lower(mgpu.abstract({ 256 }, "f32")).ptx
print(".file:", ptx:find(".file", 1, true) ~= nil, ".loc:", ptx:find(".loc", 1, true) ~= nil)
