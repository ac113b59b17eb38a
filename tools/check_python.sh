#!/bin/sh
# The Python package (python/) as users get it: pip installs a copy of python/
# into a scratch target, with the engine's libraries from BUILD_DIR bundled,
# and its unittest tests run against that install (numpy in the interpreter;
# torch tests where torch is, on a GPU where torch has one).  Then the same
# package installed without libraries finds an installed tree's through
# MGPU_LIBRARY_PATH.  Skips (exit 0, "skipped: ...") without a python3 that has
# numpy, pip and setuptools, unless MGPU_REQUIRE_NUMPY is set.
#   check_python.sh BUILD_DIR SCRATCH_DIR
set -eu
repo=$(pwd)
build=$(cd "$1" && pwd)
scratch=$2
py=${MGPU_PYTHON:-}
if [ -z "$py" ]; then
  for p in python3 /usr/bin/python3; do
    if "$p" -c "import setuptools, pip, numpy" 2> /dev/null; then py=$p; break; fi
  done
fi
if [ -z "$py" ]; then
  msg="no python3 with numpy, pip and setuptools (apt-get install python3-numpy python3-pip python3-setuptools)"
  if [ -n "${MGPU_REQUIRE_NUMPY:-}" ]; then echo "check_python: $msg" >&2; exit 1; fi
  echo "skipped: $msg"
  exit 0
fi
rm -rf "$scratch"
mkdir -p "$scratch"
cp -R python "$scratch/src"
rm -rf "$scratch/src/build" "$scratch/src"/*.egg-info
# no network and no build isolation: setuptools as installed
pip_install() {
  "$py" -m pip install --quiet --no-build-isolation --no-deps --no-index --target "$1" "$scratch/src" \
    > "$scratch/pip.log" 2>&1 || { cat "$scratch/pip.log"; exit 1; }
}
echo "== pip install --target (libraries bundled from $build) with $py"
MGPU_BUILD_DIR=$build pip_install "$scratch/site"
cd "$scratch"      # so that nothing but the install provides `mgpu`
PYTHONPATH=$scratch/site MGPU_EXPECT_LIBRARY_DIR=$scratch/site/mgpu/_libs MGPU_ABI_SIZES=$build/abi_sizes \
  "$py" -m unittest discover -v -s "$repo/python/tests" 2>&1 | tee "$scratch/unittest.log"
grep -q "^OK" "$scratch/unittest.log"
echo "== an installed tree: the package without libraries, MGPU_LIBRARY_PATH set"
cmake --install "$build" --prefix "$scratch/prefix" > "$scratch/install.log"
libdir=$(dirname "$(find "$scratch/prefix" -name libmgpu_script.so.0 | head -1)")
mkdir -p "$scratch/alone"     # a fresh copy: no build beside it, none left by the first install
cp -R "$repo/python/mgpu" "$repo/python/pyproject.toml" "$repo/python/setup.py" "$repo/python/README.md" "$scratch/alone/"
(cd "$scratch/alone" && "$py" -m pip install --quiet --no-build-isolation --no-deps --no-index \
  --target "$scratch/site2" . > "$scratch/pip2.log" 2>&1) || { cat "$scratch/pip2.log"; exit 1; }
test ! -e "$scratch/site2/mgpu/_libs"
PYTHONPATH=$scratch/site2 MGPU_LIBRARY_PATH=$libdir "$py" - "$repo/python/tests/kernels.lua" <<'PY'
import sys
import numpy as np
import mgpu
from mgpu._lib import lib
add = mgpu.as_numpy_kernel(sys.argv[1], "add", block=128)
x = np.arange(256, dtype=np.float32)
assert (add(x, x) == 2 * x).all()
print("installed tree ok:", lib.directory)
PY
