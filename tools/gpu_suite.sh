#!/bin/sh
# The GPU suite: run on a machine with a Hopper GPU, from the repository
# root, with build/ already built (it needs no Lua, CMake or compiler
# there).  Checks every op case on the device, the examples at the sizes
# the issues name, memory safety under compute-sanitizer, the SASS of the
# add kernel, and measures the anchors (bench/anchors.py) in the same run.
#   sh tools/gpu_suite.sh [outdir]          (logs in outdir, default $OUT or /tmp/mgpu-gpu)
set -u
out=${1:-${OUT:-/tmp/mgpu-gpu}}
mkdir -p "$out"
mgpu=./build/mgpu
summary="$out/summary.txt"
: > "$summary"
row() { printf '%-44s %s\n' "$1" "$2" | tee -a "$summary"; }
check() {   # name, command...: run, log, record pass/fail
  name=$1; shift
  log="$out/$(echo "$name" | tr -c 'A-Za-z0-9._\n-' '_').log"
  if "$@" > "$log" 2>&1; then row "$name" "ok  $(tail -1 "$log")"; else row "$name" "FAIL (see $log)"; tail -5 "$log"; fi
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
$mgpu info | tee -a "$out/gpu.txt"

check "c unit tests" ./build/test_c
check "op cases on the GPU" $mgpu tools/run_cases.lua
for n in 1 1000 1048579 268435456; do
  check "add f32 n=$n" $mgpu examples/add.lua $n
  check "saxpy f32 n=$n" $mgpu examples/saxpy.lua $n
done
check "add bf16 n=268435456" $mgpu examples/add.lua 268435456 bf16
check "softmax bf16 32768x4096" $mgpu examples/softmax.lua 32768 4096
check "layernorm bf16 32768x4096" $mgpu examples/layernorm.lua 32768 4096
check "softmax bf16 1000x1024" $mgpu examples/softmax.lua 1000 1024
check "matmul_basic 256^3" $mgpu examples/matmul_basic.lua 256 256 256
check "matmul_basic 1000^3 rejected" sh -c "$mgpu examples/matmul_basic.lua 1000 1000 1000; test \$? -eq 2"
check "matmul_basic 4096^3" $mgpu examples/matmul_basic.lua 4096 4096 4096
check "matmul_basic 8192x8192x4096" $mgpu examples/matmul_basic.lua 8192 8192 4096
check "attention bf16 2x4096x16x128" $mgpu examples/attention.lua 2 4096 16 128
check "attention causal gqa lse ragged" $mgpu examples/attention.lua 2 4000 32 64 causal bf16 hkv=8 lse=1
check "attention f16 d256 lse approx=0" $mgpu examples/attention.lua 1 2048 8 256 0 f16 lse=1 approx=0
check "attention_pipeline causal pingpong" $mgpu examples/attention_pipeline.lua 2 4096 16 128 causal bf16 pingpong=1 lse=1
check "attention_bwd bf16 2x1024x16x128 causal" $mgpu examples/attention_bwd.lua 2 1024 16 128 causal
check "attention_bwd f16 gqa ragged" $mgpu examples/attention_bwd.lua 1 1000 8 64 0 f16 hkv=2 scale=0.2
# the device image has no Lua: the script layer's liblua5.4.so.0 travels in build/devlib, copied there
# on the build machine:  mkdir -p build/devlib && cp -L "$(ldd build/embed | awk '/liblua/{print $3}')" build/devlib/
if [ -e build/devlib/liblua5.4.so.0 ] || ldd ./build/embed | grep -q 'liblua.*=> /'; then
  check "embed (C, script layer)" env LD_LIBRARY_PATH="$PWD/build/devlib:${LD_LIBRARY_PATH:-}" ./build/embed examples/embed_kernels.lua 1000003
else
  row "embed (C, script layer)" "SKIPPED: no liblua5.4.so.0 here; copy it to build/devlib (see the comment above)"
fi
if command -v compute-sanitizer > /dev/null; then
  check "memcheck add n=1000003" compute-sanitizer --tool memcheck --error-exitcode 9 $mgpu examples/add.lua 1000003
  check "memcheck saxpy n=4099" compute-sanitizer --tool memcheck --error-exitcode 9 $mgpu examples/saxpy.lua 4099
  check "memcheck op cases" compute-sanitizer --tool memcheck --error-exitcode 9 $mgpu tools/run_cases.lua "views"
  check "racecheck reductions" compute-sanitizer --tool racecheck --error-exitcode 9 $mgpu tools/run_cases.lua "reduce"
  check "racecheck softmax" compute-sanitizer --tool racecheck --error-exitcode 9 $mgpu examples/softmax.lua 64 4096
  check "memcheck smem cases" compute-sanitizer --tool memcheck --error-exitcode 9 $mgpu tools/run_cases.lua "smem"
  check "racecheck smem cases" compute-sanitizer --tool racecheck --error-exitcode 9 $mgpu tools/run_cases.lua "smem"
  for pat in "^tma/" "^barrier/" "^cluster/" "^wgmma/"; do
    check "memcheck $pat cases" compute-sanitizer --tool memcheck --error-exitcode 9 $mgpu tools/run_cases.lua "$pat"
  done
  check "racecheck ^tma/ cases" compute-sanitizer --tool racecheck --error-exitcode 9 $mgpu tools/run_cases.lua "^tma/"
  # (not ^barrier/: racecheck does not follow the chain "bar.sync among the producer warpgroup, then
  # one leader's mbarrier.arrive.release", which orders the other threads' writes in the PTX memory
  # model, and reports the consumer's reads as racing with them)
fi
if command -v cuobjdump > /dev/null; then
  $mgpu --emit-ptx "$out/ptx" examples/add.lua 268435456 > /dev/null 2>&1
  ptxas -arch=sm_90a "$out/ptx/add.ptx" -o "$out/ptx/add.cubin" && cuobjdump -sass "$out/ptx/add.cubin" > "$out/add.sass"
  row "add SASS: 128-bit loads/stores" "$(grep -c 'LDG.E.128' "$out/add.sass") LDG.E.128, $(grep -c 'STG.E.128' "$out/add.sass") STG.E.128"
  $mgpu --emit-ptx "$out/ptx" examples/matmul_basic.lua 4096 > /dev/null 2>&1
  ptxas -arch=sm_90a "$out/ptx/matmul_basic.ptx" -o "$out/ptx/matmul_basic.cubin" && cuobjdump -sass "$out/ptx/matmul_basic.cubin" > "$out/matmul_basic.sass"
  row "matmul_basic SASS (cuobjdump)" "$(grep -c HGMMA "$out/matmul_basic.sass") HGMMA, $(grep -c UTMALDG "$out/matmul_basic.sass") UTMALDG"
  row "matmul_basic opcode scan" "$($mgpu tools/sass_scan.lua "$out/ptx/matmul_basic.cubin")"
fi
PYTHONUNBUFFERED=1 python3 -c "import sys; sys.path.insert(0, 'bench'); import anchors; anchors.torch_anchors()" > "$out/anchors.log" 2>&1
grep -E "copy|device|cuBLAS" "$out/anchors.log" | tee -a "$summary"

echo "== summary"; cat "$summary"
