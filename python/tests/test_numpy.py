"""The package on numpy arrays in the CPU interpreter (what CI runs): results against numpy in
float64, zero-copy sharing through DLPack, the signature cache, and every mistake reported as an
exception naming the argument, after which the process goes on.  Skipped without numpy."""
import ctypes
import os
import subprocess
import unittest

try:
    import numpy as np
except ImportError:
    np = None

import mgpu

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "kernels.lua")


def relerr(out, ref):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    return np.linalg.norm(out - ref) / np.linalg.norm(ref)


@unittest.skipIf(np is None, "numpy is not installed (apt-get install python3-numpy)")
class NumpyKernels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ks = mgpu.as_numpy_kernel(KERNELS, block=128)
        cls.rng = np.random.default_rng()

    def rand(self, shape, dtype=np.float32):
        return self.rng.standard_normal(shape).astype(dtype)

    def test_add_matches_numpy(self):
        for dtype, tol in ((np.float32, 1e-7), (np.float64, 1e-15), (np.float16, 1e-3)):
            x, y = self.rand((3, 256), dtype), self.rand((3, 256), dtype)
            out = self.ks.add(x, y)
            self.assertEqual((out.dtype, out.shape), (np.dtype(dtype), (3, 256)))
            self.assertLess(relerr(out, x.astype(np.float64) + y), tol)

    def test_integers(self):
        x = self.rng.integers(-1000, 1000, 512).astype(np.int32)
        y = self.rng.integers(-1000, 1000, 512).astype(np.int32)
        np.testing.assert_array_equal(self.ks.add(x, y), x + y)
        b = self.rng.integers(-100, 100, 256).astype(np.int8)
        np.testing.assert_array_equal(self.ks["lib.neg"](b), -b)

    def test_scalars(self):
        x, y = self.rand(384), self.rand(384)
        self.assertLess(relerr(self.ks.scale_add(2.5, x, y), 2.5 * x.astype(np.float64) + y), 1e-6)
        self.assertLess(relerr(self.ks.scale_add(np.float32(-0.75), x, y), -0.75 * x.astype(np.float64) + y), 1e-6)
        xd, yd = self.rand(128, np.float64), self.rand(128, np.float64)
        self.assertLess(relerr(self.ks.scale_add(mgpu.scalar(1 / 3, "f64"), xd, yd), xd / 3 + yd), 1e-15)
        xi = np.arange(128, dtype=np.int32)
        np.testing.assert_array_equal(self.ks.scale_add(3, xi, xi), 4 * xi)
        with self.assertRaisesRegex(mgpu.Error, "must be an integer in its range \\(i32 holds integers"):
            self.ks.scale_add(2 ** 40, xi, xi)
        with self.assertRaisesRegex(mgpu.ArgumentError, "mgpu.scalar: dtype must be one of"):
            mgpu.scalar(1, "f8e4m3")

    def test_two_outputs(self):
        x, y = self.rand(256, np.float64), self.rand(256, np.float64)
        s, less = self.ks.sum_less(x, y)
        self.assertEqual((s.dtype, less.dtype), (np.float32, np.int32))
        self.assertLess(relerr(s, x + y), 1e-6)
        np.testing.assert_array_equal(less, (x < y).astype(np.int32))

    def test_out_writes_in_place(self):
        x, y = self.rand(256), self.rand(256)
        o = np.full(256, np.nan, np.float32)
        r = self.ks.add(x, y, out=o)
        self.assertIs(r, o)
        self.assertLess(relerr(o, x.astype(np.float64) + y), 1e-7)
        ref = x.astype(np.float64) + y
        self.ks.add(x, y, out=x)              # in place: the kernel reads and writes x's memory
        self.assertLess(relerr(x, ref), 1e-7)
        s, less = np.full(256, np.nan, np.float32), np.full(256, -7, np.int32)
        self.assertEqual(self.ks.sum_less(x, y, out=(s, less)), (s, less))
        self.assertFalse(np.isnan(s).any() or (less == -7).any())
        with self.assertRaisesRegex(mgpu.ArgumentError, r"add: out= output 1 must be a f32\[256\] array: got float64"):
            self.ks.add(x, y, out=np.empty(256))
        with self.assertRaisesRegex(mgpu.ArgumentError, "out= gives 1 array"):
            self.ks.sum_less(x, y, out=s)

    def test_factory_and_cache(self):
        k = self.ks.twice
        x = self.rand((2, 64))
        self.assertLess(relerr(k(x), 2 * x.astype(np.float64)), 1e-7)
        k(self.rand((2, 64)))
        self.assertEqual(len(k._cache), 1)    # like arrays: the same traced kernel
        k(self.rand((4, 32)))
        k(self.rand((4, 32), np.float64))
        self.assertEqual(len(k._cache), 3)

    def test_dlpack_is_zero_copy(self):
        from mgpu import _numpy, _engine
        from mgpu._lib import lib
        ctx = _engine.context(None)
        x = self.rand((16, 16))
        base = x.__array_interface__["data"][0]
        buf = _numpy._import(ctx, x, AssertionError)
        try:
            self.assertEqual(lib.mgpu_buffer_address(buf), base)   # the engine sees numpy's memory
        finally:
            lib.mgpu_buffer_release(buf)        # returns the tensor: numpy's deleter runs
        x[0, 0] = 1                            # and the array is fine afterwards

    def test_script_options_and_source(self):
        ks256 = mgpu.as_numpy_kernel(KERNELS, block=256)
        with self.assertRaisesRegex(mgpu.Error, r"kernels.lua:\d+: 128 elements: a multiple of 256 is needed"):
            ks256.add(self.rand(128), self.rand(128))
        self.assertEqual(ks256.add(self.rand(256), self.rand(256)).shape, (256,))
        src = ("local mgpu = require 'mgpu'\n"
               "sq = mgpu.kernel{ grid = { 1 }, out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,\n"
               "  body = function(x, o) local v = x:load(); o:store(v * v) end }\n")
        sq = mgpu.as_numpy_kernel(src, "sq")
        x = self.rand(128)
        self.assertLess(relerr(sq(x), x.astype(np.float64) ** 2), 1e-6)
        with self.assertRaisesRegex(mgpu.ArgumentError, "options .* reach a script file"):
            mgpu.as_numpy_kernel(src, "sq", block=2)
        with self.assertRaisesRegex(mgpu.Error, r"<source>:1: "):
            mgpu.as_numpy_kernel("local x = = 1\n")

    def test_mistakes_name_the_argument(self):
        ks, x = self.ks, self.rand(256)
        cases = [
            (lambda: ks.add(x, np.ones(256, np.complex64)), mgpu.ArgumentError, "add: argument 2: dtype complex64"),
            (lambda: ks.add(x, self.rand(512)[::2]), mgpu.ArgumentError, r"add: argument 2: not C-contiguous"),
            (lambda: ks.add(np.broadcast_to(x, (256,)), x), mgpu.ArgumentError,
             r"add: argument 1: numpy cannot share it through DLPack .*x.copy\(\)"),
            (lambda: ks.add(x, "y"), mgpu.ArgumentError, "add: argument 2: a str; kernels take numpy arrays"),
            (lambda: ks.add(x, self.rand(256, np.float64)), mgpu.Error,
             r"add\(f32\[256\], f64\[256\]\): .*kernels.lua:\d+: add: dtypes f32 and f64 do not match"),
            (lambda: ks.add(self.rand(100), self.rand(100)), mgpu.Error,
             r"kernels.lua:\d+: 100 elements: a multiple of 128 is needed"),
            (lambda: ks.add(x), mgpu.Error, r"kernels.lua:\d+: kernel 'add' takes 2 inputs, got 1 argument"),
            (lambda: ks.keeps(), mgpu.Error, r"kernels.lua:\d+: kernel 'keeps' launches with arrays kept between "),
            (lambda: ks["not_a_kernel"], mgpu.Error, "'not_a_kernel' is not an mgpu kernel .* in .*kernels.lua: number"),
            (lambda: mgpu.as_numpy_kernel(KERNELS, "missing"), mgpu.Error, "'missing' is not an mgpu kernel"),
            (lambda: mgpu.as_numpy_kernel(KERNELS, "bad name!"), mgpu.ArgumentError, "a kernel name is a Lua global"),
            (lambda: mgpu.as_numpy_kernel(os.path.join(HERE, "nonexistent.lua")), mgpu.Error, "no such script"),
        ]
        for call, kind, pattern in cases:
            with self.subTest(pattern=pattern):
                with self.assertRaisesRegex(kind, pattern):
                    call()
        self.assertLess(relerr(ks.add(x, x), 2 * x.astype(np.float64)), 1e-7)   # and the process goes on
        with self.assertRaisesRegex(AttributeError, "'ad' is not an mgpu kernel"):
            ks.ad                        # a namespace's missing name is an AttributeError

    def test_interpreter_errors_come_back(self):
        src = ("local mgpu = require 'mgpu'\n"
               "stuck = mgpu.kernel{ out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end,\n"
               "  scratch_shapes = { mgpu.Barrier{} },\n"
               "  body = function(x, o, bar) mgpu.barrier_wait(bar) end }\n")
        k = mgpu.as_numpy_kernel(src, "stuck")
        with self.assertRaisesRegex(mgpu.Error, r"^stuck: .*<source>:4: deadlock"):
            k(self.rand(128))
        self.assertEqual(self.ks.add(self.rand(128), self.rand(128)).shape, (128,))


class Package(unittest.TestCase):
    def test_libraries_and_abi(self):
        from mgpu._lib import lib, ABI_VERSION
        self.assertEqual(lib.mgpu_abi_version(), ABI_VERSION)
        self.assertRegex(mgpu.__version__, r"^\d+\.\d+\.\d+")
        if os.environ.get("MGPU_EXPECT_LIBRARY_DIR"):     # tools/check_python.sh: the install's own copy
            self.assertEqual(os.path.realpath(lib.directory), os.path.realpath(os.environ["MGPU_EXPECT_LIBRARY_DIR"]))

    @unittest.skipUnless(os.environ.get("MGPU_ABI_SIZES"), "MGPU_ABI_SIZES (build/abi_sizes) not given")
    def test_struct_layouts_match_the_header(self):
        from mgpu import _lib
        structs = {"mgpu_ctx_options": _lib.CtxOptions, "mgpu_device_info": _lib.DeviceInfo,
                   "mgpu_value_info": _lib.ValueInfo, "mgpu_param_info": _lib.ParamInfo, "mgpu_arg": _lib.Arg,
                   "mgpu_launch_args": _lib.LaunchArgs}
        seen = 0
        for line in subprocess.check_output([os.environ["MGPU_ABI_SIZES"]], text=True).splitlines():
            name, field, size, offset = line.split()
            if name in structs:
                seen += 1
                self.assertEqual(ctypes.sizeof(structs[name]), int(size), name)
                self.assertEqual(getattr(structs[name], field).offset, int(offset), name + "." + field)
        self.assertGreaterEqual(seen, 18)


if __name__ == "__main__":
    unittest.main()
