-- expect: 6: only available while a kernel body is being traced
-- A ref kept from a body and loaded after the kernel ran.
local mgpu = require "mgpu"
local kept
mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }), body = function(o) kept = o; o:store(0) end }()
local v = kept:load()
