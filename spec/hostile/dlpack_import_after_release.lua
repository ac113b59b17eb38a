-- expect: 10: from_dlpack: the tensor was freed already
-- An export imported, its array collected (which runs the deleter), then
-- imported again: an error, not a read of freed memory.
local mgpu = require "mgpu"
local t = mgpu.from_table({ 1, 2, 3 }, "f32"):to_dlpack()
local a = mgpu.from_dlpack(t)
a = nil
collectgarbage()
collectgarbage()
local b = mgpu.from_dlpack(t)
