--[[
tools/memcheck.lua -- resident memory stays flat over many launches and
many array allocations: device and host buffers are freed once unreachable.

  mgpu tools/memcheck.lua [launches] [allocations]     (default 10000 100000)

Prints the resident set (from /proc/self/statm) before and after each phase
and its growth; exits non-zero when a phase grows by more than
MGPU_MEMCHECK_LIMIT_MB (default 32).  Each phase runs a warm-up round first
so caches, the kernel cache and the allocator's pools are in place.
]]
local mgpu = require "mgpu"

local launches = math.floor(tonumber(arg and arg[1]) or 10000)
local allocs = math.floor(tonumber(arg and arg[2]) or 100000)
local limit_mb = tonumber(os.getenv("MGPU_MEMCHECK_LIMIT_MB")) or 32

local page = 4096
local function rss_mb()
  local f = io.open("/proc/self/statm", "r")
  if not f then return 0 end
  local _, resident = f:read("*n", "*n")
  f:close()
  return (resident or 0) * page / 2 ^ 20
end

local add = mgpu.kernel{ name = "memcheck_add", out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  body = function(x, y, o) o:store(x:load() + y:load()) end }
local n = 4096
local x, y = mgpu.random.normal(n, "f32", 1), mgpu.random.normal(n, "f32", 2)
local out = mgpu.zeros(n)
local host = mgpu.host.from(x)

local function phase(name, count, step)
  for i = 1, math.min(count, 100) do step(i) end       -- warm-up
  collectgarbage(); collectgarbage()
  local before = rss_mb()
  for i = 1, count do step(i) end
  collectgarbage(); collectgarbage()
  local after = rss_mb()
  print(string.format("memcheck: %-28s %7d  RSS %8.1f MB -> %8.1f MB  (%+.1f MB)", name, count, before, after, after - before))
  return after - before
end

local worst = 0
local function note(g) if g > worst then worst = g end end
note(phase("launches (new outputs)", launches, function() add(x, y) end))
note(phase("launches (call_into)", launches, function() add:call_into(out, x, y) end))
note(phase("device array alloc/free", allocs, function(i) mgpu.zeros(1024 + i % 7) end))
note(phase("host array alloc/free", allocs, function() local h = host + 1; h = nil end))
print(string.format("memcheck: largest growth %.1f MB (limit %.1f MB)", worst, limit_mb))
if worst > limit_mb then
  io.stderr:write("memcheck: resident memory grew past the limit\n")
  os.exit(1)
end
