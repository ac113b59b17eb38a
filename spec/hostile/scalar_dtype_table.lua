-- expect: 4: scalar: dtype
-- A table for the dtype of a scalar.
local mgpu = require "mgpu"
local s = mgpu.scalar(1, {})
