-- expect: 5: array: the nested table contains itself (t[1] is t)
-- A table that contains itself must not recurse forever.
local mgpu = require "mgpu"
local t = {}; t[1] = t
local x = mgpu.array(t)
