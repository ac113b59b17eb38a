#!/bin/sh
# The fused attention backward (examples/attention_bwd.lua) on a GPU, in one
# go: where its step's time goes, and which of its variants are faster.
#
#   sh tools/gpu_attn_bwd.sh [profile|time]     (both by default; build/ built beforehand)
#
# profile: the fused kernel's variants in $PROF (default: the default
# alone) at 1 x 4096 x 4 x 128 bf16, one wave of 128 blocks, traced
# (profile=DIR) and broken down per warpgroup by tools/profile_phases.lua.  time: each configuration of $V128 checked
# against float64 and timed at 2 x 4096 x 16 x 128 bf16 and the same
# causal, and each of $V64 at 2 x 4096 x 32 x 64 bf16 bq=128; then per
# problem every configuration's time and its speed-up over the first (the
# kernel's default), from the batched launches.  Configurations are
# examples/attention_bwd.lua's variants=A/B/... ("-" for the default; white
# space is dropped).  Logs in $OUT (or /tmp/mgpu-attn-bwd), traces (~30 MB
# each) in $TRACES (or /tmp/mgpu-attn-bwd-traces).
set -u
cd "$(dirname "$0")/.." || exit 1
[ -x build/mgpu ] || { echo "gpu_attn_bwd: build/mgpu is missing: build first" >&2; exit 2; }
what=${1:-all}
out=${OUT:-/tmp/mgpu-attn-bwd}
traces=${TRACES:-/tmp/mgpu-attn-bwd-traces}
mkdir -p "$out"
PROF=${PROF:-"-"}
V128=${V128:-"-/depth=3"}
V64=${V64:-"-/bq=64"}
status=0

if [ "$what" != time ]; then
  log=$out/profile.log
  timeout 120 ./build/mgpu examples/attention_bwd.lua 1 4096 4 128 0 bf16 profile="$traces" variants="$PROF" > "$log" 2>&1 || status=1
  grep -E "relative error|FAILED|^mgpu:" "$log"
  sed -n 's/^\(.*\): profile \(.*\)$/\1|\2/p' "$log" | while IFS='|' read -r name trace; do
    echo "== $name"
    ./build/mgpu tools/profile_phases.lua "$trace" | tail -n +2
  done
fi

if [ "$what" != profile ]; then
  run() {   # name, then examples/attention_bwd.lua's arguments
    name=$1; shift
    log=$out/time_$name.log
    timeout 150 ./build/mgpu examples/attention_bwd.lua "$@" > "$log" 2>&1 || status=1
    echo "== $name ($*)"
    grep -E "FAILED|^mgpu:" "$log"
    # "<name>: 1.5510 ms, 443.0 TFLOP/s (one launch after an L2 flush, as do_bench: ...)"
    awk -F': ' '/ ms, .* TFLOP\/s/ {
      split($2, f, " "); ms = f[1]; tf = f[3]; sub(/^attention_bwd fused /, "", $1)
      if (first == "") first = ms
      printf "  %-58s %8.4f ms %7.1f TFLOP/s %6.3fx\n", $1, ms, tf, first / ms }' "$log"
  }
  run d128 2 4096 16 128 0 bf16 variants="$V128"
  run d128_causal 2 4096 16 128 causal bf16 variants="$V128"
  run d64_bq128 2 4096 32 64 0 bf16 bq=128 variants="$V64"
fi
exit $status
