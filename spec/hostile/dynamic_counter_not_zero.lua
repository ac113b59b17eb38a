-- expect: 10: kernel 'dyn': the dynamic_scheduling_loop counter (argument 1 at offset 1) holds {5, 1} at launch
-- A counter not zero at launch once skipped the items below its value
-- silently; the interpreter checks it (on a GPU it is the caller's contract).
local mgpu = require "mgpu"
local k = mgpu.kernel{ name = "dyn", grid = { 2 }, grid_names = { "b" }, out_shape = mgpu.shape({ 8 }, "i32"),
  body = function(counter, o)
    mgpu.dynamic_scheduling_loop("b", { counter = counter:at(mgpu.ds(1, 2)), grid = { 8 } },
      function(info) o:at(info.index[1]):store(1) end)
  end }
local out = k(mgpu.from_table({ 0, 5, 1 }, "i32"))
