--[[
tools/profile_phases.lua -- where a profiled kernel's loop spends its time,
from the trace-event JSON of mgpu's in-kernel profiler (CompilerParams
profile_space / profile_dir, mgpu.named_scope):

  lua5.4 tools/profile_phases.lua TRACE.json [marker ...]    (or mgpu, luajit)

Per warpgroup index (warpgroup w of every block together), a step of the
loop runs from one begin of its marker scope to the next: by default the
outermost scope name that occurs most often in the warpgroup's trace (the
first one stamped among equals), or the first of the given names that
the warpgroup stamps.  For each scope name, in the order they start in a
step (the median start), the table gives how often it runs a step, its
median and mean time per run, its mean time per step and its share of
the step, then the unscoped rest; scopes stamped outside the steps
(before the first marker, or after the last step's) are listed with their
median per trace.  The timer's resolution is the smallest step between
two of a trace's timestamps: with a coarse timer (1 us on some GPUs)
medians are quantized, means are not.  Last, the tail: how long before
the kernel's last stamp each block stamped its own last (blocks idle while
others finish).
]]
local path = arg and arg[1]
if not path then
  io.stderr:write("usage: tools/profile_phases.lua TRACE.json [marker ...]\n")
  os.exit(2)
end
local markers = {}
for i = 2, #arg do markers[#markers + 1] = arg[i] end

local f = assert(io.open(path))
local text = f:read("*a")
f:close()

-- traces by "pid:tid": the warpgroup (from the thread_name metadata) and the events in file order
local traces, order = {}, {}
local function trace(pid, tid)
  local key = pid .. ":" .. tid
  local t = traces[key]
  if not t then
    t = { events = {} }
    traces[key] = t
    order[#order + 1] = key
  end
  return t
end
local meta = '{"name":"thread_name","ph":"M","pid":(%d+),"tid":(%d+),"args":{"name":"block (%d+) warpgroup (%d+)'
for pid, tid, block, wg in text:gmatch(meta) do
  local t = trace(pid, tid)
  t.block, t.wg = tonumber(block), tonumber(wg)
end
local kernel = text:match('"kernel":"([^"]*)"') or "?"
local clock = text:match('"clock":"([^"]*)"') or "?"
local unit = clock == "globaltimer" and "us" or "steps"
for name, ph, ts, pid, tid in text:gmatch('{"name":"([^"]*)","ph":"([BE])","ts":([%d.]+),"pid":(%d+),"tid":(%d+)}') do
  local ev = trace(pid, tid).events
  ev[#ev + 1] = { name = name, ph = ph, ts = tonumber(ts) }
end
text = nil

local function median(xs)
  if #xs == 0 then return 0 end
  table.sort(xs)
  local m = math.floor((#xs + 1) / 2)
  return #xs % 2 == 1 and xs[m] or (xs[m] + xs[m + 1]) / 2
end

-- a trace's scope runs { name, b, e, depth } in begin order, and its smallest timestamp step
local function runs_of(events)
  local runs, stack, res, last = {}, {}, math.huge, nil
  for _, ev in ipairs(events) do
    if last and ev.ts > last then res = math.min(res, ev.ts - last) end
    last = ev.ts
    if ev.ph == "B" then
      local r = { name = ev.name, b = ev.ts, depth = #stack }
      runs[#runs + 1] = r
      stack[#stack + 1] = r
    else
      local r = table.remove(stack)
      if r then r.e = ev.ts end
    end
  end
  return runs, res
end

-- per warpgroup index: the step periods, per name the run times and the steps' totals
local groups, resolution, ntraces = {}, math.huge, 0
for _, key in ipairs(order) do
  local t = traces[key]
  if #t.events > 0 then
    ntraces = ntraces + 1
    local runs, res = runs_of(t.events)
    resolution = math.min(resolution, res)
    local g = groups[t.wg or -1]
    if not g then
      g = { periods = {}, names = {}, outside = {}, first = {}, steps = 0 }
      groups[t.wg or -1] = g
    end
    -- the marker: a given name this trace stamps, else its most frequent outermost name
    local count, first = {}, {}
    for i, r in ipairs(runs) do
      if r.depth == 0 then
        count[r.name] = (count[r.name] or 0) + 1
        first[r.name] = first[r.name] or i
      end
    end
    local marker
    for _, m in ipairs(markers) do if not marker and count[m] then marker = m end end
    if not marker then
      for name, c in pairs(count) do
        if not marker or c > count[marker] or (c == count[marker] and first[name] < first[marker]) then marker = name end
      end
    end
    g.marker = g.marker or marker
    local starts = {}
    for _, r in ipairs(runs) do if r.name == marker and r.depth == 0 then starts[#starts + 1] = r.b end end
    for k = 1, #starts - 1 do g.periods[#g.periods + 1] = starts[k + 1] - starts[k] end
    g.steps = g.steps + math.max(#starts - 1, 0)
    local k = 1
    for _, r in ipairs(runs) do
      if r.e then
        while k < #starts and r.b >= starts[k + 1] do k = k + 1 end
        local inside = #starts > 1 and r.b >= starts[1] and r.b < starts[#starts]
        local n = g.names[r.name]
        if inside then
          if not n then
            n = { runs = {}, total = 0, depth = r.depth, offsets = {} }
            g.names[r.name] = n
            g.first[#g.first + 1] = r.name
          end
          n.runs[#n.runs + 1] = r.e - r.b
          n.total = n.total + (r.e - r.b)
          n.offsets[#n.offsets + 1] = r.b - starts[k]
        elseif not n then
          local o = g.outside[r.name]
          if not o then o = {}; g.outside[r.name] = o; g.outside[#g.outside + 1] = r.name end
          o[#o + 1] = r.e - r.b
        end
      end
    end
  end
end

print(string.format("%s: kernel %s, %d traces, clock %s%s", path, kernel, ntraces, clock,
                    resolution < math.huge and string.format(", resolution %.3f %s", resolution, unit) or ""))
local wgs = {}
for wg in pairs(groups) do wgs[#wgs + 1] = wg end
table.sort(wgs)
for _, wg in ipairs(wgs) do
  local g = groups[wg]
  local sum = 0
  for _, p in ipairs(g.periods) do sum = sum + p end
  local steps = math.max(g.steps, 1)
  print(string.format("warpgroup %d: %d steps (from one \"%s\" to the next), a step: median %.3f %s, mean %.3f %s",
                      wg, g.steps, g.marker or "?", median(g.periods), unit, sum / steps, unit))
  if g.steps > 0 then
    print(string.format("  %-14s %6s %10s %10s %10s %7s", "phase", "/step", "median", "mean", "mean/step", "share"))
    local scoped = 0
    for _, name in ipairs(g.first) do g.names[name].offset = median(g.names[name].offsets) end
    table.sort(g.first, function(a, b) return g.names[a].offset < g.names[b].offset end)   -- as they run in a step
    for _, name in ipairs(g.first) do
      local n = g.names[name]
      if n.depth == 0 then scoped = scoped + n.total end
      local mean = n.total / #n.runs
      print(string.format("  %-14s %6.2f %10.3f %10.3f %10.3f %6.1f%%", string.rep(" ", n.depth) .. name,
                          #n.runs / steps, median(n.runs), mean, n.total / steps, 100 * n.total / sum))
    end
    print(string.format("  %-14s %6s %10s %10s %10.3f %6.1f%%", "(unscoped)", "", "", "", (sum - scoped) / steps,
                        100 * (sum - scoped) / sum))
  end
  local out = {}
  for _, name in ipairs(g.outside) do
    out[#out + 1] = string.format("%s %.3f", name, median(g.outside[name]))
  end
  if #out > 0 then print(string.format("  outside the steps (median per trace, %s): %s", unit, table.concat(out, ", "))) end
end

-- the tail: how long before the kernel's last stamp each block stamped its own last
local first, last, block_last = math.huge, -math.huge, {}
for _, key in ipairs(order) do
  local t = traces[key]
  for _, ev in ipairs(t.events) do
    first, last = math.min(first, ev.ts), math.max(last, ev.ts)
    if t.block then block_last[t.block] = math.max(block_last[t.block] or -math.huge, ev.ts) end
  end
end
local idle = {}
for _, b in pairs(block_last) do idle[#idle + 1] = last - b end
if #idle > 1 then
  table.sort(idle)
  local p90 = idle[math.max(1, math.ceil(0.9 * #idle))]
  print(string.format("blocks: %d over %.3f %s of stamps; done before the last stamp by median %.3f, 90%% %.3f, most %.3f %s",
                      #idle, last - first, unit, median(idle), p90, idle[#idle], unit))
end
if resolution < math.huge and clock == "globaltimer" and resolution > 0.1 then
  print(string.format("note: the timer ticks every %.3f us: read the means, the medians are quantized", resolution))
end
