"""The engine's shared libraries and their C declarations (include/mgpu.h) through ctypes.

The libraries are found, in order: in the directory $MGPU_LIBRARY_PATH names; bundled in the
package (copied from the CMake build when it was installed); in the build/ directory of the
repository when the package runs from python/ there; by the system's loader (an installed tree).
"""
import ctypes
import os

ABI_VERSION = 8          # MGPU_ABI_VERSION of the header these declarations follow
NAMES = ("libmgpu.so.0", "libmgpu_script.so.0")

# enum values of mgpu.h
MODE_GPU, MODE_INTERPRET = 1, 2
VALUE_SCALAR, VALUE_REF = 0, 2
SPACE_NONE, SPACE_GMEM = 0, 1
PARAM_OUTPUT, PARAM_SCALAR = 1, 2
DTYPES = ("pred", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
          "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2")     # ORDER DTYPE
DTYPE = {name: code for code, name in enumerate(DTYPES)}


class Error(Exception):
    """An error from mgpu: the engine's or the script's message (Lua errors say file:line).
    .status is the C API's status code (None for errors found in Python)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class ArgumentError(Error, ValueError):
    """A kernel call's argument is wrong (its type, device, dtype, shape or layout)."""


class CtxOptions(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int32), ("device", ctypes.c_int32),
                ("alloc", ctypes.c_void_p), ("alloc_ud", ctypes.c_void_p)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int32), ("device", ctypes.c_int32), ("sm_count", ctypes.c_int32),
                ("cc_major", ctypes.c_int32), ("cc_minor", ctypes.c_int32), ("smem_per_block", ctypes.c_int32),
                ("driver_version", ctypes.c_int32), ("l2_bytes", ctypes.c_int32), ("clock_khz", ctypes.c_int32),
                ("target", ctypes.c_int32), ("global_mem", ctypes.c_int64), ("name", ctypes.c_char * 128), ("reason", ctypes.c_char * 256)]


class ValueInfo(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("dtype", ctypes.c_int32), ("space", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", ctypes.c_int64 * 8)]


class ParamInfo(ctypes.Structure):
    _fields_ = [("role", ctypes.c_int32), ("value", ValueInfo)]


class Arg(ctypes.Structure):
    _fields_ = [("buffer", ctypes.c_void_p), ("scalar", ctypes.c_double), ("address", ctypes.c_uint64),
                ("integer", ctypes.c_int64), ("has_integer", ctypes.c_int32)]


# An Arg in 8-byte words (the launch arguments are filled through flat u64/f64 views)
ARG_WORDS = ctypes.sizeof(Arg) // 8


class LaunchArgs(ctypes.Structure):
    _fields_ = [("args", ctypes.POINTER(Arg)), ("nargs", ctypes.c_int32), ("stream", ctypes.c_uint64)]


P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
I32 = ctypes.c_int32
STR = ctypes.c_char_p
# name: (library index, result, argument types)
FUNCTIONS = {
    "mgpu_abi_version": (0, I32, []),
    "mgpu_version": (0, STR, []),
    "mgpu_errmsg": (0, STR, [P]),
    "mgpu_ctx_create": (0, I32, [ctypes.POINTER(CtxOptions), PP]),
    "mgpu_ctx_release": (0, None, [P]),
    "mgpu_device_query": (0, I32, [P, ctypes.POINTER(DeviceInfo)]),
    "mgpu_buffer_release": (0, None, [P]),
    "mgpu_buffer_address": (0, ctypes.c_uint64, [P]),
    "mgpu_dlpack_import": (0, I32, [P, P, PP, ctypes.POINTER(ValueInfo)]),
    "mgpu_kernel_release": (0, None, [P]),
    "mgpu_kernel_param_count": (0, I32, [P]),
    "mgpu_kernel_param": (0, I32, [P, I32, ctypes.POINTER(ParamInfo)]),
    "mgpu_kernel_launch": (0, I32, [P, ctypes.POINTER(LaunchArgs)]),
    "mgpu_script_create": (1, I32, [P, PP]),
    "mgpu_script_release": (1, None, [P]),
    "mgpu_script_run_file": (1, I32, [P, STR, ctypes.POINTER(STR), I32]),
    "mgpu_script_run_string": (1, I32, [P, STR, STR]),
    "mgpu_script_kernel": (1, I32, [P, STR, ctypes.POINTER(ValueInfo), I32, PP]),
}


def _candidates():
    """Directories to look in for the libraries, in order (None: the system's loader)."""
    env = os.environ.get("MGPU_LIBRARY_PATH")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, "_libs"), os.path.join(os.path.dirname(os.path.dirname(here)), "build"), None]


def _load():
    tried = []
    for d in _candidates():
        if d is not None and not all(os.path.exists(os.path.join(d, n)) for n in NAMES):
            tried.append(d)
            continue
        paths = [n if d is None else os.path.join(d, n) for n in NAMES]
        try:
            # PyDLL keeps the GIL during calls: one Python thread in the engine at a time, as its
            # contexts require, without a lock of our own
            libs = [ctypes.PyDLL(p, mode=ctypes.RTLD_GLOBAL) for p in paths]
        except OSError as e:
            if d is None:
                tried.append("the system's library path (%s)" % e)
                break
            raise Error("mgpu: cannot load the libraries in %s: %s" % (d, e)) from None
        return libs, (os.path.dirname(os.path.abspath(paths[0])) if d is not None else None)
    raise Error("mgpu: libmgpu.so.0 and libmgpu_script.so.0 not found; looked in %s. Build the engine "
                "(cmake -S . -B build && cmake --build build) and install the package after it, or set "
                "MGPU_LIBRARY_PATH to the directory holding them" % "; ".join(tried))


class _Lib:
    """The C functions as attributes (lib.mgpu_ctx_create, ...)."""

    def __init__(self):
        libs, self.directory = _load()
        for name, (which, res, argtypes) in FUNCTIONS.items():
            f = getattr(libs[which], name)
            f.restype, f.argtypes = res, argtypes
            setattr(self, name, f)
        abi = self.mgpu_abi_version()
        if abi != ABI_VERSION:
            raise Error("mgpu: the library (%s) has ABI version %d but this package needs %d: install the package "
                        "again after building the engine" % (self.directory or "system", abi, ABI_VERSION))

    def message(self, ctx):
        """The last error's message on ctx (None: why the last context creation failed)."""
        m = self.mgpu_errmsg(ctx)
        return m.decode("utf-8", "replace") if m else "unknown error"


lib = _Lib()
