#!/bin/sh
# The Python package on a GPU machine (python3 with torch and a CUDA GPU; no
# Lua, CMake or compiler needed), from the repository root with build/ built:
# installs python/ into a scratch target (pip, no network; PYTHONPATH=python
# when pip cannot build it), then runs the package's tests (torch tensors on
# a GPU; numpy in the interpreter), the GPU tests under compute-sanitizer,
# examples/torch_add.py, examples/torch_attention.py (checked against SDPA,
# timed against its cuDNN backend) and bench/python_overhead.py, and prints a
# PASS/FAIL table.  Exits 1 when anything failed.
#   sh tools/gpu_python.sh [outdir]         (logs in outdir, default $OUT or /tmp/mgpu-python)
# The script layer needs liblua5.4.so.0: where the image has none, copy it to
# build/devlib on the build machine (see tools/gpu_suite.sh).
set -eu
cd "$(dirname "$0")/.."
repo=$(pwd)
out=${1:-${OUT:-/tmp/mgpu-python}}
py=${PYTHON:-python3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: > "$summary"
failed=0
row() { printf '%-46s %s\n' "$1" "$2" | tee -a "$summary"; }
check() {   # name, command...: run with its log in $out, then a PASS or FAIL row with the log's last line
  name=$1; shift
  log="$out/$(echo "$name" | tr -c 'A-Za-z0-9._\n-' '_').log"
  if "$@" > "$log" 2>&1; then
    row "$name" "PASS  $(tail -1 "$log")"
  else
    row "$name" "FAIL  (see $log)"
    tail -15 "$log"
    failed=1
  fi
}

for f in build/libmgpu.so.0 build/libmgpu_script.so.0; do
  if [ ! -e "$f" ]; then echo "gpu_python: $f is missing: build the engine first"; exit 1; fi
done
if [ -e build/devlib/liblua5.4.so.0 ]; then
  LD_LIBRARY_PATH="$repo/build/devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
fi
if ! "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" > /dev/null 2>&1; then
  echo "gpu_python: $py has no torch with a CUDA device"; exit 1
fi
"$py" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())" | tee "$out/device.txt"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$out/device.txt"

# the package: pip into a scratch target with build/'s libraries, else the source tree
site=$out/site
rm -rf "$site" "$out/src"
cp -R python "$out/src"
rm -rf "$out/src/build" "$out/src"/*.egg-info
if MGPU_BUILD_DIR="$repo/build" "$py" -m pip install --no-build-isolation --no-deps --no-index --target "$site" \
     "$out/src" > "$out/pip.log" 2>&1; then
  row "install (pip --target, build/'s libraries)" "PASS  $site"
  PYTHONPATH=$site
  unset MGPU_LIBRARY_PATH || true
else
  row "install (pip --target)" "not possible (see $out/pip.log): PYTHONPATH=python, MGPU_LIBRARY_PATH=build"
  PYTHONPATH=$repo/python
  MGPU_LIBRARY_PATH=$repo/build
  export MGPU_LIBRARY_PATH
fi
export PYTHONPATH
check "import mgpu" "$py" -c "import mgpu; from mgpu._lib import lib; print('mgpu', mgpu.__version__, 'libraries in', lib.directory)"

cd "$out"    # nothing but the install provides `mgpu`
check "unittest: torch on the GPU, numpy interpreted" env MGPU_ABI_SIZES="$repo/build/abi_sizes" \
  "$py" -m unittest discover -v -s "$repo/python/tests"
if command -v compute-sanitizer > /dev/null; then
  check "compute-sanitizer memcheck: GPU tests" env MGPU_UNDER_SANITIZER=1 PYTHONPATH="$PYTHONPATH:$repo/python/tests" \
    compute-sanitizer --tool memcheck --error-exitcode 9 "$py" -m unittest -v test_torch.TorchGPU
  check "compute-sanitizer memcheck: torch_attention" compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$py" "$repo/examples/torch_attention.py" 1 512 2 128 causal
  check "compute-sanitizer racecheck: torch_add" compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$py" "$repo/examples/torch_add.py" 1000003
else
  row "compute-sanitizer" "SKIPPED: not on PATH"
fi
cd "$repo"
check "examples/torch_add.py (2^26 f32)" "$py" examples/torch_add.py
check "examples/torch_add.py (1000003 bf16)" "$py" examples/torch_add.py 1000003 bfloat16
for shape in "2 4096 16 128" "2 4096 16 128 causal" "2 4096 32 64" "1 4000 32 64 causal kv_heads=8"; do
  # shellcheck disable=SC2086
  check "examples/torch_attention.py $shape" "$py" examples/torch_attention.py $shape
done
check "bench/python_overhead.py" "$py" bench/python_overhead.py

echo "== timing and overhead"
grep -h "ms\|/ cuDNN" "$out"/examples_torch_a*.log | grep -v relative || true
cat "$out/bench_python_overhead.py.log"
echo "== summary ($out)"
cat "$summary"
exit $failed
