"""
Flash attention forward from torch: examples/attention.lua's kernel (through
examples/torch_attention.lua) on torch's (batch, seq, heads, head_dim) bf16
tensors, checked against a float32 reference and against
torch.nn.functional.scaled_dot_product_attention, then timed against SDPA's
cuDNN backend on the same tensors (CUDA events; TFLOP/s = 4 B H S^2 D, half
when causal).  Without a GPU: a small problem on CPU tensors in the
interpreter, checked only.

  python3 examples/torch_attention.py [B] [S] [H] [D] [causal] [kv_heads=N] [dtype=bfloat16|float16]
  (default 2 4096 16 128 on a GPU, 1 256 2 64 interpreted)
"""
import os
import sys

import torch
import torch.nn.functional as F

import mgpu

HERE = os.path.dirname(os.path.abspath(__file__))


def gpu_ms(fn, reps=20):
    """Median milliseconds of fn() on torch's current stream, from CUDA events."""
    fn()
    times = []
    for _ in range(5):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / reps)
    return sorted(times)[len(times) // 2]


def sdpa(q, k, v, causal):
    """SDPA on (B, S, H, D) tensors (its (B, H, S, D) views; grouped-query heads need torch >= 2.5)."""
    gqa = {"enable_gqa": True} if k.shape[2] != q.shape[2] else {}
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal,
                                       **gqa)
    return o.transpose(1, 2)


def relerr(out, ref):
    return ((out.float() - ref).norm() / ref.norm()).item()


def main():
    gpu = torch.cuda.is_available()
    pos = [a for a in sys.argv[1:] if "=" not in a]
    opt = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    B, S, H, D = [int(x) for x in pos[:4]] + ([2, 4096, 16, 128] if gpu else [1, 256, 2, 64])[len(pos[:4]):]
    causal = len(pos) > 4 and pos[4] in ("causal", "1", "true")
    Hkv = int(opt.get("kv_heads", H))
    dtype = getattr(torch, opt.get("dtype", "bfloat16"))
    attention = mgpu.as_torch_kernel(os.path.join(HERE, "torch_attention.lua"), "attention", heads=H, kv_heads=Hkv,
                                     causal=causal, interpret=not gpu)
    device = "cuda" if gpu else "cpu"
    gen = torch.Generator(device).manual_seed(0)
    q = torch.randn(B, S, H, D, device=device, generator=gen).to(dtype)
    k = torch.randn(B, S, Hkv, D, device=device, generator=gen).to(dtype)
    v = torch.randn(B, S, Hkv, D, device=device, generator=gen).to(dtype)

    def ours():   # (B, S, H * D) views in and out: no copies
        return attention(q.view(B, S, H * D), k.view(B, S, Hkv * D), v.view(B, S, Hkv * D)).view(B, S, H, D)

    o = ours()
    ref = sdpa(q.float(), k.float(), v.float(), causal)
    title = "%s B=%d S=%d H=%d%s D=%d%s" % (str(dtype).replace("torch.", ""), B, S, H,
                                             "/%d" % Hkv if Hkv != H else "", D, " causal" if causal else "")
    err = relerr(o, ref)
    line = "torch_attention %s (%s): relative error %.2e against float32" % (
        title, torch.cuda.get_device_name() if gpu else "interpreted", err)
    if gpu:
        line += ", SDPA's %.2e" % relerr(sdpa(q, k, v, causal), ref)
    print(line)
    if not err <= 2e-2:
        print("torch_attention: FAIL: the result differs from the reference")
        sys.exit(1)
    if not gpu:
        return
    flops = 4 * B * H * S * S * D / (2 if causal else 1)
    ms = gpu_ms(ours)
    rows = [("mgpu (examples/attention.lua)", ms)]
    try:
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
            rows.append(("torch SDPA, cuDNN", gpu_ms(lambda: sdpa(q, k, v, causal))))
    except RuntimeError as e:
        print("torch_attention: SDPA's cuDNN backend refused: %s" % str(e).splitlines()[0])
    for name, t in rows:
        print("torch_attention %s: %-30s %.4f ms  %.1f TFLOP/s" % (title, name, t, flops / t / 1e9))
    if len(rows) == 2:
        print("torch_attention %s: mgpu / cuDNN time %.3f" % (title, rows[0][1] / rows[1][1]))


if __name__ == "__main__":
    main()
