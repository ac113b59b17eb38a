-- JAX's FlashAttentionTestCase (tests/pallas/mgpu_attention_test.py), which tests Pallas'
-- attention_mgpu op, run against mgpu's counterparts: examples/attention.lua (attention),
-- attention_pipeline.lua (attention_with_pipeline_emitter) and attention_bwd.lua (the
-- gradients JAX takes with jax.grad), on one batch of 128 queries and keys (64 for the
-- gradients) instead of 4096 and a named subset of each parameter product (README).
-- References in float64 on the host.
local C = dofile("spec/conformance/support/conf.lua")
local mgpu = C.mgpu
local Hs = mgpu.host
local check = dofile("examples/attention_check.lua")
local cls = C.class("FlashAttentionTestCase", function(name, ...) return _ENV[name](...) end, { semantics = "Warpgroup" })
local impls = { attention = loadfile("examples/attention.lua")("--lib"),
                attention_with_pipeline_emitter = loadfile("examples/attention_pipeline.lua")("--lib") }
local LOG2E = 1.4426950408889634

-- x[b, :, h, :] of a (B, S, H, D) array as a host (S, D), or (D, S) transposed (as
-- attention_check.head, read on the host instead of by a kernel).
local flats = setmetatable({}, { __mode = "k" })
local function head(x, b, h, transposed)
  local _, S, H, D = table.unpack(x.shape)
  flats[x] = flats[x] or x:to_table()
  local t, o = flats[x], {}
  for s = 0, S - 1 do
    for d = 0, D - 1 do
      o[transposed and (d * S + s + 1) or (s * D + d + 1)] = t[((b * S + s) * H + h) * D + d + 1]
    end
  end
  return Hs.from_table(o, transposed and { D, S } or { S, D })
end

describe("FlashAttentionTestCase", function()
  local fwd = {
    { B = 1, H = 4, Hkv = 1, D = 64, bkv = 64, impl = "attention", causal = true },
    { B = 1, H = 6, Hkv = 3, D = 64, bkv = 128, impl = "attention_with_pipeline_emitter", causal = false },
  }
  for _, p in ipairs(fwd) do
    cls.test(string.format("test_flash_attention(batch_size=%d, q_seq_len=128, kv_seq_len=128, num_q_and_kv_heads=(%d, %d), " ..
                           "head_dim=%d, blocks=(64, %d), attention_impl=%s, save_residuals=True, causal=%s)", p.B, p.H, p.Hkv,
                           p.D, p.bkv, p.impl, tostring(p.causal)), function()
      local S = 128
      local attn = impls[p.impl].build({ causal = p.causal, lse = true, block_kv = p.bkv })
      local q, k, v = C.normal({ p.B, S, p.H, p.D }, "f16"), C.normal({ p.B, S, p.Hkv, p.D }, "f16"), C.normal({ p.B, S, p.Hkv, p.D }, "f16")
      local o, lse = attn(q, k, v)
      local lse_rows = Hs.from(lse:reshape({ p.B * p.H, S }))
      for h = 0, p.H - 1 do
        local hk = math.floor(h / (p.H / p.Hkv))
        local pr, mx, sum = check.probs(head(q, 0, h), head(k, 0, hk, true), 0, S, 1 / math.sqrt(p.D), p.causal)
        C.relerr(head(o, 0, h):to_table(), Hs.matmul(pr, head(v, 0, hk)):to_table(), 1e-2, "head " .. h .. " output")
        C.relerr(lse_rows:rows(h, 1):to_table(), ((mx + sum:log()) * LOG2E):to_table(), 1e-4, "head " .. h .. " log-sum-exp")
      end
    end)
  end

  cls.test("test_bwd_flash_attention(batch_size=1, seq_lens=(64, 64), num_q_and_kv_heads=(4, 1), " ..
           "bwd_blocks=(64, 64, 64, 64), head_dim=64)", function()
    local S, H, Hkv, D = 64, 4, 1, 64
    local attn = impls.attention.build({ lse = true })
    local bwd = loadfile("examples/attention_bwd.lua")("--lib").build({})
    local q, k, v = C.normal({ 1, S, H, D }, "f16"), C.normal({ 1, S, Hkv, D }, "f16"), C.normal({ 1, S, Hkv, D }, "f16")
    local dout = C.normal({ 1, S, H, D }, "f16")   -- the cotangent of o (jax.grad of o.sum() takes ones)
    local o, lse = attn(q, k, v)
    local dq, dk, dv = bwd(q, k, v, o, lse, dout)
    local scale = 1 / math.sqrt(D)
    local kh, kt, vh, vt = head(k, 0, 0), head(k, 0, 0, true), head(v, 0, 0), head(v, 0, 0, true)
    local dkt, dvt
    for h = 0, H - 1 do
      local pr = check.probs(head(q, 0, h), kt, 0, S, scale, false)
      local doh = head(dout, 0, h)
      local delta = (doh * Hs.matmul(pr, vh)):sum(1, true)
      local ds = pr * (Hs.matmul(doh, vt) - delta)
      C.relerr(head(dq, 0, h):to_table(), (Hs.matmul(ds, kh) * scale):to_table(), 2e-2, "dq head " .. h)
      local dk_h, dv_h = Hs.matmul(head(q, 0, h, true), ds) * scale, Hs.matmul(head(dout, 0, h, true), pr)
      dkt, dvt = dkt and dkt + dk_h or dk_h, dvt and dvt + dv_h or dv_h
    end
    C.relerr(head(dk, 0, 0, true):to_table(), dkt:to_table(), 2e-2, "dk")
    C.relerr(head(dv, 0, 0, true):to_table(), dvt:to_table(), 2e-2, "dv")
  end)
end)
