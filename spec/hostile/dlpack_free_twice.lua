-- expect: 7: dlpack_free: the tensor was freed already
-- mgpu.dlpack_free twice on one export: the second is an error that says so
-- (it once ran the deleter again: a double free that aborted the process).
local mgpu = require "mgpu"
local t = mgpu.from_table({ 1, 2, 3 }, "f32"):to_dlpack()
mgpu.dlpack_free(t)
mgpu.dlpack_free(t)
