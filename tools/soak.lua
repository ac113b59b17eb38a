--[[
tools/soak.lua -- a long session of kernel calls, as a REPL user makes them:
fresh inputs every call, shapes that keep changing (about 1,000 of them,
more than a kernel keeps specializations for), results read back.  The
resident set must hold steady.

  mgpu tools/soak.lua [calls]      (default 100000)

Prints the resident set (/proc/self/statm) after a warm-up and at the end;
exits non-zero when it grew by more than MGPU_SOAK_LIMIT_MB (default 8).
]]
local mgpu = require "mgpu"

local calls = math.floor(tonumber(arg and arg[1]) or 100000)
local limit_mb = tonumber(os.getenv("MGPU_SOAK_LIMIT_MB")) or 8

local function rss_mb()
  local f = io.open("/proc/self/statm", "r")
  if not f then return 0 end
  local _, resident = f:read("*n", "*n")
  f:close()
  return (resident or 0) * 4096 / 2 ^ 20
end

local same = function(x) return mgpu.shape(x.shape, x.dtype) end
local scale = mgpu.kernel{ name = "soak_scale", out_shape = same, body = function(x, o) o:store(x:load() * 2 + 1) end }
local total = mgpu.kernel{ name = "soak_total", out_shape = mgpu.shape({ 1 }, "f32"),
  body = function(x, o) o:at(0):store(x:load():sum()) end }

-- Call i: a 1-D call and a 2-D one whose shapes follow a long cycle; each result checked.
local function call(i)
  local n = 8 * (1 + (i * 7919) % 1000)
  local y = scale(mgpu.iota(n, "f32"))
  assert(y:get(n) == 2 * (n - 1) + 1, "soak_scale: wrong result")
  local r, c = 1 + i % 37, 8 * (1 + i % 29)
  local s = total(mgpu.full({ r, c }, 1, "f32"))
  assert(s:get(1) == r * c, "soak_total: wrong result")
end

for i = 1, 600 do call(i) end   -- warm-up: the kernels' specializations and the allocator's pools fill
collectgarbage(); collectgarbage()
local before, t0 = rss_mb(), os.clock()
for i = 601, 600 + calls do call(i) end
collectgarbage(); collectgarbage()
local after = rss_mb()
print(string.format("soak: %d calls (%d kernel launches) in %.1f s: RSS %.1f MB -> %.1f MB (%+.1f MB, limit %.1f MB)",
                    calls, 2 * calls, os.clock() - t0, before, after, after - before, limit_mb))
if after - before > limit_mb then
  io.stderr:write("soak: resident memory grew past the limit\n")
  os.exit(1)
end
