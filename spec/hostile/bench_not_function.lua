-- expect: 4: bench: the first argument must be a function to time, got number
-- mgpu.bench of a number.
local mgpu = require "mgpu"
mgpu.bench(5)
