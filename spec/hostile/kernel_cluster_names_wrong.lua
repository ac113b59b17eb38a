-- expect: 4: cluster_names must name each of the 2 axes
-- One cluster name for two cluster axes.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 2, 2 }, cluster = { 2, 2 }, cluster_names = { "x" }, out_shape = mgpu.shape({ 4 }), body = function() end }
