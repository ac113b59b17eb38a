--[[
The command line of examples/matmul.lua (it loads this file with dofile):
run the kernel on random inputs, check it against a float64 reference,
time it on a GPU, and tune it on request.

  mgpu examples/matmul.lua [M] [N] [K] [dtype] [key=value ...] [--tune]
    (4096^3 bf16 on a GPU; 256x384x320 interpreted)
    dtype: bf16, f16, or FP8: f8e4m3 or f8e5m2 (b_dtype=f8e5m2 or f8e4m3 mixes them), with random
           scales a_scale and b_scale in [0.5, 2) and B made as (N, K); the reference is the float64
           product of the f8 values themselves
    keys: the kernel's options (examples/matmul_plan.lua lists them), and
          act=relu|gelu  a fused epilogue, GELU in its tanh form: C = act(A @ B) before the cast
          tune=1 (or --tune)  mgpu.autotune picks tile_n, snake, wg_dim and sched for the shape,
                         and keeps the winner per shape and options next to the kernel cache
          reps=N         timed repetitions on a GPU (20)
]]
local mgpu = require "mgpu"
local unpack = table.unpack or unpack

local check = {}

-- tune=1: the configuration mgpu.autotune finds fastest over tile_n x snake x wg_dim x sched (the
-- other options as given) for sizes { M, N, K, K as stored } and the kernel's inputs args (the
-- work counter left out); the winner is kept per shape and options next to the kernel cache.
local function tuned(lib, cfg, args, sizes, act_name)
  local M, N, K, Kp = sizes[1], sizes[2], sizes[3], sizes[4]
  local fixed, configs = {}, {}
  local tunable = { epilogue = true, tile_n = true, snake = true, wg_dim = true, sched = true }
  for k, v in pairs(cfg) do if not tunable[k] then fixed[#fixed + 1] = k .. "=" .. tostring(v) end end
  if act_name then fixed[#fixed + 1] = "act=" .. act_name end
  table.sort(fixed)
  for _, tn_ in ipairs({ 128, 192, 256 }) do
    for _, wg in ipairs({ "M", "N" }) do
      for _, sched in ipairs({ "static", "dynamic" }) do
        for _, snake in ipairs({ 4, 8, 16 }) do
          local fits = N >= tn_ * (wg == "N" and 2 or 1)
          if fits and (sched == "static" or (cfg.cluster or 1) == 1) then
            configs[#configs + 1] = { tile_n = tn_, wg_dim = wg, sched = sched, snake = snake }
          end
        end
      end
    end
  end
  if #configs == 0 then configs[1] = { tile_n = cfg.tile_n, wg_dim = "M", sched = "static", snake = 8 } end
  local tcounter, tout = mgpu.zeros({ 2 }, "i32"), mgpu.empty({ M, N }, lib.operands(cfg).out)
  local function with(t)
    local c2 = {}
    for k, v in pairs(cfg) do c2[k] = v end
    for k, v in pairs(t) do c2[k] = v end
    return c2
  end
  local _, best = mgpu.autotune{
    key = string.format("matmul %dx%dx%d %s", M, N, Kp, table.concat(fixed, " ")),
    configs = configs, args = args,
    kernel_factory = function(t)
      local mm = lib.build(with(t))
      return function(...)
        local xs = { ... }
        if t.sched == "dynamic" then xs[#xs + 1] = tcounter end
        return mm:call_into(tout, unpack(xs))
      end
    end,
  }
  print(string.format("matmul: tuned for %dx%dx%d %s: tile_n=%d snake=%d wg_dim=%s sched=%s", M, N, K, cfg.dtype,
                      best.tile_n, best.snake, best.wg_dim, best.sched))
  return with(best)
end

--- Run the script for the kernels of `lib` (examples/matmul.lua's) with
--- the command line's arguments.
function check.script(lib, ...)
  local pos, cfg = mgpu.script_args(...)
  for i = #pos, 1, -1 do
    if pos[i] == "--tune" then cfg.tune = 1; table.remove(pos, i) end
  end
  local tune = cfg.tune == 1 or cfg.tune == "yes"
  cfg.tune = nil
  local small = mgpu.interpreting()
  local M = tonumber(pos[1]) or (small and 256 or 4096)
  local N = tonumber(pos[2]) or (small and 384 or M)
  local K = tonumber(pos[3]) or (small and 320 or M)
  cfg.dtype = pos[4] or cfg.dtype or "bf16"
  local o = lib.operands(cfg)
  local reps = cfg.reps or 20
  cfg.reps = nil
  -- fused epilogues: functions of the f32 tile on the device, and the same on the f64 reference
  local acts = {
    relu = { function(t) return mgpu.max(t, 0.0) end, function(h) return h:max(0) end },
    gelu = {
      function(t) local u = (t + t * t * t * 0.044715) * 0.7978845608; return t * 0.5 * (mgpu.tanh(u) + 1.0) end,
      function(h) local u = (h + h * h * h * 0.044715) * 0.7978845608; return h * 0.5 * (u:tanh() + 1) end },
  }
  local act_name = cfg.act
  local act = cfg.act and acts[cfg.act]
  if cfg.act and not act then io.stderr:write("matmul: act must be relu or gelu\n"); os.exit(2) end
  cfg.act = nil
  if act then cfg.epilogue = act[1] end
  local matmul

  -- TMA reads rows that start on 16-byte boundaries: when K is not a multiple of 8 (16 with FP8),
  -- A and B are stored with K padded to one (the leading dimension a BLAS call would take), with
  -- B's padding zero so that A's padding columns add nothing.  The kernel sees the padded K; its
  -- last K tile, past the arrays' end, is zero-filled by the copy engine.
  local align = o.f8 and 16 or 8
  local Kp = math.ceil(K / align) * align
  cfg = lib.for_shape(M, N, Kp, cfg)   -- (the tile width, where not given, by the shape)
  if not tune then matmul = lib.build(cfg) end
  local a = mgpu.random.normal({ M, Kp }, o.a)
  local b
  if o.f8 then   -- B as (N, K): padding columns
    b = mgpu.random.normal({ N, Kp }, o.b)
    if Kp > K then
      b = mgpu.kernel{ name = "pad_cols", grid = { N }, out_shape = mgpu.shape({ N, Kp }, o.b),
        body = function(src, dst)   -- (f8 values pass through as their bits)
          local r = mgpu.program_id(0)
          local row = src:at(r, mgpu.all):load():bitcast("u8")
          local col = mgpu.broadcasted_iota("i32", { Kp }, 0)
          dst:at(r, mgpu.all):store(mgpu.select(mgpu.lt(col, K), row, 0):bitcast(o.b))
        end }(b)
    end
  else
    b = mgpu.random.normal({ K, N }, o.b)
    if Kp > K then
      b = mgpu.kernel{ name = "pad_rows", grid = { Kp }, out_shape = mgpu.shape({ Kp, N }, o.b),
        body = function(src, dst)
          local r = mgpu.program_id(0)
          local row = src:at(mgpu.min(r, K - 1), mgpu.all):load()
          dst:at(r, mgpu.all):store(mgpu.select(mgpu.lt(r, K), row, 0))
        end }(b)
    end
  end
  local args = { a, b }
  if o.f8 then   -- the per-tensor scales
    args[3] = mgpu.random.uniform({}, "f32", nil, 0.5, 2)
    args[4] = mgpu.random.uniform({}, "f32", nil, 0.5, 2)
  end

  if tune then
    cfg = tuned(lib, cfg, args, { M, N, K, Kp }, act_name)
    matmul = lib.build(cfg)
  end
  local counter = cfg.sched == "dynamic" and mgpu.zeros({ 2 }, "i32") or nil
  local inputs = { unpack(args) }
  inputs[#inputs + 1] = counter
  local c = mgpu.full({ M, N }, 0 / 0, o.out)   -- (poisoned: every element must be written)
  matmul:call_into(c, unpack(inputs))
  if mgpu.compile_only() then return end

  -- float64 reference on the first and the last rows (every row when small)
  local H = mgpu.host
  local band = small and M or math.min(M, 64)
  local hb = o.f8 and H.from(b):transpose() or H.from(b)
  local err = 0
  for _, r0 in ipairs({ 0, M - band }) do
    local ref = H.matmul(H.from(a:rows(r0, band)), hb)
    if o.f8 then ref = ref * H.from(args[3]) * H.from(args[4]) end
    if act then ref = act[2](ref) end
    err = math.max(err, H.relerr(H.from(c:rows(r0, band)), ref))
  end
  local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
  local dtypes = o.a == o.b and o.a or (o.a .. " x " .. o.b)
  print(string.format("matmul %s %dx%dx%d%s%s (%s): relative error %.2e", dtypes, M, N, K,
                      Kp > K and (" (K stored as " .. Kp .. ")") or "", act_name and (" + " .. act_name) or "", mode, err))
  assert(err <= 1e-2, "matmul: result differs from the reference")

  if not mgpu.interpreting() then
    local ms = mgpu.bench(function() matmul:call_into(c, unpack(inputs)) end, { reps = reps })
    print(string.format("matmul: %.4f ms, %.1f TFLOP/s", ms, 2 * M * N * K / ms / 1e9))
  end
end

return check
