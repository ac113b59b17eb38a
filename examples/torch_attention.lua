--[[
The forward of examples/attention.lua for Python (examples/torch_attention.py):
`attention` builds, for the arguments' shapes, the kernel that takes
(batch, seq, heads * head_dim) views of q, k and v (torch's contiguous
(batch, seq, heads, head_dim) tensors viewed without copies) and gives o the
same way, plus the (batch * heads, seq) f32 log-sum-exp with lse=1.

  mgpu.as_torch_kernel("examples/torch_attention.lua", "attention", heads=16, causal=True)
  options: heads (query heads, required), kv_heads (default heads), causal, lse,
           approx_math (0|1), and attention.lua's block_kv, wgs, depth, pingpong, overlap
]]
local mgpu = require "mgpu"
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local _, opt = mgpu.script_args(...)
local H = opt.heads or error("torch_attention.lua: heads=N (the query heads) is required")
local Hkv = opt.kv_heads or H
local cfg = {}
for k, v in pairs(opt) do
  if k == "causal" or k == "lse" or k == "approx_math" or k == "overlap" then cfg[k] = v ~= 0
  elseif k ~= "heads" and k ~= "kv_heads" then cfg[k] = v end
end
local attn = loadfile(here .. "attention.lua")("--lib").build(cfg)

function attention(q, k, v)
  local function heads(x, h)
    return mgpu.abstract({ x.shape[1], x.shape[2], h, math.floor(x.shape[3] / h) }, x.dtype)
  end
  return attn.kernel(heads(q, H), heads(k, Hkv), heads(v, Hkv))
end
