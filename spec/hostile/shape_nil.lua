-- expect: 4: shape must be a table of dimensions, got nil
-- mgpu.shape without a shape.
local mgpu = require "mgpu"
local s = mgpu.shape()
