-- expect: 11: dynamic_scheduling_loop: its counter is the one the loop at spec/hostile/dynamic_shared_counter.lua:9 uses
-- Two dynamic_scheduling_loops of one kernel on one counter: the second
-- once silently ran nothing (its blocks found every item taken until the
-- first loop's last block reset the counter).
local mgpu = require "mgpu"
local k = mgpu.kernel{ grid = { 2 }, grid_names = { "b" }, out_shape = mgpu.shape({ 8 }, "i32"),
  body = function(counter, o)
    local c = counter:at(mgpu.ds(2, 2))
    mgpu.dynamic_scheduling_loop("b", { counter = c, grid = { 8 } }, function(info) o:at(info.index[1]):store(1) end)
    local again = counter:at(mgpu.ds(1, 3)):at(mgpu.ds(1, 2))   -- the same two elements, reached another way
    mgpu.dynamic_scheduling_loop("b", { counter = again, grid = { 8 } }, function(info) o:at(info.index[1]):store(2) end)
  end }
k(mgpu.zeros({ 4 }, "i32"))
