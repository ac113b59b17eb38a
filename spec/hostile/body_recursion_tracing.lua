-- expect: 6: stack overflow
-- Unbounded recursion that traces an op at every level (wide frames, so the stack fills fast).
local mgpu = require "mgpu"
local pad = {}
for i = 1, 200 do pad[i] = i end
local function deeper(x, ...) local y = deeper(x + 1, ...); return y end
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }),
  body = function(o) deeper(mgpu.program_id(0), table.unpack(pad)) end }
k()
