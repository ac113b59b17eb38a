"""Builds the mgpu package with the engine's shared libraries inside it (mgpu/_libs), copied from
$MGPU_LIBRARY_PATH, else $MGPU_BUILD_DIR, else the CMake build beside this directory (../build).
With none of them the package holds no libraries and finds them at run time
($MGPU_LIBRARY_PATH or the system's loader: an installed tree)."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

NAMES = ("libmgpu.so.0", "libmgpu_script.so.0")


def library_dir():
    for var in ("MGPU_LIBRARY_PATH", "MGPU_BUILD_DIR"):
        d = os.environ.get(var)
        if d:
            if not all(os.path.exists(os.path.join(d, n)) for n in NAMES):
                raise SystemExit("mgpu: %s=%s holds no %s; build the engine first" % (var, d, " and ".join(NAMES)))
            return d
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "build")
    return d if all(os.path.exists(os.path.join(d, n)) for n in NAMES) else None


class BuildPy(build_py):
    """build_py, then the libraries copied into the package (the files, under their sonames)."""

    def run(self):
        super().run()
        d = library_dir()
        if d is None:
            print("mgpu: no engine libraries to bundle; the package will load them through $MGPU_LIBRARY_PATH "
                  "or the system's loader")
            return
        out = os.path.join(self.build_lib, "mgpu", "_libs")
        os.makedirs(out, exist_ok=True)
        for n in NAMES:
            shutil.copyfile(os.path.realpath(os.path.join(d, n)), os.path.join(out, n))


class BinaryDistribution(Distribution):
    """The wheel holds native libraries: tagged for this platform, not as pure Python."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPy}, distclass=BinaryDistribution if library_dir() else Distribution)
