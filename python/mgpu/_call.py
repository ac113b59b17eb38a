"""Kernels called from Python: a callable per kernel of a script, traced once per signature
(dtypes and shapes of the arrays, dtypes of the scalars) and launched on each call."""
import ctypes

from ._lib import (lib, Error, ArgumentError, Arg, ARG_WORDS, LaunchArgs, ParamInfo, ValueInfo, DTYPE, DTYPES,
                   VALUE_SCALAR, VALUE_REF, SPACE_NONE, SPACE_GMEM, PARAM_OUTPUT, PARAM_SCALAR)
from ._engine import context


class scalar:
    """A number passed to a kernel with an explicit dtype: mgpu.scalar(2.5, "f64").  Plain
    Python ints are i32 scalars and floats f32 (bool is an int)."""
    __slots__ = ("value", "dtype")

    def __init__(self, value, dtype):
        if dtype not in DTYPE or dtype == "pred" or dtype.startswith("f8"):
            raise ArgumentError("mgpu.scalar: dtype must be one of %s, got %r"
                                % (", ".join(d for d in DTYPES if d != "pred" and not d.startswith("f8")), dtype))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ArgumentError("mgpu.scalar: value must be an int or a float, got %s" % type(value).__name__)
        self.value, self.dtype = value, dtype

    def __repr__(self):
        return "mgpu.scalar(%r, %r)" % (self.value, self.dtype)


def scalar_info(a):
    """The ValueInfo of an argument that is a number (int -> i32, float -> f32, mgpu.scalar), else None."""
    if isinstance(a, scalar):
        dt = a.dtype
    elif isinstance(a, int):
        dt = "i32"
    elif isinstance(a, float):
        dt = "f32"
    else:
        return None
    return ValueInfo(VALUE_SCALAR, DTYPE[dt], SPACE_NONE, 0)


def array_info(dtype, shape):
    """The ValueInfo of an array argument (an mgpu dtype name, a shape)."""
    v = ValueInfo(VALUE_REF, DTYPE[dtype], SPACE_GMEM, len(shape))
    for d, n in enumerate(shape):
        v.shape[d] = n
    return v


class Entry:
    """A kernel traced for one signature: its handle, its outputs (shapes and mgpu dtypes), and
    the launch arguments, filled in place on each call (u64 and f64 view the same mgpu_arg array:
    with w = ARG_WORDS, element wi + 0 is argument i's buffer, wi + 1 its scalar, wi + 2 its address)."""
    __slots__ = ("kernel", "ctx", "nin", "outs", "scalars", "args", "u64", "f64", "la", "la_ref", "extra")

    def __init__(self, ctx, handle, nin, scalars, outs):
        self.ctx, self.kernel, self.nin, self.scalars, self.outs = ctx, handle, nin, scalars, outs
        n = nin + len(outs)
        self.args = (Arg * max(n, 1))()
        self.u64 = (ctypes.c_uint64 * (ARG_WORDS * n)).from_buffer(self.args)
        self.f64 = (ctypes.c_double * (ARG_WORDS * n)).from_buffer(self.args)
        self.la = LaunchArgs(self.args, n, 0)
        self.la_ref = ctypes.byref(self.la)
        self.extra = None      # the framework's own data (torch: dtypes, device)

    def __del__(self, release=lib.mgpu_kernel_release):
        release(self.kernel)


def params(handle, nin, name):
    """The outputs (shape tuple, mgpu dtype name) of a kernel traced for nin arguments, and which of
    its first nin parameters are scalars."""
    n = lib.mgpu_kernel_param_count(handle)
    outs, scalars = [], []
    p = ParamInfo()
    for i in range(n):
        lib.mgpu_kernel_param(handle, i, ctypes.byref(p))
        if i < nin:
            scalars.append(p.role == PARAM_SCALAR)
        elif p.role == PARAM_OUTPUT:
            outs.append((tuple(p.value.shape[d] for d in range(p.value.rank)), DTYPES[p.value.dtype]))
        else:
            raise Error("%s: the kernel has %d parameters for %d arguments (parameter %d is not an output)"
                        % (name, n, nin, i + 1))
    if n < nin:
        raise Error("%s: the kernel has %d parameters for %d arguments" % (name, n, nin))
    return outs, scalars


class Kernel:
    """A kernel of a script, callable on one framework's arrays (see the subclasses)."""

    def __init__(self, script, name):
        self.script, self.name = script, name
        self._cache = {}

    def __repr__(self):
        return "<mgpu kernel %s of %s>" % (self.name, self.script.label)

    def _fail(self, i, why):
        return ArgumentError("%s: argument %d: %s" % (self.name, i + 1, why))

    def _trace(self, args, key, device):
        """The entry for args (described by the subclass's _info) on `device` (None: the interpreter),
        traced now and cached under key."""
        sig = [self._info(i, a) for i, a in enumerate(args)]
        ctx = context(device)
        handle = self.script.kernel(ctx, self.name, sig)
        try:
            outs, scalars = params(handle, len(args), self.name)
        except Error:
            lib.mgpu_kernel_release(handle)
            raise
        e = Entry(ctx, handle, len(args), scalars, outs)
        self._setup(e)
        self._cache[key] = e
        return e

    def _check_out(self, e, out):
        """The outputs given with out= as a list matching e's outputs (else an ArgumentError)."""
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != len(e.outs):
            raise ArgumentError("%s: out= gives %d array(s); the kernel has %d output(s)"
                                % (self.name, len(outs), len(e.outs)))
        for j, o in enumerate(outs):
            why = self._out_mismatch(e, j, o)
            if why:
                shape, dt = e.outs[j]
                raise ArgumentError("%s: out= output %d must be a %s[%s] array: %s"
                                    % (self.name, j + 1, dt, ",".join(map(str, shape)), why))
        return outs

    def _launch(self, e, stream):
        e.la.stream = stream
        st = lib.mgpu_kernel_launch(e.kernel, e.la_ref)
        if st:
            raise e.ctx.fail(st, self.name)
