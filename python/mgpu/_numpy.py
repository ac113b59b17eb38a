"""Kernels on numpy arrays, run in the CPU interpreter: the arrays reach the engine through
numpy's DLPack export (no copies), and outputs are new numpy arrays, shared the same way."""
import ctypes

import numpy

from ._lib import lib, ArgumentError, ValueInfo, ARG_WORDS
from ._call import Kernel, array_info, scalar_info, scalar

_DTYPES = {numpy.dtype(t): m for t, m in (("int8", "i8"), ("int16", "i16"), ("int32", "i32"), ("int64", "i64"),
                                          ("uint8", "u8"), ("uint16", "u16"), ("uint32", "u32"), ("uint64", "u64"),
                                          ("float16", "f16"), ("float32", "f32"), ("float64", "f64"))}
_NUMPY = {m: t for t, m in _DTYPES.items()}

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.restype, _set_name.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_USED = ctypes.create_string_buffer(b"used_dltensor")   # the capsule keeps this pointer: static storage


def _import(ctx, a, why):
    """An mgpu buffer over numpy array a's memory through DLPack (mgpu now holds the tensor: the
    buffer's release returns it); why(reason) makes the error naming the argument."""
    try:
        cap = a.__dlpack__()
    except (BufferError, TypeError, ValueError) as e:
        raise why("numpy cannot share it through DLPack (%s)%s"
                  % (e, "; pass a writeable copy (x.copy())" if not a.flags.writeable else ""))
    buf, info = ctypes.c_void_p(), ValueInfo()
    st = lib.mgpu_dlpack_import(ctx.handle, _get_pointer(cap, b"dltensor"), ctypes.byref(buf), ctypes.byref(info))
    if st:
        raise why(lib.message(ctx.handle))
    _set_name(cap, ctypes.cast(_USED, ctypes.c_char_p))   # consumed: the capsule no longer frees it
    return buf.value


class NumpyKernel(Kernel):
    """mgpu.as_numpy_kernel's callable: k(*arrays_and_numbers, out=None) -> array or tuple."""

    def __call__(self, *args, out=None):
        key = tuple((a.dtype, a.shape, a.flags.c_contiguous) if isinstance(a, numpy.ndarray)
                    else (a.dtype if isinstance(a, (scalar, numpy.generic)) else type(a)) for a in args)
        e = self._cache.get(key)
        if e is None:
            e = self._prepare(args, key)
        outs = [numpy.empty(shape, _NUMPY[dt]) for shape, dt in e.outs] if out is None else self._check_out(e, out)
        bufs = []
        try:
            for i, a in enumerate(args + tuple(outs)):
                if i < e.nin and e.scalars[i]:
                    e.f64[ARG_WORDS * i + 1] = a.value if isinstance(a, scalar) else a
                else:
                    bufs.append(_import(e.ctx, a, lambda why, i=i: self._fail(i, why) if i < e.nin else
                                        ArgumentError("%s: output %d: %s" % (self.name, i - e.nin + 1, why))))
                    e.u64[ARG_WORDS * i] = bufs[-1]
            self._launch(e, 0)
        finally:
            for b in bufs:
                lib.mgpu_buffer_release(b)
        if out is not None:
            return out
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _info(self, i, a):
        if isinstance(a, numpy.ndarray):
            dt = _DTYPES.get(a.dtype)
            if dt is None:
                raise self._fail(i, "dtype %s has no mgpu dtype here (numpy arrays may be %s)"
                                 % (a.dtype, ", ".join(str(t) for t in _DTYPES)))
            if a.ndim > 8:
                raise self._fail(i, "%d dimensions; kernel arrays have at most 8" % a.ndim)
            if not a.flags.c_contiguous:
                raise self._fail(i, "not C-contiguous (strides %s); pass numpy.ascontiguousarray(x)" % (a.strides,))
            return array_info(dt, a.shape)
        if isinstance(a, numpy.generic) and a.dtype in _DTYPES:
            return scalar_info(scalar(a.item(), _DTYPES[a.dtype]))
        v = scalar_info(a)
        if v is None:
            raise self._fail(i, "a %s; kernels take numpy arrays and numbers (int, float, numpy scalars, "
                                "mgpu.scalar)" % type(a).__name__)
        return v

    def _prepare(self, args, key):
        return self._trace(args, key, None)

    def _setup(self, e):
        for j, (shape, dt) in enumerate(e.outs):
            if dt not in _NUMPY:
                raise ArgumentError("%s: output %d is %s, which numpy has no dtype for" % (self.name, j + 1, dt))

    def _out_mismatch(self, e, j, o):
        if not isinstance(o, numpy.ndarray):
            return "got a %s" % type(o).__name__
        shape, dt = e.outs[j]
        if _DTYPES.get(o.dtype) != dt or o.shape != shape:
            return "got %s%s" % (o.dtype, list(o.shape))
        return None
