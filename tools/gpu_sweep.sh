#!/bin/sh
# A configuration sweep of examples/matmul.lua and examples/pipeline_add.lua on
# the GPU, then the cuBLAS anchors in the same command:
#   sh tools/gpu_sweep.sh "M N K" ... -- "cfg" ...     (cfg: key=value lists for matmul.lua)
set -u
m=./build/mgpu
shapes=""; cfgs=""; seen=0
for a in "$@"; do
  if [ "$a" = "--" ]; then seen=1; continue; fi
  if [ $seen = 0 ]; then shapes="$shapes|$a"; else cfgs="$cfgs|$a"; fi
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
IFS='|'
for s in $shapes; do
  [ -z "$s" ] && continue
  for c in $cfgs; do
    [ -z "$c" ] && continue
    IFS=' '
    r=$(timeout 120 $m examples/matmul.lua $s bf16 $c 2>&1 | tail -2 | tr '\n' ' ')
    printf '%-16s %-32s %s\n' "$s" "$c" "$r"
    IFS='|'
  done
done
IFS=' '
for c in "rows=16 depth=4" "rows=8 depth=4" "rows=8 depth=3 per_sm=2" "rows=8 depth=2 per_sm=2" "rows=32 depth=2"; do
  echo "== pipeline_add $c"; timeout 60 $m examples/pipeline_add.lua 16384 8192 f32 $c 2>&1 | tail -4
done
PYTHONUNBUFFERED=1 timeout 300 python3 -c "import sys; sys.path.insert(0, 'bench'); import anchors; anchors.torch_anchors()" 2>&1 | grep -E "copy|cuBLAS"
