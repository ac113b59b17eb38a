"""Multi-GPU anchors for mgpu's distributed examples, measured with torch and
NCCL on the same machine: all_gather_into_tensor and reduce_scatter_tensor of
64 MiB per GPU (the all-gather's input, the reduce-scatter's output), and an
all-gather of A (M rows per GPU) followed by a cuBLAS matmul with B (K x N),
the baseline of a collective matmul.  NVLink multicast stays off.

  python3 bench/dist_anchors.py [ngpus] [M] [C]      (defaults: all GPUs, 8192, 4096)
"""
import os
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def timed(fn, reps=20, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def worker(rank, n, M, C, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=n, device_id=torch.device("cuda", rank))
    x = torch.randn(M, C, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(n * M, C, device="cuda", dtype=torch.bfloat16)
    ms = timed(lambda: dist.all_gather_into_tensor(out, x))
    gbs = (n - 1) * x.numel() * 2 / ms / 1e6
    if rank == 0:
        print(f"nccl all_gather_into_tensor {M}x{C} bf16 per GPU on {n} GPUs: {ms:.3f} ms, {gbs:.1f} GB/s received per GPU")
    # reduce-scatter: every GPU holds n*M x C, ends with its M x C chunk of the sum
    big = torch.randn(n * M, C, device="cuda", dtype=torch.bfloat16)
    part = torch.empty(M, C, device="cuda", dtype=torch.bfloat16)
    ms = timed(lambda: dist.reduce_scatter_tensor(part, big))
    gbs = (n - 1) * part.numel() * 2 / ms / 1e6
    if rank == 0:
        print(f"nccl reduce_scatter_tensor {M}x{C} bf16 out per GPU on {n} GPUs: {ms:.3f} ms, {gbs:.1f} GB/s received per GPU")
    del big, part
    # all-gather of A (M x K per GPU) then cuBLAS: (n*M x K) @ (K x N), N = K = 8192
    K = N = 8192
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    # (random, not empty: fresh memory reads as zeros, which the tensor cores multiply at a higher
    # clock than real data, so "matmul alone" would not bound the collective's matmul)
    ag = torch.randn(n * M, K, device="cuda", dtype=torch.bfloat16)
    ms_mm = timed(lambda: torch.matmul(ag, b))
    def both():
        dist.all_gather_into_tensor(ag, a)
        torch.matmul(ag, b)
    ms_both = timed(both)
    tf = 2 * n * M * K * N / ms_both / 1e9
    if rank == 0:
        print(f"nccl all-gather + cublas matmul ({n}*{M})x{K}x{N} bf16: {ms_both:.3f} ms ({tf:.1f} TFLOP/s, "
              f"TC utilisation {100 * tf / 989.4:.1f}% of the 989.4 TFLOP/s dense bf16 peak; matmul alone {ms_mm:.3f} ms)")
    dist.destroy_process_group()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else torch.cuda.device_count()
    M = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
    C = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    mp.spawn(worker, args=(n, M, C, 29500 + os.getpid() % 1000), nprocs=n)
