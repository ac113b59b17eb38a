"""
Host time of one call of an mgpu kernel from Python on like tensors (the cached
signature: only the launch is left), against torch's own dispatch of the same
elementwise op (torch.add), a torch custom op (torch.library) doing the same
launch, and the bare foreign call into the engine.  Each row is the median over
rounds of a loop of calls timed with time.perf_counter, on tensors small enough
(4096 elements) that the GPU keeps up and the host's time is what is measured.

  python3 bench/python_overhead.py [calls]     (prints a table, and on a GPU PASS/FAIL for mgpu <= 2x torch.add;
                                                without one, CPU tensors in the interpreter: a check of the
                                                script, not a measurement)
"""
import os
import sys
import time

import torch

import mgpu
from mgpu._lib import lib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples"))
from torch_add import ADD  # noqa: E402  (the same add kernel as the example)

TARGET = 2.0


GPU = torch.cuda.is_available()
sync = torch.cuda.synchronize if GPU else (lambda: None)


def host_us(fn, calls, rounds=7):
    """Median over rounds of the host microseconds per call of fn() in a loop of `calls`."""
    fn()
    sync()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
        sync()
    return sorted(times)[rounds // 2]


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else (20000 if GPU else 200)
    add = mgpu.as_torch_kernel(ADD, "add", interpret=not GPU)
    device = "cuda" if GPU else "cpu"
    x, y = torch.randn(4096, device=device), torch.randn(4096, device=device)
    o = torch.empty_like(x)
    if not torch.equal(add(x, y), x + y):
        print("python_overhead: FAIL: the kernel's result differs from torch.add")
        return 1

    rows = [
        ("torch.add(x, y)", host_us(lambda: torch.add(x, y), calls)),
        ("torch.add(x, y, out=o)", host_us(lambda: torch.add(x, y, out=o), calls)),
        ("mgpu add(x, y)", host_us(lambda: add(x, y), calls)),
        ("mgpu add(x, y, out=o)", host_us(lambda: add(x, y, out=o), calls)),
    ]
    if hasattr(torch.library, "custom_op"):      # torch >= 2.4
        @torch.library.custom_op("mgpu_bench::add", mutates_args=())
        def add_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return add(a, b)

        @add_op.register_fake
        def _(a, b):
            return torch.empty_like(a)

        rows.append(("custom op mgpu_bench::add(x, y)", host_us(lambda: add_op(x, y), calls)))
    # the launch alone, on the arguments of the last call: x, y and o (alive throughout)
    add(x, y, out=o)
    (entry,) = add._cache.values()
    launch, kernel, la = lib.mgpu_kernel_launch, entry.kernel, entry.la_ref
    rows.append(("bare mgpu_kernel_launch (ctypes)", host_us(lambda: launch(kernel, la), calls)))
    base = rows[0][1]
    print("host time per call, %d calls per round, f32[4096] on %s, torch %s" % (
        calls, torch.cuda.get_device_name() if GPU else "the CPU (interpreted: not a measurement)", torch.__version__))
    print("%-36s %10s %12s" % ("call", "us", "/ torch.add"))
    for name, us in rows:
        print("%-36s %10.2f %12.2f" % (name, us, us / base))
    if not GPU:
        return 0
    ratio = rows[2][1] / base
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    print("python_overhead: %s: mgpu add(x, y) takes %.2fx torch.add's host time (target <= %.1fx)"
          % (verdict, ratio, TARGET))
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
