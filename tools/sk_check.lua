--[[
tools/sk_check.lua -- examples/matmul.lua's whole output against cuBLAS's,
launch after launch, on a GPU:

  mgpu tools/sk_check.lua [MxNxK ...] [runs=5] [key=value ...]

Each run draws fresh random normal inputs, poisons the output with NaN,
runs our kernel (the options given, e.g. sk=1) and cublasLt on them, and
compares every element (‖ours - cuBLAS‖ / ‖cuBLAS‖; NaN fails; interpreted,
against float64 instead).  Stream-K's
partial tiles land anywhere in the output and its workspace and semaphores
are reused by every launch, so whole outputs over several launches are
what shows a missing or stale partial.  Exits 1 when a run fails.
]]
local mgpu = require "mgpu"
local bench = require "mgpu.bench"
local H = mgpu.host
local root = (arg and arg[0] or ""):match("^(.*)tools/sk_check%.lua$") or ""
local lib = assert(loadfile(root .. "examples/matmul.lua"))("--lib")

local shapes, cfg, runs = {}, {}, 5
for _, a in ipairs({ ... }) do
  local m, n, k = a:match("^(%d+)x(%d+)x(%d+)$")
  local key, v = a:match("^([%w_]+)=(.+)$")
  if m then shapes[#shapes + 1] = { tonumber(m), tonumber(n), tonumber(k) }
  elseif key == "runs" then runs = tonumber(v)
  elseif key then cfg[key] = tonumber(v) or v
  else io.stderr:write("sk_check: cannot read '" .. a .. "'\n"); os.exit(2) end
end
if #shapes == 0 then shapes = { { 4096, 4096, 4096 } } end
local dtype = cfg.dtype or "bf16"

local failed = false
for _, s in ipairs(shapes) do
  local M, N, K = s[1], s[2], s[3]
  local kernel = lib.build(lib.for_shape(M, N, K, cfg))
  local worst = 0
  for r = 1, runs do
    local a, b = mgpu.random.normal({ M, K }, dtype), mgpu.random.normal({ K, N }, dtype)
    local ours, ref = mgpu.full({ M, N }, 0 / 0, dtype), mgpu.empty({ M, N }, dtype)
    kernel:call_into(ours, a, b)
    local want   -- cuBLAS's result, or float64 in the interpreter (which has no cuBLAS)
    if mgpu.interpreting() then want = H.matmul(H.from(a), H.from(b))
    else bench.cublas_matmul(a, b, ref); want = H.from(ref) end
    mgpu.sync()
    local err = H.relerr(H.from(ours), want)
    if not (err <= 1e-2) then failed = true end
    if not (err <= worst) then worst = err end
  end
  print(string.format("%dx%dx%d %s: %d runs, worst relative difference to cuBLAS %.2e%s", M, N, K, dtype, runs, worst,
                      worst <= 1e-2 and "" or "  FAIL"))
end
os.exit(failed and 1 or 0)
