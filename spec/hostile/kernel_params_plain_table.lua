-- expect: 4: compiler_params must come from mgpu.CompilerParams{...}
-- A plain table as compiler_params.
local mgpu = require "mgpu"
local k = mgpu.kernel{ out_shape = mgpu.shape({ 4 }), body = function() end,
  compiler_params = { approx_math = true } }
