"""mgpu from Python: call the kernels of an mgpu Lua script on torch tensors or numpy arrays.

    import mgpu
    add = mgpu.as_torch_kernel("kernels.lua", "add")   # a global of the script holding an mgpu.kernel
    z = add(x, y)                                       # CUDA tensors in, a CUDA tensor out

See python/README.md and docs/python.md.
"""
from ._lib import lib as _clib, Error, ArgumentError
from ._engine import Script as _Script
from ._call import scalar

__all__ = ["as_torch_kernel", "as_numpy_kernel", "scalar", "Error", "ArgumentError", "__version__"]
__version__ = _clib.mgpu_version().decode()


class Kernels:
    """The kernels of a script by name: ks.add, or ks["lib.add"] for a dotted path."""

    def __init__(self, script, ctx, make):
        self._script, self._ctx, self._make = script, ctx, make
        self._made = {}

    def __getitem__(self, name):
        k = self._made.get(name)
        if k is None:
            self._script.check_name(self._ctx, name)
            k = self._made[name] = self._make(name)
        return k

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except Error as e:
            raise AttributeError(str(e)) from None


def _kernels(script, name, make, ctx):
    if name is None:
        return Kernels(script, ctx, make)
    script.check_name(ctx, name)
    return make(name)


def as_torch_kernel(script, name=None, *, interpret=False, **options):
    """The kernel `name` of `script` as a function of torch tensors and numbers that returns torch
    tensors (one, or a tuple for several outputs); name=None: every kernel, as attributes.

    script: a path to a .lua file (options become its key=value arguments, True/False as 1/0),
    or Lua source.  name: the global (or dotted path) holding an mgpu.kernel, or a function of
    the argument specs that returns one.  Tensors must be contiguous CUDA tensors on one GPU;
    the kernel runs on torch's current stream of that GPU, outputs come from torch's allocator,
    and no data is copied.  interpret=True: CPU tensors instead, run in the CPU interpreter.
    Each call may take out= (a tensor, or a tuple of them) to write into existing tensors."""
    import torch
    from ._torch import TorchKernel
    from ._engine import context
    s = _Script(script, options)
    if interpret:
        ctx = context(None)
        s.handle(ctx)
    elif not torch.cuda.is_available():
        raise Error("mgpu.as_torch_kernel: torch sees no CUDA device; as_torch_kernel(..., interpret=True) "
                    "runs CPU tensors in the interpreter")
    else:
        with torch.cuda.device(torch.cuda.current_device()):   # torch's device stays current
            ctx = context(torch.cuda.current_device())
            s.handle(ctx)
    return _kernels(s, name, lambda n: TorchKernel(s, n, interpret), ctx)


def as_numpy_kernel(script, name=None, **options):
    """The kernel `name` of `script` as a function of numpy arrays and numbers that returns numpy
    arrays, run in the CPU interpreter (with or without a GPU); the arguments as for
    as_torch_kernel.  Arrays must be C-contiguous and writeable (numpy's DLPack export)."""
    from ._numpy import NumpyKernel
    from ._engine import context
    s = _Script(script, options)
    ctx = context(None)
    s.handle(ctx)
    return _kernels(s, name, lambda n: NumpyKernel(s, n), ctx)
