-- expect: 5: copy: element 2 is -2.5, not an integer (i32 holds integers from -2147483648 to 2147483647)
-- Copying floats to an integer dtype: a fraction names its element.
local mgpu = require "mgpu"
local a = mgpu.from_table({ 1, -2.5, 3 }, "f32")
local b = a:copy("i32")
