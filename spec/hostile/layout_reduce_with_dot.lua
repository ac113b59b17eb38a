-- expect: 4: reduce: call it as layout:reduce(axes) (with a colon)
-- Layout.WGMMA.reduce(1) instead of Layout.WGMMA:reduce(1).
local mgpu = require "mgpu"
local l = mgpu.Layout.WGMMA.reduce(1)
