"""The package on torch tensors: on a GPU (CUDA tensors on a side stream, mixed with torch ops,
results equal to torch's, the launch given the tensors' own data pointers, outputs from torch's
allocator, no device synchronisation, mistakes as exceptions naming the argument) and, wherever
torch is installed, CPU tensors in the interpreter.  Skipped without torch."""
import os
import unittest

try:
    import torch
except ImportError:
    torch = None

import mgpu
from mgpu._lib import ARG_WORDS

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels.lua")
CUDA = torch is not None and torch.cuda.is_available()


def launch_pointers(k):
    """The addresses k's only traced kernel was last launched on (arguments, then outputs): word 2 of
    each argument's ARG_WORDS-word record."""
    (e,) = k._cache.values()
    return [e.u64[ARG_WORDS * i + 2] for i in range(e.nin + len(e.outs)) if i >= e.nin or not e.scalars[i]]


def relerr(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm()).item()


@unittest.skipIf(torch is None, "torch is not installed")
class TorchInterpreter(unittest.TestCase):
    """interpret=True: CPU tensors run in the CPU interpreter."""

    def test_add_and_pointers(self):
        add = mgpu.as_torch_kernel(KERNELS, "add", interpret=True, block=128)
        x, y = torch.randn(4, 128), torch.randn(4, 128)
        z = add(x, y)
        self.assertTrue(torch.equal(z, x + y))
        self.assertEqual(launch_pointers(add), [x.data_ptr(), y.data_ptr(), z.data_ptr()])
        xb, yb = x.bfloat16(), y.bfloat16()
        self.assertLess(relerr(add(xb, yb), xb.double() + yb.double()), 1e-2)
        o = torch.full((4, 128), float("nan"))
        self.assertIs(add(x, y, out=o), o)
        self.assertTrue(torch.equal(o, x + y))

    def test_scalars_and_two_outputs(self):
        ks = mgpu.as_torch_kernel(KERNELS, interpret=True, block=128)
        x, y = torch.randn(256, dtype=torch.float64), torch.randn(256, dtype=torch.float64)
        self.assertLess(relerr(ks.scale_add(mgpu.scalar(0.25, "f64"), x, y), 0.25 * x + y), 1e-15)
        s, less = ks.sum_less(x, y)
        self.assertEqual((s.dtype, less.dtype), (torch.float32, torch.int32))
        self.assertTrue(torch.equal(less, (x < y).int()))

    def test_mistakes(self):
        ks = mgpu.as_torch_kernel(KERNELS, interpret=True, block=128)
        x = torch.randn(256)
        with self.assertRaisesRegex(mgpu.ArgumentError, r"add: argument 2: not contiguous .* x.contiguous\(\)"):
            ks.add(x, torch.randn(512)[::2])
        with self.assertRaisesRegex(mgpu.ArgumentError, "add: argument 1: dtype torch.complex64 has no mgpu dtype"):
            ks.add(torch.ones(256, dtype=torch.complex64), x)
        with self.assertRaisesRegex(mgpu.Error, r"kernels.lua:\d+: add: dtypes f32 and f64 do not match"):
            ks.add(x, x.double())
        if CUDA:
            with self.assertRaisesRegex(mgpu.ArgumentError, "add: argument 2: a tensor on cuda:0; this kernel runs CPU"):
                ks.add(x, x.cuda())
        self.assertTrue(torch.equal(ks.add(x, x), 2 * x))


@unittest.skipUnless(CUDA, "no CUDA device for torch")
class TorchGPU(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ks = mgpu.as_torch_kernel(KERNELS)

    def test_mixed_loop_on_a_side_stream(self):
        add = mgpu.as_torch_kernel(KERNELS, "add")
        scale_add = mgpu.as_torch_kernel(KERNELS, "scale_add")
        side = torch.cuda.Stream()
        n = 1 << 20
        with torch.cuda.stream(side):
            x = torch.randn(n, device="cuda")
            ours, ref = x, x
            for i in range(20):      # a contraction: rounding differences do not grow over the steps
                y = torch.sin(ours) * 0.25              # torch, then mgpu on its result, on the same stream
                ours = scale_add(0.5, add(ours, y), torch.cos(ours) * 0.1)
                yr = torch.sin(ref) * 0.25
                ref = 0.5 * (ref + yr) + torch.cos(ref) * 0.1
            self.assertEqual(torch.cuda.current_stream(), side)
        side.synchronize()
        self.assertLess(relerr(ours, ref), 1e-6)
        with torch.cuda.stream(side):
            a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
            c = add(a, b)
        side.synchronize()
        self.assertTrue(torch.equal(c, a + b))                    # the same IEEE adds as torch's
        self.assertEqual(launch_pointers(add), [a.data_ptr(), b.data_ptr(), c.data_ptr()])   # no copies
        self.assertEqual(c.device, a.device)

    def test_outputs_come_from_torch(self):
        x = torch.randn(1 << 22, device="cuda")
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        z = self.ks.add(x, x)
        self.assertEqual(torch.cuda.memory_allocated() - before, z.numel() * 4)
        del z
        self.assertEqual(torch.cuda.memory_allocated(), before)

    @unittest.skipIf(os.environ.get("MGPU_UNDER_SANITIZER"), "compute-sanitizer may wait for each launch")
    def test_no_device_synchronisation(self):
        add = mgpu.as_torch_kernel(KERNELS, "add")
        x = torch.randn(1 << 20, device="cuda")
        add(x, x)                                   # traced and loaded: the next call only launches
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(1 << 30)              # about a second of GPU time ahead of the launch
            z = add(x, x)
            self.assertFalse(side.query())          # the call returned with the stream still busy
        side.synchronize()
        self.assertTrue(torch.equal(z, 2 * x))

    def test_dtypes(self):
        for dt, tol in ((torch.bfloat16, 1e-2), (torch.float16, 1e-3), (torch.float64, 1e-15)):
            x, y = torch.randn(3, 256, device="cuda", dtype=dt), torch.randn(3, 256, device="cuda", dtype=dt)
            self.assertLess(relerr(self.ks.add(x, y), x.double() + y.double()), tol)
        i = torch.randint(-1000, 1000, (512,), device="cuda", dtype=torch.int32)
        self.assertTrue(torch.equal(self.ks.add(i, i), 2 * i))
        s, less = self.ks.sum_less(i, i.flip(0))
        self.assertTrue(torch.equal(less, (i < i.flip(0)).int()))
        x = torch.randn(4, 64, device="cuda")
        self.assertTrue(torch.equal(self.ks.twice(x), 2 * x))

    def test_mistakes_name_the_argument(self):
        x = torch.randn(256, device="cuda")
        cases = [
            (lambda: self.ks.add(x, x.cpu()), r"add: argument 2: a tensor on cpu; mgpu kernels take CUDA tensors"),
            (lambda: self.ks.add(torch.randn(16, 32, device="cuda").t(), x), r"add: argument 1: not contiguous"),
            (lambda: self.ks.add(x, x.to(torch.complex64)), r"add: argument 2: dtype torch.complex64"),
            (lambda: self.ks.add(x, x.double()), r"kernels.lua:\d+: add: dtypes f32 and f64 do not match"),
            (lambda: self.ks.add(x, x, out=torch.empty(256)), r"out= output 1 must be a f32\[256\] array: it is on cpu"),
        ]
        if torch.cuda.device_count() > 1:
            cases.append((lambda: self.ks.add(x, x.to("cuda:1")), r"add: argument 2: on cuda:1 but argument 1 is on cuda:0"))
        for call, pattern in cases:
            with self.subTest(pattern=pattern):
                with self.assertRaisesRegex(mgpu.Error, pattern):
                    call()
        self.assertTrue(torch.equal(self.ks.add(x, x), 2 * x))        # and the process goes on


if __name__ == "__main__":
    unittest.main()
