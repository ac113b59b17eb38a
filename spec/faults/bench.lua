-- mgpu.bench on the stand-in driver: each timed batch starts behind the
-- bench's own lead kernel (bench_spin), unless host = true is given.
local mgpu = require "mgpu"
local bench = require "mgpu.bench"
local K = dofile("spec/faults/kernels.lua")
local x = mgpu.iota(256, "f32")
local y = K.oops(x)
local ms = bench.bench(function() K.oops:call_into(y, x) end, { reps = 2, inner = 2, warmup = 1, host = arg[1] == "host" })
print(string.format("timed: %s", type(ms)))
