--[[
The command line, float64 references and timing of the attention scripts
(examples/attention.lua, attention_pipeline.lua, attention_bwd.lua load it
with dofile).  References use the inputs as rounded to their dtype and
compare by ||out - ref|| / ||ref|| for sampled (batch, head) pairs.
]]
local mgpu = require "mgpu"
local Hs = mgpu.host
local LOG2E = 1.4426950408889634

local M = {}

--- The command line [B] [S] [H] [D] [causal] [dtype] [key=value ...]:
--- returns the problem { B, S, H, Hkv, D, dtype, reps } and the kernel's cfg.
function M.parse(args)
  local pos, cfg = mgpu.script_args((table.unpack or unpack)(args))
  local small = mgpu.interpreting()
  local pb = {
    B = tonumber(pos[1]) or (small and 1 or 2), S = tonumber(pos[2]) or (small and 256 or 4096),
    H = tonumber(pos[3]) or (small and 2 or 16), D = tonumber(pos[4]) or (small and 64 or 128),
    dtype = pos[6] or "bf16", reps = cfg.reps or 20,
  }
  pb.Hkv = cfg.hkv or pb.H
  cfg.reps, cfg.hkv = nil, nil
  cfg.causal = pos[5] == "causal" or pos[5] == "1" or pos[5] == "true"
  for _, k in ipairs({ "lse", "approx", "overlap" }) do
    if cfg[k] ~= nil then cfg[k] = cfg[k] ~= 0 and cfg[k] ~= "0" and cfg[k] ~= "false" end
  end
  cfg.approx_math, cfg.approx = cfg.approx, nil
  return pb, cfg
end

--- A title for the problem: "bf16 B=1 S=256 H=2/1 D=64 causal".
function M.title(pb, cfg)
  return string.format("%s B=%d S=%d H=%d%s D=%d%s", pb.dtype, pb.B, pb.S, pb.H, pb.Hkv ~= pb.H and "/" .. pb.Hkv or "",
                       pb.D, cfg.causal and " causal" or "")
end

--- x[bb, :, hh, :] of a (B, S, H, D) array as a host (S, D), or (D, S) transposed.
function M.head(x, bb, hh, transposed)
  local S, D = x.shape[2], x.shape[4]
  return Hs.from(mgpu.kernel{
    name = "head", grid = { S },
    out_shape = mgpu.shape(transposed and { D, S } or { S, D }, x.dtype),
    body = function(src, dst)
      local r = mgpu.program_id(0)
      local row = src:at(bb, r, hh, mgpu.all):load()
      if transposed then dst:at(mgpu.all, r):store(row) else dst:at(r, mgpu.all):store(row) end
    end,
  }(x))
end

--- A host (n, S) additive mask for query rows [r0, r0 + n): -1e30 after the diagonal (causal), else 0.
function M.causal_mask(r0, n, S)
  local t = {}
  for i = 0, n - 1 do
    for j = 0, S - 1 do t[i * S + j + 1] = j <= r0 + i and 0 or -1e30 end
  end
  return Hs.from_table(t, { n, S })
end

--- softmax(scale q k^T) of query rows [r0, r0 + n) in float64, with the
--- natural-log row max and sum: p (n, S), max (n, 1), sum (n, 1).
function M.probs(qh, kt, r0, n, scale, causal)
  local sc = Hs.matmul(qh:rows(r0, n), kt) * scale
  if causal then sc = sc + M.causal_mask(r0, n, kt.shape[2]) end
  local mx = sc:amax(1, true)
  local e = (sc - mx):exp()
  local sum = e:sum(1, true)
  return e / sum, mx, sum
end

--- ||a - b|| / ||b|| of two Lua lists.
function M.relerr_list(a, b)
  local num, den = 0, 0
  for i = 1, #b do num, den = num + (a[i] - b[i]) ^ 2, den + b[i] ^ 2 end
  return math.sqrt(num / den)
end

--- The sampled (batch, head) pairs: the first and the last.
function M.samples(pb) return { { 0, 0 }, { pb.B - 1, pb.H - 1 } } end

--- Times fn twice and prints one line: in batches of 10 back-to-back
--- launches (mgpu.bench), and one launch after an L2 flush (as
--- triton.testing.do_bench times the anchors).
function M.report(name, fn, flops, reps)
  local ms = mgpu.bench(fn, { reps = reps })
  local ms1 = mgpu.bench(fn, { reps = reps, inner = 1, before = require("mgpu.bench").l2_flush() })
  print(string.format("%s: %.4f ms, %.1f TFLOP/s (one launch after an L2 flush, as do_bench: %.4f ms, %.1f TFLOP/s)",
                      name, ms, flops / ms / 1e9, ms1, flops / ms1 / 1e9))
end

--- The forward script: run lib.build(cfg) on fresh random inputs, check O
--- (and the log-sum-exp) against float64, time it on a GPU.
function M.forward_script(lib, args, name)
  local pb, cfg = M.parse(args)
  local attn = lib.build(cfg)
  local B, S, H, Hkv, D = pb.B, pb.S, pb.H, pb.Hkv, pb.D
  local q = mgpu.random.normal({ B, S, H, D }, pb.dtype)
  local k = mgpu.random.normal({ B, S, Hkv, D }, pb.dtype)
  local v = mgpu.random.normal({ B, S, Hkv, D }, pb.dtype)
  local o, lse = attn(q, k, v)
  if mgpu.compile_only() then   -- --emit-ptx: the other variant too, so that ptxas checks both
    cfg.causal = not cfg.causal
    lib.build(cfg)(q, k, v)
    return
  end
  -- float64 reference for the sampled heads, at three bands of query rows (every row when small)
  local scale = cfg.scale or 1 / math.sqrt(D)
  local band = math.min(S, mgpu.interpreting() and S or 64)
  local err, lerr = 0, 0
  local lse_rows = lse and Hs.from(lse:reshape({ B * H, S }))
  for _, bh in ipairs(M.samples(pb)) do
    local hk = math.floor(bh[2] / (H / Hkv))
    local qh, kt, vh, oh = M.head(q, bh[1], bh[2]), M.head(k, bh[1], hk, true), M.head(v, bh[1], hk), M.head(o, bh[1], bh[2])
    for _, r0 in ipairs(band == S and { 0 } or { 0, math.floor(S / 2 - band / 2), S - band }) do
      local p, mx, sum = M.probs(qh, kt, r0, band, scale, cfg.causal)
      err = math.max(err, Hs.relerr(oh:rows(r0, band), Hs.matmul(p, vh)))
      if lse then
        local ref = ((mx + sum:log()) * LOG2E):to_table()
        local got = lse_rows:rows(bh[1] * H + bh[2], 1):to_table()
        lerr = math.max(lerr, M.relerr_list({ (table.unpack or unpack)(got, r0 + 1, r0 + band) }, ref))
      end
    end
  end
  local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
  print(string.format("%s %s (%s): relative error %.2e%s", name, M.title(pb, cfg), mode, err,
                      lse and string.format(", lse %.2e", lerr) or ""))
  assert(err <= 2e-2, name .. ": the output differs from the reference")
  assert(lerr <= 1e-4, name .. ": the log-sum-exp differs from the reference")
  if not mgpu.interpreting() then
    M.report(name, function() attn.call_into(o, q, k, v, lse) end, 4 * B * H * S * S * D / (cfg.causal and 2 or 1), pb.reps)
  end
end

--- The backward script: the forward (fwd_lib, with lse) and bwd_lib's
--- backward on fresh random inputs and dO into NaN-filled outputs; dQ, dK
--- and dV checked against float64 for the first and last (batch, kv head)
--- and every q head of their groups; timed on a GPU.  Without a `fused`,
--- `bq`, `variants` or fused kernel's key (bwd_lib.fused_only) a GPU (or
--- --emit-ptx) runs both backward paths
--- (and with head_dim 64 the fused one with bq = 128 too), the interpreter
--- the default one.  variants=A/B/... runs each fused configuration A, B,
--- ... (keys as key=value separated by commas over the command line's, or
--- "-" for none) against one reference; one that fails is reported and
--- the others run.  With `profile` the fused kernel runs twice (the second
--- launch's trace is the steady one) and is not timed.
function M.backward_script(bwd_lib, fwd_lib, args)
  local pb, cfg = M.parse(args)
  if cfg.lse ~= nil then error("attention_bwd: lse is always computed (by the forward)", 0) end
  local B, S, H, Hkv, D = pb.B, pb.S, pb.H, pb.Hkv, pb.D
  local fcfg = { lse = true }
  local fwd_keys = { causal = true, scale = true, approx_math = true }
  for key, val in pairs(cfg) do if fwd_keys[key] then fcfg[key] = val end end
  local attn = fwd_lib.build(fcfg)
  local q = mgpu.random.normal({ B, S, H, D }, pb.dtype)
  local k = mgpu.random.normal({ B, S, Hkv, D }, pb.dtype)
  local v = mgpu.random.normal({ B, S, Hkv, D }, pb.dtype)
  local dout = mgpu.random.normal({ B, S, H, D }, pb.dtype)
  local o, lse = attn(q, k, v)
  local variants = { { fused = cfg.fused == nil and true or cfg.fused, bq = cfg.bq } }
  if cfg.variants then
    variants = {}
    for spec in (tostring(cfg.variants):gsub("%s+", "")):gmatch("[^/]+") do
      local var = { name = "attention_bwd fused " .. spec }
      for kv in spec:gmatch("[^,]+") do
        local key, val = kv:match("^([%w_]+)=(.+)$")
        if key then var[key] = tonumber(val) or val
        elseif kv ~= "-" then error("attention_bwd: variants: '" .. kv .. "' is not key=value", 0) end
      end
      variants[#variants + 1] = var
    end
  elseif cfg.fused == nil and cfg.bq == nil and not mgpu.interpreting() then
    local fused_keys = false
    for key in pairs(cfg) do fused_keys = fused_keys or bwd_lib.fused_only(key) end
    if not fused_keys then
      variants = { { fused = true }, { fused = false } }
      if D == 64 then variants[3] = { fused = true, bq = 128 } end
    end
  end
  local batch = cfg.variants ~= nil
  cfg.variants = nil
  local x, ref, failed = { q = q, k = k, v = v, dout = dout, o = o, lse = lse }, {}, 0
  for _, var in ipairs(variants) do
    local vcfg = {}
    for key, val in pairs(cfg) do vcfg[key] = val end
    for key, val in pairs(var) do if key ~= "name" then vcfg[key] = val end end
    local name = var.name
    if not name then
      name = (var.fused == true or var.fused == 1) and "attention_bwd fused" or "attention_bwd three kernels"
      if var.bq then name = name .. " bq=" .. tostring(var.bq) end
    end
    if batch then   -- a failing configuration is reported, and the others still run
      local ok, err = pcall(M.backward_check, bwd_lib, fwd_lib, pb, vcfg, fcfg, name, x, ref)
      if not ok then
        failed = failed + 1
        print(string.format("%s: FAILED: %s", name, tostring(err)))
      end
    else
      M.backward_check(bwd_lib, fwd_lib, pb, vcfg, fcfg, name, x, ref)
    end
  end
  if failed > 0 then error(string.format("attention_bwd: %d of %d variants failed", failed, #variants), 0) end
end

-- The float64 dQ (per q head), dK^T and dV^T of the first and last (batch, kv head) of x.
local function backward_reference(pb, cfg, x)
  local S, H, Hkv, D = pb.S, pb.H, pb.Hkv, pb.D
  local scale = cfg.scale or 1 / math.sqrt(D)
  local group, refs = H / Hkv, {}
  for _, bk in ipairs({ { 0, 0 }, { pb.B - 1, Hkv - 1 } }) do
    local bb, hk = bk[1], bk[2]
    local kh, kt, vh, vt = M.head(x.k, bb, hk), M.head(x.k, bb, hk, true), M.head(x.v, bb, hk), M.head(x.v, bb, hk, true)
    local r = { bb = bb, hk = hk, dq = {} }
    for h = hk * group, hk * group + group - 1 do
      local p = M.probs(M.head(x.q, bb, h), kt, 0, S, scale, cfg.causal)
      local doh = M.head(x.dout, bb, h)
      local delta = (doh * Hs.matmul(p, vh)):sum(1, true)
      local ds = p * (Hs.matmul(doh, vt) - delta)
      r.dq[h] = Hs.matmul(ds, kh) * scale
      local dk_h, dv_h = Hs.matmul(M.head(x.q, bb, h, true), ds) * scale, Hs.matmul(M.head(x.dout, bb, h, true), p)
      r.dkt, r.dvt = r.dkt and r.dkt + dk_h or dk_h, r.dvt and r.dvt + dv_h or dv_h
    end
    refs[#refs + 1] = r
  end
  return refs
end

--- One backward path of backward_script (cfg.fused) on its inputs x;
--- ref (a table) keeps the float64 reference for the next paths.
function M.backward_check(bwd_lib, fwd_lib, pb, cfg, fcfg, name, x, ref)
  local B, S, H, D = pb.B, pb.S, pb.H, pb.D
  local q, k, v, dout, o, lse = x.q, x.k, x.v, x.dout, x.o, x.lse
  local bwd = bwd_lib.build(cfg)
  local dq, dk, dv = mgpu.full(q.shape, 0 / 0, q.dtype), mgpu.full(k.shape, 0 / 0, k.dtype), mgpu.full(v.shape, 0 / 0, v.dtype)
  bwd.call_into(dq, dk, dv, q, k, v, o, lse, dout)
  if mgpu.compile_only() then   -- --emit-ptx: the other variant too, so that ptxas checks both
    local ccfg, cfcfg = {}, {}
    for key, val in pairs(cfg) do ccfg[key] = val end
    for key, val in pairs(fcfg) do cfcfg[key] = val end
    ccfg.causal, cfcfg.causal = not cfg.causal, not cfg.causal
    local o2, lse2 = fwd_lib.build(cfcfg)(q, k, v)
    bwd_lib.build(ccfg)(q, k, v, o2, lse2, dout)
    return
  end
  if cfg.profile then bwd.call_into(dq, dk, dv, q, k, v, o, lse, dout) end
  ref.heads = ref.heads or backward_reference(pb, cfg, x)
  local eq, ek, ev = 0, 0, 0
  for _, r in ipairs(ref.heads) do
    for h, dq_ref in pairs(r.dq) do eq = math.max(eq, Hs.relerr(M.head(dq, r.bb, h), dq_ref)) end
    ek = math.max(ek, Hs.relerr(M.head(dk, r.bb, r.hk, true), r.dkt))
    ev = math.max(ev, Hs.relerr(M.head(dv, r.bb, r.hk, true), r.dvt))
  end
  local mode = mgpu.interpreting() and "interpreted" or mgpu.device().name
  print(string.format("%s %s (%s): relative error dq %.2e dk %.2e dv %.2e", name, M.title(pb, cfg), mode, eq, ek, ev))
  assert(math.max(eq, ek, ev) <= 2e-2, name .. ": a gradient differs from the reference")
  if cfg.profile then
    print(string.format("%s: profile %s", name, require("mgpu.profile").last.path))
  elseif not mgpu.interpreting() then
    M.report(name, function() bwd.call_into(dq, dk, dv, q, k, v, o, lse, dout) end,
             10 * B * H * S * S * D / (cfg.causal and 2 or 1), pb.reps)
  end
end

return M
