--[[
Layer-norm and softmax variants at (32768, 4096) bf16, for choosing how the
examples split rows over blocks.  Prints one line per variant: time, GB/s
(bytes read + written once) and relative error on a row sample.

  mgpu bench/norm_variants.lua [rows] [cols]
]]
local mgpu = require "mgpu"
local args = { ... }
local rows = tonumber(args[1]) or 32768
local cols = tonumber(args[2]) or 4096
local eps = 1e-5
local H = mgpu.host

local x = mgpu.random.normal({ rows, cols }, "bf16", nil, 1, 3)
local gamma = mgpu.random.uniform(cols, "bf16", nil, 0.5, 1.5)
local beta = mgpu.random.normal(cols, "bf16")
local n = math.min(rows, 128)
local xs = H.from(x):rows(0, n)
local c = xs - xs:mean(1, true)
local ref_ln = c / ((c * c):mean(1, true) + eps):sqrt() * H.from(gamma) + H.from(beta)
local e = (xs - xs:amax(1, true)):exp()
local ref_sm = e / e:sum(1, true)

local function norm_row(row, g, b)
  local centered = row - row:mean()
  local inv = ((centered * centered):mean() + eps):rsqrt()
  return centered * inv * g + b
end

-- rows_per_block rows per block in a loop; gamma/beta loaded once per block
-- (as f32 when convert_once, else kept bf16 and converted per row)
local function layernorm(rpb, convert_once)
  return mgpu.kernel{
    name = "ln", grid = function(xx) return { mgpu.cdiv(xx.shape[1], rpb) } end,
    out_shape = function(xx) return mgpu.shape(xx.shape, xx.dtype) end,
    compiler_params = mgpu.CompilerParams{ approx_math = true },
    body = function(xr, gr, br, yr)
      local g, b = gr:load(), br:load()
      if convert_once then g, b = g:astype("f32"), b:astype("f32") end
      local base = mgpu.program_id(0) * rpb
      if rpb == 1 then
        yr:at(base):store(norm_row(xr:at(base):load():astype("f32"), g:astype("f32"), b:astype("f32")):astype("bf16"))
        return
      end
      mgpu.fori(0, rpb, function(r)
        local i = base + r
        yr:at(i):store(norm_row(xr:at(i):load():astype("f32"), g:astype("f32"), b:astype("f32")):astype("bf16"))
      end)
    end,
  }
end

local function softmax(rpb)
  return mgpu.kernel{
    name = "sm", grid = function(xx) return { mgpu.cdiv(xx.shape[1], rpb) } end,
    out_shape = function(xx) return mgpu.shape(xx.shape, xx.dtype) end,
    compiler_params = mgpu.CompilerParams{ approx_math = true },
    body = function(xr, yr)
      local base = mgpu.program_id(0) * rpb
      local function one(i)
        local row = xr:at(i):load():astype("f32")
        local p = (row - row:max()):exp()
        yr:at(i):store((p / p:sum()):astype("bf16"))
      end
      if rpb == 1 then one(base) else mgpu.fori(0, rpb, function(r) one(base + r) end) end
    end,
  }
end

-- wgs warpgroups per block, one row each (bigger blocks, fewer of them); `recip` multiplies by
-- 1 / sum instead of dividing every element
local function softmax_wg(wgs, recip)
  return mgpu.kernel{
    name = "smw", grid = function(xx) return { mgpu.cdiv(xx.shape[1], wgs) } end,
    num_threads = wgs, thread_name = "wg",
    out_shape = function(xx) return mgpu.shape(xx.shape, xx.dtype) end,
    compiler_params = mgpu.CompilerParams{ approx_math = true },
    body = function(xr, yr)
      local i = mgpu.program_id(0) * wgs + mgpu.axis_index("wg")
      local row = xr:at(i):load():astype("f32")
      local p = (row - row:max()):exp()
      local out = recip and p * (1.0 / p:sum()) or p / p:sum()
      yr:at(i):store(out:astype("bf16"))
    end,
  }
end

local y = mgpu.empty({ rows, cols }, "bf16")
local function report(name, k, ref, ...)
  local a = { ... }
  local unpack = table.unpack or unpack
  k:call_into(y, ...)
  local err = H.relerr(H.from(y):rows(0, n), ref)
  local ms = mgpu.bench(function() k:call_into(y, unpack(a)) end, { reps = 30 })
  local res = k:lower(...).resources
  print(string.format("%-28s %.4f ms  %7.1f GB/s  err %.1e  regs %s", name, ms, 2 * x.nbytes / ms / 1e6, err,
                      tostring(res.registers)))
end

for _, rpb in ipairs({ 1, 2, 4, 8 }) do
  report("layernorm rows/block=" .. rpb, layernorm(rpb, true), ref_ln, x, gamma, beta)
  report("layernorm rows/block=" .. rpb .. " bf16 g,b", layernorm(rpb, false), ref_ln, x, gamma, beta)
end
for _, rpb in ipairs({ 1, 2, 4 }) do report("softmax rows/block=" .. rpb, softmax(rpb), ref_sm, x) end
for _, v in ipairs({ { 1, true }, { 2, false }, { 2, true }, { 4, true } }) do
  report(string.format("softmax wgs/block=%d%s", v[1], v[2] and " 1/sum" or ""), softmax_wg(v[1], v[2]), ref_sm, x)
end
