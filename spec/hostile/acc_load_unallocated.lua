-- expect: 5: acc:load: mgpu.ACC(...) describes an accumulator to allocate, it is not one yet
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 64, 64 }, "f32"),
  body = function(o)
    o:store(mgpu.ACC({ 64, 64 }, "f32"):load())
  end }
k()
