-- expect: 4: a cluster may hold at most 8 blocks (the portable cluster size), got 16
-- A cluster of 16 blocks.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 16 }, cluster = { 16 }, out_shape = mgpu.shape({ 4 }), body = function() end }
