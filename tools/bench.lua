--[[
tools/bench.lua -- examples/matmul.lua against cuBLAS in the same process:

  mgpu tools/bench.lua [MxNxK ... | sweep | sweep=M,M...] [dtype=bf16|f16|f8e4m3|f8e5m2] [b_dtype=f8e4m3|f8e5m2] [reps=30]
                       [inner=10] [warmup=10] [key=value ...] [also=key=value,key=value ...]

For each shape (default 4096x4096x4096 4096x8192x4096 8192x8192x8192;
`sweep`: the 125 shapes with M, N, K in {512, 1024, 2048, 4096, 8192};
`sweep=512,1024`: those with M among the sizes given, for splitting a sweep):
builds our kernel with loadfile("examples/matmul.lua")("--lib").build(cfg)
(other key=value arguments are its configuration: tile_m tile_n tile_k depth
snake wg_dim cluster delay nobar), allocates enough sets of random normal
inputs that they exceed twice the L2 cache together (at least 2), checks that
our result agrees with cuBLAS's (cublasLt, same inputs, same row-major
layouts, f32 accumulation) on the first and last 64 rows, and times both
with CUDA events: `warmup` calls, then the median over `reps` batches of
`inner` back-to-back calls (so the host's launch latency is not timed), every
call on the next input set.  The batches of every kernel and of cuBLAS take
turns (mgpu.bench.compare), so clock and temperature drift weigh on all of
them alike.  Each `also=` adds a configuration (the key=value options with
these changed) timed in the same rotation and printed on a line of its own
under its shape.  Prints one line per shape; ratio is our TFLOP/s over
cuBLAS's (above 1: faster than cuBLAS); over several shapes, a last line per
configuration gives the geometric mean ratio, the lowest and the number of
shapes below 0.9.  Exits 1 when a shape fails, and when there is no GPU.

FP8 (dtype=f8e4m3 or f8e5m2, b_dtype for a B of the other kind): B is
made as (N, K), the kernel and cuBLAS get the same random per-tensor
scales, and cuBLAS is cublasLt's FP8 matmul with bf16 D, A and B scale
pointers and fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1: the
sum stays in the tensor cores' FP8 accumulator over all of K, never
promoted to a separate f32 sum, as our wgmma accumulator keeps it).
cublasLt has no e5m2 x e5m2 kernel: there ours is checked against the
float64 product on 8 rows and timed without a ratio.
K must be a multiple of 16 (16-byte rows).  tools/bench runs it with the torch and Pallas
anchors (bench/anchors.py) in the same command.
]]
local mgpu = require "mgpu"
local bench = require "mgpu.bench"
local H = mgpu.host

local root = (arg and arg[0] or ""):match("^(.*)tools/bench%.lua$") or ""

local function usage(msg)
  io.stderr:write("bench: " .. msg .. "\nusage: mgpu tools/bench.lua [MxNxK ... | sweep | sweep=M,...] [dtype=bf16|f16|f8e4m3|f8e5m2] "
                  .. "[b_dtype=f8e4m3|f8e5m2] [reps=30] [inner=10] [warmup=10] [matmul option=value ...]\n")
  os.exit(2)
end

-- -- Arguments --------------------------------------------------------------------------

local matmul_lib = assert(loadfile(root .. "examples/matmul.lua"))("--lib")
local shapes, cfg, also = {}, {}, {}
local SWEEP = { 512, 1024, 2048, 4096, 8192 }   -- `sweep`: every M, N, K among these (125 shapes)
local opts = { dtype = "bf16", b_dtype = false, reps = 30, inner = 10, warmup = 10 }
local function matmul_option(key, v, into)
  if matmul_lib.defaults[key] == nil or opts[key] ~= nil then usage("unknown option '" .. key .. "'") end
  into[key] = tonumber(v) or v
end
for _, a in ipairs({ ... }) do
  local m, n, k = a:match("^(%d+)[xX](%d+)[xX](%d+)$")
  local key, v = a:match("^([%w_]+)=(.+)$")
  if a == "sweep" then a, key, v = "sweep=" .. table.concat(SWEEP, ","), "sweep", table.concat(SWEEP, ",") end
  if m then
    shapes[#shapes + 1] = { tonumber(m), tonumber(n), tonumber(k) }
  elseif key == "sweep" then   -- M in the list given, N and K in SWEEP
    for ms in v:gmatch("[^,]+") do
      local mm = tonumber(ms)
      if not mm or mm < 1 or mm ~= math.floor(mm) then usage("sweep= takes sizes of M separated by commas, got '" .. v .. "'") end
      for _, nn in ipairs(SWEEP) do for _, kk in ipairs(SWEEP) do shapes[#shapes + 1] = { mm, nn, kk } end end
    end
  elseif key == "also" then
    local variant = { label = v, cfg = {} }
    for item in v:gmatch("[^,]+") do
      local k2, v2 = item:match("^([%w_]+)=(.+)$")
      if not k2 then usage("also= takes key=value pairs separated by commas, got '" .. v .. "'") end
      matmul_option(k2, v2, variant.cfg)
    end
    also[#also + 1] = variant
  elseif key and opts[key] ~= nil then
    opts[key] = key:match("dtype$") and v or tonumber(v) or usage(key .. " must be a number, got '" .. v .. "'")
  elseif key then
    matmul_option(key, v, cfg)
  else
    usage("'" .. a .. "' is neither a shape MxNxK nor key=value")
  end
end
local dtypes = { bf16 = true, f16 = true, f8e4m3 = true, f8e5m2 = true }
if not dtypes[opts.dtype] then usage("dtype must be bf16, f16, f8e4m3 or f8e5m2, got '" .. opts.dtype .. "'") end
local ok_ops, ops = pcall(matmul_lib.operands, { dtype = opts.dtype, b_dtype = opts.b_dtype })
if not ok_ops then usage(tostring(ops):gsub("^.-: ", "")) end
-- the dtype column: bf16, f8e4m3, or f8e4m3xe5m2 for mixed FP8
local dtype_label = ops.a == ops.b and ops.a or (ops.a .. "x" .. ops.b:gsub("^f8", ""))
for _, key in ipairs({ "reps", "inner" }) do
  if opts[key] < 1 or opts[key] ~= math.floor(opts[key]) then usage(key .. " must be a positive integer") end
end
if #shapes == 0 then shapes = { { 4096, 4096, 4096 }, { 4096, 8192, 4096 }, { 8192, 8192, 8192 } } end

local dev = mgpu.device()
if dev.mode ~= "gpu" then
  local why = dev.mode == "compile" and "kernels are only compiled (--emit-ptx)"
           or (dev.reason ~= "" and dev.reason or "interpret mode was requested")
  io.stderr:write("bench: tools/bench.lua needs a GPU (it times kernels and cuBLAS on the device): " .. why .. "\n")
  os.exit(1)
end

-- -- One shape --------------------------------------------------------------------------

local l2 = dev.l2_bytes > 0 and dev.l2_bytes or 50 * 1000 * 1000
local esize = ops.bits / 8

local function tflops(M, N, K, ms) return 2 * M * N * K / ms / 1e9 end

--- Relative Frobenius error of x against ref on the first and last `band` rows.
local function band_err(x, ref, M)
  local band = math.min(M, 64)
  local err = 0
  for _, r0 in ipairs({ 0, M - band }) do
    err = math.max(err, H.relerr(H.from(x:rows(r0, band)), H.from(ref:rows(r0, band))))
  end
  return err
end

-- The configuration cfg with `changes`, for an M x N x K problem (the tile width, where not
-- given, chosen by the shape as examples/matmul.lua does).
local function config(changes, M, N, K)
  local c = { dtype = opts.dtype, b_dtype = opts.b_dtype }
  for key, v in pairs(cfg) do c[key] = v end
  for key, v in pairs(changes) do c[key] = v end
  return matmul_lib.for_shape(M, N, K, c)
end

local function run_shape(M, N, K)
  if ops.f8 and K % 16 ~= 0 then error(string.format("with FP8, K must be a multiple of 16 (16-byte rows), got %d", K), 0) end
  local c = config({}, M, N, K)
  local kernel = matmul_lib.build(c)

  -- enough input sets that together they exceed twice the L2 cache
  local set_bytes = (M * K + K * N) * esize
  local sets = math.max(2, math.floor(2 * l2 / set_bytes) + 1)
  -- (one random set; the others are device copies of it, as distinct in memory and made in
  -- microseconds where random fills on the host take seconds per shape)
  local A, B = {}, {}
  for i = 1, sets do
    A[i] = i > 1 and A[1]:copy() or mgpu.random.normal({ M, K }, ops.a)
    B[i] = i > 1 and B[1]:copy() or mgpu.random.normal(ops.f8 and { N, K } or { K, N }, ops.b)
  end
  -- FP8: per-tensor scales, the same for our kernel and cuBLAS
  local sa = ops.f8 and mgpu.random.uniform({}, "f32", nil, 0.5, 2) or nil
  local sb = ops.f8 and mgpu.random.uniform({}, "f32", nil, 0.5, 2) or nil
  -- our kernel's inputs for set s: A, B (FP8: the scales), then (sched=dynamic) the work counter
  local function inputs(s, counter)
    if ops.f8 then return A[s], B[s], sa, sb, counter end
    return A[s], B[s], counter
  end
  local c_ours = mgpu.empty({ M, N }, ops.out)
  -- sched=dynamic: the kernel's last input is its work counter (zero, left zero by every launch)
  local counter = c.sched == "dynamic" and mgpu.zeros({ 2 }, "i32") or nil
  local c_blas = mgpu.empty({ M, N }, ops.out)

  -- the float64 product on the first `band` rows of input set 1 (FP8: of the f8 values, scaled)
  local band = math.min(M, 8)
  local function reference()
    local ref = H.matmul(H.from(A[1]:rows(0, band)), ops.f8 and H.from(B[1]):transpose() or H.from(B[1]))
    if ops.f8 then ref = ref * H.from(sa) * H.from(sb) end
    return ref
  end
  local function ref_err(out, ref) return H.relerr(H.from(out:rows(0, band)), ref) end

  -- agreement on the first input set (a float64 reference only names the culprit when they differ);
  -- cublasLt has no e5m2 x e5m2 kernel: there the float64 product is the yardstick, with no ratio
  kernel:call_into(c_ours, inputs(1, counter))
  local row = { shape = string.format("%dx%dx%d", M, N, K), sets = sets }
  local no_blas = ops.a == "f8e5m2" and ops.b == "f8e5m2"
  local blas_ok, blas_err, ref64 = false, nil, nil
  if not no_blas then blas_ok, blas_err = pcall(bench.cublas_matmul, A[1], B[1], c_blas, sa, sb) end
  mgpu.sync()
  if blas_ok then
    row.err = band_err(c_ours, c_blas, M)
    if not (row.err <= 1e-2) then
      local ref = reference()
      row.note = string.format("rows 0-%d vs float64: mgpu %.2e, cuBLAS %.2e", band - 1, ref_err(c_ours, ref),
                               ref_err(c_blas, ref))
    end
  elseif no_blas then
    ref64 = reference()
    row.err = ref_err(c_ours, ref64)
    row.note = string.format("no cuBLAS: cublasLt has no f8e5m2 x f8e5m2 matmul; rel.err against float64 on rows 0-%d",
                             band - 1)
  else
    row.note = tostring(blas_err)
  end

  -- every configuration and cuBLAS, each on the input sets in turn, their batches interleaved
  local fns, i = {}, {}
  local function timed(call)
    local j = #fns + 1
    i[j] = 0
    fns[j] = function()
      i[j] = i[j] % sets + 1
      call(i[j])
    end
  end
  timed(function(s) kernel:call_into(c_ours, inputs(s, counter)) end)
  row.also = {}
  for _, variant in ipairs(also) do   -- a configuration that fails (too much SMEM, say) is reported and skipped
    local v = { label = variant.label }
    row.also[#row.also + 1] = v
    local vc = config(variant.cfg, M, N, K)
    local vcounter = vc.sched == "dynamic" and mgpu.zeros({ 2 }, "i32") or nil
    local out = mgpu.empty({ M, N }, ops.out)
    local ok, vk = pcall(function()
      local kern = matmul_lib.build(vc)
      kern:call_into(out, inputs(1, vcounter))
      return kern
    end)
    if ok then
      v.err = blas_ok and band_err(out, c_blas, M) or (ref64 and ref_err(out, ref64))
      v.fn = #fns + 1
      timed(function(s) vk:call_into(out, inputs(s, vcounter)) end)
    else
      v.failed = tostring(vk)
    end
  end
  if blas_ok then timed(function(s) bench.cublas_matmul(A[s], B[s], c_blas, sa, sb) end) end
  local ms = bench.compare(fns, { warmup = opts.warmup, reps = opts.reps, inner = opts.inner })
  row.ours = ms[1]
  for _, v in ipairs(row.also) do v.ms = v.fn and ms[v.fn] end
  row.blas = blas_ok and ms[#ms] or nil
  row.ok = (blas_ok or no_blas) and row.err <= 1e-2
  for _, v in ipairs(row.also) do row.ok = row.ok and (v.failed ~= nil or v.err <= 1e-2) end
  return row
end

-- -- All shapes -------------------------------------------------------------------------

print(string.format("bench: %s, %d SMs, L2 %.1f MB; %s; median of %d batches of %d calls after %d warm-up calls; "
                    .. "ratio = mgpu TFLOP/s / cuBLAS TFLOP/s", dev.name, dev.sm_count, l2 / 1e6,
                    ops.f8 and (dtype_label .. " (bf16 out, per-tensor scales, fast accumulation)") or dtype_label, opts.reps,
                    opts.inner, opts.warmup))
local dw = math.max(5, #dtype_label)   -- (the dtype column's width)
local fmt = "%-16s %-" .. dw .. "s %10s %9s %10s %9s %7s %9s %5s"
print(string.format(fmt, "M x N x K", "dtype", "mgpu ms", "TFLOP/s", "cuBLAS ms", "TFLOP/s", "ratio", "rel.err", "sets"))
local failed = 0
local ratios = { {} }   -- per configuration (ours, then each also=): { shape, ratio } of the timed shapes
for i = 1, #also do ratios[i + 1] = {} end
for _, s in ipairs(shapes) do
  local M, N, K = s[1], s[2], s[3]
  local ok, row = pcall(run_shape, M, N, K)
  if not ok then
    failed = failed + 1
    print(string.format("%-16s %-" .. dw .. "s FAILED: %s", string.format("%dx%dx%d", M, N, K), dtype_label, tostring(row)))
  else
    if not row.ok then failed = failed + 1 end
    local function num(f, x) return x and string.format(f, x) or "-" end
    print(string.format(fmt, row.shape, dtype_label, num("%.4f", row.ours), num("%.1f", tflops(M, N, K, row.ours)),
                        num("%.4f", row.blas), num("%.1f", row.blas and tflops(M, N, K, row.blas)),
                        num("%.3f", row.blas and row.blas / row.ours), num("%.2e", row.err), tostring(row.sets)))
    if row.blas and row.ours then table.insert(ratios[1], { shape = row.shape, ratio = row.blas / row.ours }) end
    for i, v in ipairs(row.also) do
      if row.blas and v.ms then table.insert(ratios[i + 1], { shape = row.shape, ratio = row.blas / v.ms }) end
    end
    for _, v in ipairs(row.also) do
      if v.failed then print("+ " .. v.label .. ": not timed: " .. v.failed:gsub("\n.*", ""))
      else
        print(string.format(fmt, "+ " .. v.label, "", num("%.4f", v.ms), num("%.1f", tflops(M, N, K, v.ms)), "", "",
                            num("%.3f", row.blas and row.blas / v.ms), num("%.2e", v.err), ""))
      end
    end
    if row.note then print("  " .. row.note) end
    local yardstick = row.blas and "cuBLAS" or "float64"
    if row.err and not (row.err <= 1e-2) then print("  FAILED: mgpu and " .. yardstick .. " disagree (relative error above 1e-2)") end
    for _, v in ipairs(row.also) do
      if v.err and not (v.err <= 1e-2) then print("  FAILED: " .. v.label .. " and " .. yardstick .. " disagree") end
    end
  end
  collectgarbage()   -- this shape's device arrays go before the next one's are made
end
-- over several shapes: each configuration's geometric mean ratio, its worst shape, and the shapes below 0.9
local function summary(label, list)
  if #list < 2 then return end
  local logsum, worst, below = 0, list[1], 0
  for _, r in ipairs(list) do
    logsum = logsum + math.log(r.ratio)
    if r.ratio < worst.ratio then worst = r end
    if r.ratio < 0.9 then below = below + 1 end
  end
  print(string.format("%s over %d shapes: geometric mean ratio %.3f, lowest %.3f (%s), %d below 0.9", label, #list,
                      math.exp(logsum / #list), worst.ratio, worst.shape, below))
end
summary("mgpu", ratios[1])
for i, v in ipairs(also) do summary("+ " .. v.label, ratios[i + 1]) end
if failed > 0 then
  io.stderr:write(string.format("bench: %d of %d shape(s) failed\n", failed, #shapes))
  os.exit(1)
end
