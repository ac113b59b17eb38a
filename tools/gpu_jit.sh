#!/bin/sh
# Where a cold first call's time goes, on a GPU machine: for each example,
# three fresh processes with the kernel cache and the driver's compute cache
# off print the engine's phases (MGPU_DEBUG=time: trace, passes, PTX, and the
# driver's JIT and load), then the CUDA toolkit's ptxas assembles the same
# PTX three times, so the driver's JIT and ptxas are compared on one machine.
#   sh tools/gpu_jit.sh [outdir]          (PTX and logs in outdir, default $OUT or /tmp/mgpu-jit)
set -u
command -v nvidia-smi > /dev/null || { echo "gpu_jit: no GPU here (nvidia-smi is not on PATH)"; exit 1; }
out=${1:-${OUT:-/tmp/mgpu-jit}}
mkdir -p "$out"
m=./build/mgpu
ms() { date +%s%N; }
for ex in "matmul:examples/matmul.lua 4096 4096 4096" "matmul_mma128:examples/matmul.lua 4096 4096 4096 bf16 mma=128" \
          "attention:examples/attention.lua 2 4096 16 128"; do
  name=${ex%%:*}
  args=${ex#*:}
  echo "== $name ($args)"
  for i in 1 2 3; do
    # shellcheck disable=SC2086
    CUDA_CACHE_DISABLE=1 MGPU_CACHE=off MGPU_DEBUG=time timeout 120 $m $args 2>&1 | grep -E "^trace|JIT" | tr '\n' ' '
    echo
  done
  # shellcheck disable=SC2086
  $m --emit-ptx "$out/$name" $args > /dev/null 2>&1
  if command -v ptxas > /dev/null; then
    for f in "$out/$name"/*.ptx; do
      for i in 1 2 3; do
        t0=$(ms); ptxas -arch=sm_90a "$f" -o "$f.cubin" 2> /dev/null; t1=$(ms)
        echo "ptxas $(basename "$f"): $(((t1 - t0) / 1000000)) ms"
      done
    done
  else
    echo "ptxas is not on PATH: the toolkit's side is not measured"
  fi
done
