"""Kernels on torch tensors: CUDA tensors run on their GPU, launched on torch's current stream of
that device, outputs allocated by torch (its caching allocator), no copies either way (the kernel
gets the tensors' data pointers); with interpret=True, CPU tensors run in the interpreter."""
import torch

from ._lib import lib, ArgumentError, ARG_WORDS
from ._call import Kernel, array_info, scalar_info, scalar

_DTYPES = {torch.bool: "pred", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
           torch.uint8: "u8", torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32",
           torch.float64: "f64"}
for _t, _m in (("uint16", "u16"), ("uint32", "u32"), ("uint64", "u64"), ("float8_e4m3fn", "f8e4m3"),
               ("float8_e5m2", "f8e5m2")):
    if hasattr(torch, _t):        # newer torch versions
        _DTYPES[getattr(torch, _t)] = _m
_TORCH = {m: t for t, m in _DTYPES.items()}

_Tensor = torch.Tensor
_empty = torch.empty
_launch = lib.mgpu_kernel_launch
# torch's current CUDA stream on a device as a CUstream, and its current device: the functions
# behind torch.cuda.current_stream and current_device, without their Python objects and checks
_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (lambda d: torch.cuda.current_stream(d).cuda_stream)
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


class TorchKernel(Kernel):
    """mgpu.as_torch_kernel's callable: k(*tensors_and_numbers, out=None) -> tensor or tuple."""

    def __init__(self, script, name, interpret):
        super().__init__(script, name)
        self.interpret = interpret

    def __call__(self, *args, out=None):
        key = tuple([(a.dtype, a.shape, a.get_device(), a.is_contiguous()) if isinstance(a, _Tensor)
                     else (a.dtype if isinstance(a, scalar) else type(a)) for a in args])
        e = self._cache.get(key)
        if e is None:
            e = self._prepare(args, key)
        tensors, numbers, outputs, device, dev = e.extra
        if dev >= 0 and dev != _current_device():   # the engine makes its device's context current:
            with torch.cuda.device(dev):              # torch's own device comes back after
                return self(*args, out=out)
        u64, f64 = e.u64, e.f64
        for i, slot in tensors:
            u64[slot] = args[i].data_ptr()
        for i, slot in numbers:
            a = args[i]
            f64[slot] = a.value if isinstance(a, scalar) else a
        if out is None:
            outs = [_empty(shape, dtype=dt, device=device) for shape, dt in outputs]
        else:
            outs = self._check_out(e, out)
        slot = ARG_WORDS * e.nin + 2
        for o in outs:
            u64[slot] = o.data_ptr()
            slot += ARG_WORDS
        e.la.stream = _stream(dev) if dev >= 0 else 0
        st = _launch(e.kernel, e.la_ref)
        if st:
            raise e.ctx.fail(st, self.name)
        if out is not None:
            return out
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _info(self, i, a):
        if isinstance(a, _Tensor):
            dt = _DTYPES.get(a.dtype)
            if dt is None:
                raise self._fail(i, "dtype %s has no mgpu dtype (mgpu takes %s)"
                                 % (a.dtype, ", ".join(str(t) for t in _DTYPES)))
            if a.dim() > 8:
                raise self._fail(i, "%d dimensions; kernel arrays have at most 8" % a.dim())
            return array_info(dt, tuple(a.shape))
        v = scalar_info(a)
        if v is None:
            raise self._fail(i, "a %s; kernels take torch tensors and numbers (int, float, mgpu.scalar)"
                             % type(a).__name__)
        return v

    def _prepare(self, args, key):
        """Checks the arguments (each mistake named), then traces the kernel for them."""
        device = None
        for i, a in enumerate(args):
            if not isinstance(a, _Tensor):
                continue
            if self.interpret and a.device.type != "cpu":
                raise self._fail(i, "a tensor on %s; this kernel runs CPU tensors in the interpreter "
                                    "(interpret=True)" % a.device)
            if not self.interpret and a.device.type != "cuda":
                raise self._fail(i, "a tensor on %s; mgpu kernels take CUDA tensors (x.cuda()), or CPU tensors "
                                    "in the interpreter with as_torch_kernel(..., interpret=True)" % a.device)
            if not a.is_contiguous():
                raise self._fail(i, "not contiguous (shape %s, strides %s); mgpu kernels take C-contiguous "
                                    "tensors: pass x.contiguous()" % (tuple(a.shape), a.stride()))
            if device is None:
                device, first = a.get_device(), i
            elif a.get_device() != device:
                raise self._fail(i, "on cuda:%d but argument %d is on cuda:%d; a kernel runs on one GPU"
                                 % (a.get_device(), first + 1, device))
        if self.interpret:
            device = None
        elif device is None:
            device = torch.cuda.current_device()
        if device is not None:
            with torch.cuda.device(device):
                return self._trace(args, key, device)
        return self._trace(args, key, None)

    def _setup(self, e):
        """e.extra: what a call needs: the (argument, u64 slot) of each tensor, the (argument, f64 slot)
        of each number, each output's shape and torch dtype, the torch device and its index (-1: CPU)."""
        outputs = []
        for j, (shape, dt) in enumerate(e.outs):
            t = _TORCH.get(dt)
            if t is None:
                raise ArgumentError("%s: output %d is %s, which this torch has no dtype for" % (self.name, j + 1, dt))
            outputs.append((shape, t))
        dev = -1 if e.ctx.device is None else e.ctx.device
        e.extra = ([(i, ARG_WORDS * i + 2) for i in range(e.nin) if not e.scalars[i]],
                   [(i, ARG_WORDS * i + 1) for i in range(e.nin) if e.scalars[i]], outputs,
                   torch.device("cpu") if dev < 0 else torch.device("cuda", dev), dev)

    def _out_mismatch(self, e, j, o):
        if not isinstance(o, _Tensor):
            return "got a %s" % type(o).__name__
        shape, dtype = e.extra[2][j]
        if o.dtype != dtype or tuple(o.shape) != shape:
            return "got %s%s" % (o.dtype, list(o.shape))
        if o.device != e.extra[3]:
            return "it is on %s, the kernel runs on %s" % (o.device, e.extra[3])
        if not o.is_contiguous():
            return "it is not contiguous"
        return None
