-- expect: 4: mgpu.tcgen05_mma is not provided: Blackwell-only
-- A Blackwell primitive.
local mgpu = require "mgpu"
mgpu.tcgen05_mma(nil, nil, nil)
