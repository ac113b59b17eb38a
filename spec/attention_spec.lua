-- The attention examples' mistakes (examples/attention.lua, attention_pipeline.lua,
-- attention_bwd.lua loaded with --lib) are errors at the caller's line naming
-- the argument; their numerics are the ctest entries example_attention*.
local mgpu = require "mgpu"

local err_of = dofile("spec/support/util.lua").err_of
local fwd = loadfile("examples/attention.lua")("--lib")
local pipe = loadfile("examples/attention_pipeline.lua")("--lib")
local bwd = loadfile("examples/attention_bwd.lua")("--lib")

local function line() return debug.getinfo(2, "l").currentline end
local function at(err, l) assert.matches("attention_spec.lua:" .. l .. ": ", err, 1, true) end

describe("attention examples", function()
  local q = mgpu.abstract({ 1, 128, 4, 64 }, "bf16")
  local kv = mgpu.abstract({ 1, 128, 2, 64 }, "bf16")

  it("refuse unknown and malformed options at the build call", function()
    local l = line(); local err = err_of(function() fwd.build{ block_q = 64 } end)
    at(err, l); assert.matches("attention: unknown option 'block_q'", err, 1, true)
    l = line(); err = err_of(function() pipe.build{ scale = -1 } end)
    at(err, l); assert.matches("attention_pipeline: scale must be a positive finite number, got -1", err, 1, true)
    assert.matches("depth must be an integer of at least 2, got 1", err_of(function() fwd.build{ depth = 1 } end), 1, true)
    assert.matches("lse must be a boolean", err_of(function() fwd.build{ lse = 1 } end), 1, true)
    assert.matches("attention: wgs (compute warpgroups) must be 2 or 3, got 4", err_of(function() fwd.build{ wgs = 4 } end), 1, true)
    for _, b in ipairs({ 48, 100, 272, "128" }) do
      assert.matches("attention: block_kv must be a multiple of 16 from 64 to 256, got " .. b,
                     err_of(function() fwd.build{ block_kv = b } end), 1, true)
    end
    assert.matches("attention_bwd: block_kv, pingpong, wgs, overlap and lse are forward options",
                   err_of(function() bwd.build{ lse = true } end), 1, true)
    l = line(); err = err_of(function() bwd.build{ fused = 2 } end)
    at(err, l); assert.matches("attention_bwd: fused must be a boolean, 0 or 1, got 2", err, 1, true)
    l = line(); err = err_of(function() bwd.build{ bq = 96 } end)
    at(err, l); assert.matches("attention_bwd: bq (query rows a step of the fused kernel) must be 64 or 128, got 96",
                               err, 1, true)
    assert.matches("attention_bwd: bq = 128 needs the fused kernel (the three kernels step 64 rows), got fused = 0",
                   err_of(function() bwd.build{ bq = 128, fused = 0 } end), 1, true)
    l = line(); err = err_of(function() bwd.build{ fold = 1 } end)
    at(err, l); assert.matches("attention_bwd: unknown option 'fold'", err, 1, true)
    assert.matches("attention_bwd: profile must be a directory name, got true",
                   err_of(function() bwd.build{ profile = true } end), 1, true)
    assert.matches("attention_bwd: profile needs the fused kernel, got fused = 0",
                   err_of(function() bwd.build{ profile = "/tmp", fused = 0 } end), 1, true)
  end)

  it("refuse shapes at the call, naming the array", function()
    local attn = fwd.build{}
    local l = line(); local err = err_of(function() attn(q, mgpu.abstract({ 1, 128, 3, 64 }, "bf16"), kv) end)
    at(err, l); assert.matches("v must be bf16[1,128,kv_heads,64] with k's kv_heads (q is bf16[1,128,4,64]), got bf16[1,128,2,64]", err, 1, true)
    err = err_of(function() attn(q, mgpu.abstract({ 1, 128, 3, 64 }, "bf16"), mgpu.abstract({ 1, 128, 3, 64 }, "bf16")) end)
    assert.matches("q's 4 heads must be a multiple of k and v's 3 heads", err, 1, true)
    local q96 = mgpu.abstract({ 1, 128, 4, 96 }, "bf16")
    err = err_of(function() attn(q96, q96, q96) end)
    assert.matches("head_dim must be 64 or 128 or 256, got 96", err, 1, true)
    err = err_of(function() attn(mgpu.abstract({ 1, 128, 4, 64 }, "f32"), kv, kv) end)
    assert.matches("q must be bf16 or f16, got f32", err, 1, true)
    local q2 = mgpu.abstract({ 1, 130, 2, 128 }, "bf16")
    err = err_of(function() attn(q2, q2, q2) end)
    assert.matches("seq = 130 must be a multiple of 8 with head_dim 128", err, 1, true)
  end)

  it("name the SMEM limit behind head_dim 256's block_kv", function()
    local q3 = mgpu.abstract({ 1, 128, 1, 256 }, "bf16")
    local l = line(); local err = err_of(function() fwd.build{ block_kv = 128 }(q3, q3, q3) end)
    at(err, l)
    assert.matches("head_dim 256 needs block_kv = 64 and depth = 2 (got 128 and 2): Q and the K and V slots take "
                   .. "320 KiB of SMEM, a block has 227 KiB", err, 1, true)
    l = line(); err = err_of(function() pipe.build{ wgs = 3 }(q3, q3, q3) end)
    at(err, l)
    assert.matches("attention_pipeline: head_dim 256 needs wgs = 2: O alone takes 128 of the 160 registers", err, 1, true)
  end)

  it("refuse overlap where it cannot work", function()
    local q4 = mgpu.abstract({ 1, 256, 2, 128 }, "bf16")
    local l = line(); local err = err_of(function() pipe.build{ overlap = true } end)
    at(err, l); assert.matches("attention_pipeline: overlap issues P V of a block during the next block's step", err, 1, true)
    l = line(); err = err_of(function() fwd.build{ overlap = true, block_kv = 192 }(q4, q4, q4) end)
    at(err, l)
    assert.matches("attention: overlap keeps S, the previous P and O in registers: 3 * block_kv / 4 + head_dim / 2 = 208 "
                   .. "of the 232 a thread has leaves too few for the softmax; use block_kv <= 176", err, 1, true)
    local q7 = mgpu.abstract({ 1, 256, 2, 64 }, "bf16")
    assert.matches("use block_kv <= 128", err_of(function() fwd.build{ overlap = true, wgs = 3, block_kv = 192 }(q7, q7, q7) end), 1, true)
    assert.matches("overlap must be a boolean, got 1", err_of(function() fwd.build{ overlap = 1 } end), 1, true)
  end)

  it("refuse blocks longer than the sequence", function()
    local q5 = mgpu.abstract({ 1, 100, 2, 64 }, "bf16")
    local l = line(); local err = err_of(function() pipe.build{ block_kv = 128 }(q5, q5, q5) end)
    at(err, l); assert.matches("attention_pipeline: block_kv = 128 is larger than seq = 100", err, 1, true)
    local q6 = mgpu.abstract({ 1, 40, 2, 64 }, "bf16")
    l = line(); err = err_of(function() fwd.build{}(q6, q6, q6) end)
    at(err, l); assert.matches("attention: seq = 40 must be at least 64", err, 1, true)
  end)

  it("name the SMEM a block_kv too large for head_dim 128 needs", function()
    local q4 = mgpu.abstract({ 1, 256, 1, 128 }, "bf16")
    local flat = mgpu.abstract({ 1, 256, 128 }, "bf16")
    local kern = fwd.build{ block_kv = 208, overlap = false }.kernel(q4, q4, q4)
    local err = err_of(function() kern:lower(flat, flat, flat) end)
    assert.matches("kernel 'attention' needs 246784 bytes of SMEM but a block may have 232448", err, 1, true)
  end)

  it("check the backward's o, lse and head_dim", function()
    local b = bwd.build{}
    local lse = mgpu.abstract({ 1, 4, 128 }, "f32")
    local l = line(); local err = err_of(function() b(q, kv, kv, q, mgpu.abstract({ 1, 4, 128 }, "bf16"), q) end)
    at(err, l); assert.matches("attention_bwd: lse must be f32[1,4,128] (the forward's, lse = true)", err, 1, true)
    err = err_of(function() b(q, kv, kv, kv, lse, q) end)
    assert.matches("attention_bwd: o must be an array like q, bf16[1,128,4,64]", err, 1, true)
    local q3 = mgpu.abstract({ 1, 128, 1, 256 }, "bf16")
    err = err_of(function() b(q3, q3, q3, q3, mgpu.abstract({ 1, 1, 128 }, "f32"), q3) end)
    assert.matches("attention_bwd: head_dim must be 64 or 128, got 256", err, 1, true)
    local b128 = bwd.build{ bq = 128 }
    local q2 = mgpu.abstract({ 1, 128, 1, 128 }, "bf16")
    l = line(); err = err_of(function() b128(q2, q2, q2, q2, mgpu.abstract({ 1, 1, 128 }, "f32"), q2) end)
    at(err, l); assert.matches("attention_bwd: bq = 128 needs head_dim 64, got 128", err, 1, true)
    local q1 = mgpu.abstract({ 1, 120, 1, 64 }, "bf16")
    err = err_of(function() b128(q1, q1, q1, q1, mgpu.abstract({ 1, 1, 120 }, "f32"), q1) end)
    assert.matches("attention_bwd: bq = 128 needs seq >= 128 (Q and dO move in boxes of bq rows), got seq = 120", err, 1, true)
    local q4 = mgpu.abstract({ 1, 256, 1, 64 }, "bf16")
    l = line(); err = err_of(function() bwd.build{ bq = 128, depth = 3 }(q4, q4, q4, q4, mgpu.abstract({ 1, 1, 256 }, "f32"), q4) end)
    at(err, l)
    assert.matches("attention_bwd: depth = 3 is too deep for the fused kernel with head_dim 64 and bq = 128: K, V, dS^T, "
                   .. "the dQ chunks and 3 slots of Q, dO, lse and delta take 227.0 KiB of SMEM, a block has 227 KiB", err, 1, true)
  end)

  -- dQ, dK and dV of a fused configuration and of the three kernels (causal, S rows, two q heads
  -- per kv head, head_dim 64, fresh inputs): their relative differences, as host arrays
  local function fused_vs_three(S, cfg)
    local qa, dout = mgpu.random.normal({ 1, S, 2, 64 }, "bf16"), mgpu.random.normal({ 1, S, 2, 64 }, "bf16")
    local ka, va = mgpu.random.normal({ 1, S, 1, 64 }, "bf16"), mgpu.random.normal({ 1, S, 1, 64 }, "bf16")
    local o, lse = fwd.build{ causal = true, lse = true }(qa, ka, va)
    cfg.causal = true
    local r1 = { bwd.build(cfg)(qa, ka, va, o, lse, dout) }
    local r0 = { bwd.build{ causal = true, fused = 0 }(qa, ka, va, o, lse, dout) }
    local Hs, diff = mgpu.host, {}
    for i = 1, 3 do diff[i] = Hs.relerr(Hs.from(r1[i]), Hs.from(r0[i])) end
    return diff
  end

  -- dQ's shares of two key blocks (ragged, seq not a multiple of 8, causal, two q heads per kv
  -- head) added into the accumulator: a share added twice, lost, or added to an unzeroed
  -- (poisoned) accumulator moves the fused dQ away from the three-kernel path's, which sums in
  -- a fixed order
  it("add each key block's dQ share once in the fused backward", function()
    local diff = fused_vs_three(201, {})
    assert.is_true(diff[1] < 1e-2)
    -- dK and dV: the same steps in both paths, but the fused kernel's exponent (S^T's accumulator
    -- started from -lse / (scale log2(e))) rounds otherwise: a few P in 16 bits differ
    assert.is_true(diff[2] < 1e-3)
    assert.is_true(diff[3] < 1e-3)
  end)

  -- 128-row query steps (ragged: the second step has 8 rows; causal: the second key block
  -- starts at it; two q heads per kv head): a step's rows, its diagonal or either
  -- warpgroup's 64 rows of dQ's share wrong moves dQ, dK or dV from the three kernels'
  it("match the three kernels with 128 query rows a fused step", function()
    for _, d in ipairs(fused_vs_three(136, { bq = 128 })) do assert.is_true(d < 1e-2) end
  end)
end)
