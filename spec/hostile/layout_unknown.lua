-- expect: 4: mgpu.Layout has no member 'WGMMA_ROW_MAJOR'
-- A layout name that does not exist.
local mgpu = require "mgpu"
local l = mgpu.Layout.WGMMA_ROW_MAJOR
