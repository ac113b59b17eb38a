--[[
Tutorial 11: profiling and debugging (docs/tutorial/11-profiling-debugging.md).

One kernel, y = x / max|x| row by row, looked at four ways:
1. k:lower(...) returns its IR and PTX without running it;
2. mgpu.debug_print prints from inside the kernel;
3. mgpu.named_scope plus CompilerParams{ profile_space, profile_dir }
   writes a Perfetto trace of the scopes;
4. a mistake is an error at the script's line, caught here with pcall.

  mgpu docs/examples/11_profiling_debugging.lua [rows] [cols]
]]
local mgpu = require "mgpu"

local R = tonumber((select(1, ...))) or 4
local C = tonumber((select(2, ...))) or 512
local tmp = os.tmpname()                       -- (a fresh name for the trace's directory)
local dir = tmp .. ".prof"

local function normalize(profiled)
  return mgpu.kernel{
    name = "normalize",
    grid = function(x) return { x.shape[1] } end,
    out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
    compiler_params = profiled and mgpu.CompilerParams{ profile_space = 8, profile_dir = dir } or nil,
    body = function(x, y)
      local r = mgpu.program_id(0)
      local row = mgpu.named_scope("load", function() return x:at(r):load() end)
      local m = mgpu.named_scope("reduce", function() return row:abs():max() end)
      mgpu.when(mgpu.eq(r, 0), function() mgpu.debug_print("row {}: max |x| = {}", r, m) end)
      mgpu.named_scope("store", function() y:at(r):store(row / m) end)
    end,
  }
end

-- 1. The IR and PTX for arguments of these shapes, without data or a launch.
local k = normalize(false)
local low = k:lower(mgpu.shape({ R, C }, "f32"))
print(string.format("IR: %d lines, PTX: %d lines; the first IR line: %s",
                    select(2, low.ir:gsub("\n", "")), select(2, low.ptx:gsub("\n", "")), low.ir:match("[^\n]*")))

-- 2. and 3. Run it profiled; debug_print writes one line per warpgroup that takes the branch.
local x = mgpu.random.normal({ R, C }, "f32")
local y = normalize(true)(x)
if mgpu.compile_only() then os.remove(tmp); return end

local H = mgpu.host
local hx = H.from(x)
local err = H.relerr(y, hx / hx:abs():amax(1, true))
print(string.format("normalize f32[%d, %d]: relative error %.2e", R, C, err))
assert(err < 1e-6, "normalize: wrong result")

local ls = io.popen("ls " .. dir)
local file = ls:read("*l")
ls:close()
local f = assert(io.open(dir .. "/" .. file))
local json = f:read("*a")
f:close()
local _, begins = json:gsub('"ph":"B"', "")
print(string.format("trace %s: %d scopes begun (3 per block); open it in ui.perfetto.dev", file, begins))
assert(begins == 3 * R, "the trace lacks scopes")
os.execute("rm -rf '" .. dir .. "'")
os.remove(tmp)

-- 4. A mistake: an output view of the wrong shape.  The message names the
-- script's line and both shapes.
local bad = mgpu.kernel{
  name = "bad", grid = { 1 }, out_shape = mgpu.shape({ 64 }, "f32"),
  body = function(x, y) y:store(x:at(0):load()) end,
}
local ok, msg = pcall(bad, x)
print("the error: " .. tostring(msg):match("[^\n]*"))
assert(not ok and msg:find("11_profiling_debugging.lua:%d+"), "the error should name this script's line")
