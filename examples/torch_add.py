"""
An mgpu kernel called on torch tensors: z = x + y, the kernel written in Lua
inside this file and fetched with mgpu.as_torch_kernel.  Checks the result
against torch.add and, on a GPU, times both (CUDA events on torch's stream).
Without a GPU it runs CPU tensors in mgpu's interpreter.

  python3 examples/torch_add.py [n] [dtype]       (default 2^26 on a GPU, 100000 interpreted; float32)

Needs the package: pip install --no-build-isolation ./python after the CMake
build (or PYTHONPATH=python from the repository root).
"""
import sys

import torch

import mgpu

ADD = """
local mgpu = require "mgpu"
local B = 4096   -- elements per block: 128 threads x 8 vectors of 16 bytes (f32)
add = mgpu.kernel{
  name = "add",
  grid = function(x) return { mgpu.cdiv(x.size, B) } end,
  out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,
  body = function(x, y, z)
    local block = mgpu.ds(mgpu.program_id(0) * B, B)
    z:at(block):store(x:at(block):load() + y:at(block):load())
  end,
}
"""


def gpu_ms(fn, reps=50):
    """Median milliseconds of fn() on torch's current stream, from CUDA events."""
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


def main():
    gpu = torch.cuda.is_available()
    n = int(sys.argv[1]) if len(sys.argv) > 1 else (1 << 26 if gpu else 100000)
    dtype = getattr(torch, sys.argv[2]) if len(sys.argv) > 2 else torch.float32
    add = mgpu.as_torch_kernel(ADD, "add", interpret=not gpu)
    device = "cuda" if gpu else "cpu"
    x = torch.randn(n, device=device).to(dtype)
    y = torch.randn(n, device=device).to(dtype)
    z = add(x, y)
    where = torch.cuda.get_device_name() if gpu else "interpreted"
    ok = torch.equal(z, x + y)
    print("torch_add: %s[%d] (%s): %s torch.add" % (dtype, n, where, "equal to" if ok else "DIFFERS from"))
    if not ok:
        sys.exit(1)
    if gpu:
        out = torch.empty_like(x)
        ms, ref = gpu_ms(lambda: add(x, y, out=out)), gpu_ms(lambda: torch.add(x, y, out=out))
        gbs = 3 * x.numel() * x.element_size() / 1e6
        print("torch_add: mgpu %.4f ms (%.0f GB/s), torch.add %.4f ms (%.0f GB/s)" % (ms, gbs / ms, ref, gbs / ref))


if __name__ == "__main__":
    main()
