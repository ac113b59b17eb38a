--[[
mgpu.profile -- the in-kernel profiler (CompilerParams{ profile_space = n,
profile_dir = "dir" }).  mgpu.named_scope("name", fn) brackets fn's ops
with two `profile` ops: the leader thread of every warpgroup (of every
warp with profile_trace_scope = "warp") stamps
{tag, %smid, %globaltimer} (the interpreter: SM 0 and its step counter)
into a hidden u32[traces, 4 + 4*space] output that the kernel wrapper
allocates (zeroed) and appends after the outputs.  Row t (trace = linear
block * warpgroups + warpgroup, times 4 plus the warp with warp scope) holds the number of events in word 0 (all
of them, dropped ones included), then `space` events of 16 bytes:
tag = name id | end << 31, SM id, clock low, clock high.  After the launch
the host writes a Chrome/Perfetto trace-event JSON into profile_dir.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"

local M = {}
local fail = compat.fail

--- mgpu.named_scope("name", fn, ...): call fn(...) and return its results;
--- under profiling, the warpgroup's begin and end stamps bracket its ops.
function M.named_scope(name, fn, ...)
  if type(name) ~= "string" or name == "" or name:find("[%c\"\\]") then
    fail("NAMED_SCOPE_NAME")
  end
  if type(fn) ~= "function" then fail("NAMED_SCOPE_NOT_FUNCTION", type(fn)) end
  local t = trace.current
  local prof = t and t.profile
  if not prof then return fn(...) end
  local id = prof.ids[name]
  if not id then
    prof.names[#prof.names + 1] = name
    id = #prof.names - 1
    prof.ids[name] = id
  end
  trace.op("profile", { prof.ref }, { id, 0, prof.warps }, nil, name)
  local res = compat.pack(fn(...))
  trace.op("profile", { prof.ref }, { id, 1, prof.warps }, nil, name)
  return compat.unpack(res, 1, res.n)
end

--- The hidden buffer's shape for a grid, traces per block (warpgroups, or
--- warps with profile_trace_scope = "warp") and space.
function M.buffer_shape(grid, per_block, space)
  local blocks = 1
  for i = 1, #grid do blocks = blocks * grid[i] end
  return { blocks * per_block, 4 + 4 * space }
end

local function jstr(s) return '"' .. s:gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"' end

--- Decode the buffer (a flat table of u32) into events and write the JSON
--- (named after device dev too, when given).  Returns the path, the number
--- of events written and the number dropped.
function M.write(info, flat, kname, interpret, dev)
  local rows, width = info.shape[1], info.shape[2]
  local space = math.floor(width / 4) - 1
  local evs, dropped, t0, recorded = {}, 0, nil, 0
  for r = 0, rows - 1 do
    local base = r * width
    local n = flat[base + 1]
    local cut = n > space
    if cut then dropped = dropped + (n - space); n = space end
    recorded = recorded + n
    local open, last = {}, nil
    for i = 0, n - 1 do
      local e = base + 4 + 4 * i
      local tag, sm = flat[e + 1], flat[e + 2]
      local clk = flat[e + 3] + flat[e + 4] * 4294967296
      local ev = { name = info.names[tag % 2147483648 + 1] or "?", ph = tag >= 2147483648 and "E" or "B",
                   clk = clk, pid = sm, tid = r }
      evs[#evs + 1] = ev
      if ev.ph == "B" then open[#open + 1] = ev else open[#open] = nil end
      last = ev
      if not t0 or clk < t0 then t0 = clk end
    end
    if cut then    -- a truncated trace: synthetic ends for the scopes left open
      for j = #open, 1, -1 do evs[#evs + 1] = { name = open[j].name, ph = "E", clk = last.clk, pid = last.pid, tid = r } end
    end
  end
  -- ns -> us on the GPU; the interpreter's clock is its step counter (one step = 1 "us")
  local scale = interpret and 1 or 1e-3
  local nwg, warps = info.nwg, info.warps or 1
  local out, seen = {}, {}
  for _, e in ipairs(evs) do
    local key = e.pid .. ":" .. e.tid
    if not seen[key] then
      seen[key] = true
      local wg = math.floor(e.tid / warps)
      out[#out + 1] = string.format('{"name":"thread_name","ph":"M","pid":%d,"tid":%d,"args":{"name":"block %d warpgroup %d%s"}}',
                                    e.pid, e.tid, math.floor(wg / nwg), wg % nwg,
                                    warps > 1 and string.format(" warp %d", e.tid % warps) or "")
    end
    if not seen["p" .. e.pid] then
      seen["p" .. e.pid] = true
      out[#out + 1] = string.format('{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":{"name":"SM %d"}}', e.pid, e.pid)
    end
    out[#out + 1] = string.format('{"name":%s,"ph":"%s","ts":%.3f,"pid":%d,"tid":%d}', jstr(e.name), e.ph,
                                  (e.clk - t0) * scale, e.pid, e.tid)
  end
  local dir = info.dir
  os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")
  M.count = (M.count or 0) + 1
  local path = string.format("%s/%s%s-%d-%d-trace.json", dir, kname, dev and "-dev" .. dev or "", os.time(), M.count)
  local f, err = io.open(path, "w")
  if not f then fail("PROFILE_WRITE", path, tostring(err)) end
  f:write('{"displayTimeUnit":"ns","otherData":{"kernel":', jstr(kname), ',"clock":"',
          interpret and "interpreter steps" or "globaltimer", '","dropped":', tostring(dropped),
          '},"traceEvents":[\n', table.concat(out, ",\n"), "\n]}\n")
  f:close()
  if dropped > 0 then
    io.stderr:write(string.format("mgpu profile: kernel '%s': profile_space = %d was too small, %d event%s dropped (%s)\n",
                                  kname, space, dropped, dropped == 1 and "" or "s", path))
  end
  M.last = { path = path, events = recorded, dropped = dropped }
  return path, recorded, dropped
end

return M
