-- expect: 5: expected a traced value or a number, got string
-- Binary ops on two Lua numbers fold to constants (mgpu.rem(5, 3) is 2); a string is refused by name.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 1 }, "i32"), grid = { 1 }, body = function(o)
  assert(o:at(0) and mgpu.rem(5, 3)); o:store(mgpu.rem("x", 3)) end }
k()
