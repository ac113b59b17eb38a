-- expect: 4: scalar: dtype must be a numeric dtype other than pred and f8
-- A scalar kernel argument of dtype f8.
local mgpu = require "mgpu"
local s = mgpu.scalar(1, "f8e4m3")
