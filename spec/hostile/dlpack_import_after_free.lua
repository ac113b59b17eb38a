-- expect: 7: from_dlpack: the tensor was freed already
-- Importing an export after mgpu.dlpack_free ran its deleter: an error that
-- says so (it once read the freed tensor and gave a wrong reason).
local mgpu = require "mgpu"
local t = mgpu.from_table({ 1, 2, 3 }, "f32"):to_dlpack()
mgpu.dlpack_free(t)
local a = mgpu.from_dlpack(t)
