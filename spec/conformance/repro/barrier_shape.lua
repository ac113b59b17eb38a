-- new-barrier-shape: Pallas' Barrier(num_barriers=(2, 2)) is a 2-D array of barriers indexed
-- bars.at[i, j]; mgpu's num_barriers is a count.
local mgpu = require "mgpu"
print(pcall(mgpu.Barrier, { num_barriers = { 2, 2 } }))
