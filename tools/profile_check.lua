--[[
tools/profile_check.lua -- run a profiled kernel (CompilerParams profile_space /
profile_dir, mgpu.named_scope) and check the trace-event JSON it writes:
  mgpu tools/profile_check.lua [blocks] [dir] [warp]     (GPU, or the interpreter)
Each block's 2 warpgroups run 4 iterations of an "iter" scope with a nested
"compute" scope inside an "all" scope.  Prints the JSON's path, its event
count and dropped events, and whether every begin has its end, timestamps
per thread are monotonic and pids are SM ids below the device's SM count.
With `warp`, profile_trace_scope = "warp": each warp records its own
events (a JSON thread per warp), four times as many.
]]
local mgpu = require "mgpu"
local profile = require "mgpu.profile"
local blocks = tonumber(arg and arg[1]) or 132
local dir = arg and arg[2] or "/tmp/mgpu_profile"
local scope = arg and arg[3] == "warp" and "warp" or nil
local per = scope and 4 or 1     -- trace rows per warpgroup
local N = 1024

local k = mgpu.kernel{
  name = "profiled", grid = { blocks }, num_threads = 2, thread_name = "wg",
  out_shape = mgpu.shape({ blocks, 2, N }, "f32"),
  compiler_params = mgpu.CompilerParams{ profile_space = 32, profile_dir = dir, profile_trace_scope = scope },
  body = function(x, o)
    local b, wg = mgpu.program_id(0), mgpu.axis_index("wg")
    mgpu.named_scope("all", function()
      mgpu.fori(0, 4, function(i)
        mgpu.named_scope("iter", function()
          local v = x:at(b, wg):load()
          mgpu.named_scope("compute", function()
            for _ = 1, 8 do v = mgpu.exp(v * 0.5) * 0.25 end
          end)
          o:at(b, wg):store(v)
        end)
      end)
    end)
  end,
}

local x = mgpu.random.uniform({ blocks, 2, N }, "f32", 1)
k(x)
if mgpu.compile_only() then return end   -- mgpu --emit-ptx DIR: the PTX only
local last = profile.last
print(string.format("profile: %s: %d events, %d dropped (expected %d events)", last.path, last.events, last.dropped,
                    blocks * 2 * per * 2 * (1 + 4 * 2)))
local f = assert(io.open(last.path))
local s = f:read("*a")
f:close()
local stacks, last_ts, ok, pids, n = {}, {}, true, {}, 0
local sm_count = (mgpu.device() or {}).sm_count or 1e9
for name, ph, ts, pid, tid in s:gmatch('{"name":"([^"]*)","ph":"([BE])","ts":([%d.]+),"pid":(%d+),"tid":(%d+)}') do
  n = n + 1
  ts, pid = tonumber(ts), tonumber(pid)
  local key = pid .. ":" .. tid
  stacks[key] = stacks[key] or {}
  if ts < (last_ts[key] or 0) then ok = false; print("non-monotonic timestamps on " .. key) end
  last_ts[key] = ts
  if ph == "B" then table.insert(stacks[key], name)
  elseif table.remove(stacks[key]) ~= name then ok = false; print("unmatched end of " .. name .. " on " .. key) end
  if pid >= sm_count then ok = false; print("pid " .. pid .. " is not an SM id") end
  pids[pid] = true
end
for key, st in pairs(stacks) do if #st > 0 then ok = false; print("open scopes on " .. key) end end
local npid = 0
for _ in pairs(pids) do npid = npid + 1 end
local span = 0
for _, v in pairs(last_ts) do span = math.max(span, v) end
print(string.format("profile: %d B/E events in the JSON, %d SMs, last end at %.3f us; structure %s",
                    n, npid, span, ok and "OK" or "BROKEN"))
if not ok or n ~= last.events then os.exit(1) end
