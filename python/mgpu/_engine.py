"""Engine contexts (one per device and mode, kept for the process) and scripts loaded into them."""
import ctypes
import os
import re

from ._lib import (lib, Error, ArgumentError, CtxOptions, DeviceInfo, ValueInfo, MODE_GPU, MODE_INTERPRET,
                   VALUE_SCALAR, DTYPES)


class Context:
    """An mgpu context: the GPU `device` (its primary CUDA context, which torch shares) or the
    CPU interpreter (device None)."""

    def __init__(self, device):
        opts = CtxOptions(MODE_INTERPRET if device is None else MODE_GPU, device or 0, None, None)
        h = ctypes.c_void_p()
        st = lib.mgpu_ctx_create(ctypes.byref(opts), ctypes.byref(h))
        if st:
            raise Error("mgpu: no context for %s: %s" % ("the interpreter" if device is None else "GPU %d" % device,
                                                         lib.message(None)), st)
        self.handle = h.value
        self.device = device
        info = DeviceInfo()
        lib.mgpu_device_query(self.handle, ctypes.byref(info))
        self.name = info.name.decode() if device is not None else "interpreter"

    def fail(self, status, what):
        """The Error for a failed call on this context: `what`: the engine's message."""
        return Error("%s: %s" % (what, lib.message(self.handle)), status)


_contexts = {}


def context(device):
    """The process's context for GPU `device` (None: the interpreter), made at its first use."""
    c = _contexts.get(device)
    if c is None:
        c = _contexts[device] = Context(device)
    return c


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _option_text(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


class Script:
    """A Lua file (with its key=value arguments) or Lua source that defines kernels, run once
    in each context that calls one of them."""

    def __init__(self, script, options):
        self._loaded = {}    # context -> mgpu_script handle
        if isinstance(script, os.PathLike) or (isinstance(script, str) and "\n" not in script
                                               and script.endswith(".lua")):
            self.path = os.path.abspath(os.fspath(script))
            if not os.path.isfile(self.path):
                raise Error("mgpu: no such script: %s" % self.path)
            self.source = None
            self.label = os.fspath(script)
        elif isinstance(script, str):
            if options:
                raise ArgumentError("mgpu: options (%s) reach a script file as its key=value arguments; Lua source "
                                    "takes none: write them into the source" % ", ".join(sorted(options)))
            self.path, self.source, self.label = None, script, "Lua source"
        else:
            raise ArgumentError("mgpu: script must be a path to a .lua file or Lua source, got %s"
                                % type(script).__name__)
        self.args = ["%s=%s" % (k, _option_text(v)) for k, v in options.items()]

    def handle(self, ctx):
        """The script run in ctx (run at the first call)."""
        h = self._loaded.get(ctx)
        if h is not None:
            return h
        out = ctypes.c_void_p()
        st = lib.mgpu_script_create(ctx.handle, ctypes.byref(out))
        if st:
            raise ctx.fail(st, "mgpu: creating a script state")
        h = out.value
        if self.path is not None:
            args = (ctypes.c_char_p * max(len(self.args), 1))(*[a.encode() for a in self.args])
            st = lib.mgpu_script_run_file(h, self.path.encode(), args, len(self.args))
        else:
            st = lib.mgpu_script_run_string(h, self.source.encode(), b"=<source>")
        if st:
            err = ctx.fail(st, "mgpu: running %s" % self.label)
            lib.mgpu_script_release(h)
            raise err
        self._loaded[ctx] = h
        return h

    def check_name(self, ctx, name):
        """An Error unless `name` (a global or a dotted path) holds a kernel or a function in the script."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise ArgumentError("mgpu: a kernel name is a Lua global or a dotted path such as 'lib.add', got %r" % (name,))
        check = ("local v = _G\n"
                 "for part in ('%s'):gmatch('[^.]+') do v = type(v) == 'table' and v[part] or nil end\n"
                 "if not (require('mgpu.kernel').is_kernel(v) or type(v) == 'function') then error(type(v), 0) end\n"
                 % name)
        st = lib.mgpu_script_run_string(self.handle(ctx), check.encode(), b"=mgpu")
        if st:
            raise Error("mgpu: '%s' is not an mgpu kernel (nor a function returning one) in %s: %s"
                        % (name, self.label, lib.message(ctx.handle)), st)

    def kernel(self, ctx, name, sig):
        """The kernel handle `name` traced for sig (a list of ValueInfo), and its parameters."""
        arr = (ValueInfo * max(len(sig), 1))(*sig)
        out = ctypes.c_void_p()
        st = lib.mgpu_script_kernel(self.handle(ctx), name.encode(), arr, len(sig), ctypes.byref(out))
        if st:
            raise ctx.fail(st, "%s(%s)" % (name, ", ".join(describe(v) for v in sig)))
        return out.value

    def __del__(self, release=lib.mgpu_script_release):
        for h in self._loaded.values():   # the kernels traced from it hold their own references
            release(h)


def describe(v):
    """A ValueInfo as text: f32[1000], or 'f32 scalar'."""
    if v.kind == VALUE_SCALAR:
        return "%s scalar" % DTYPES[v.dtype]
    return "%s[%s]" % (DTYPES[v.dtype], ",".join(str(v.shape[i]) for i in range(v.rank)))
