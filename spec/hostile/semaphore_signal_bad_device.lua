-- expect: 6: semaphore_signal: device_id 5 is out of range: the job has 1 device (0..0)
-- A signal to a device the job lacks: it once named on_device.
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 1 }, out_shape = mgpu.shape({ 4 }, "f32"),
  scratch_shapes = { mgpu.SemaphoreType.REGULAR({ 1 }) }, body = function(o, sems)
    mgpu.semaphore_signal(sems:at(0), 1, { device_id = 5 })
  end }
k()
