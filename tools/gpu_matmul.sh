#!/bin/sh
# Matmul and pipeline checks on the GPU, with the cuBLAS/torch anchors in the
# same run:  sh tools/gpu_matmul.sh [outdir]
set -u
out=${1:-${OUT:-/tmp/mgpu-gpu}}
mkdir -p "$out"
m=./build/mgpu
t() { echo "== $*"; timeout 120 "$@" 2>&1 | tail -3; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t $m examples/matmul.lua 128 128 64
t $m examples/matmul.lua 4096 4096 4096
t $m examples/matmul.lua 4096 8192 4096
t $m examples/matmul.lua 8192 8192 8192
t $m examples/matmul.lua 4096 8192 4096 f16
for cfg in "wg_dim=N tile_n=128" "snake=4" "snake=16" "cluster=2" "cluster=2 wg_dim=N tile_n=128" "delay=1" "tile_k=32 depth=6" \
           "mwarps=1" "nobar=1" "mwarps=1 sms=66"; do
  t $m examples/matmul.lua 4096 8192 4096 bf16 $cfg
done
t $m tools/sk_check.lua 4096x4096x4096 8192x8192x8192 2304x6144x1504 runs=2 sk=1   # stream-K, whole outputs
t $m tools/sk_check.lua 4096x4096x4096 4096x8192x4096 2304x6144x1504 runs=2 sk=0   # the balanced grid, whole outputs
t $m tools/sk_check.lua 3072x3072x3072 1024x1024x4096 1024x2048x8192 runs=2   # tile widths by shape (192, 128, 128)
t $m tools/sk_check.lua 512x512x4096 512x1024x8192 1024x1024x8192 512x512x2048 runs=3   # split-K (8, 4, 2, 8)
t $m tools/tma_handover.lua   # other blocks' TMA reduce-adds, read back through TMA: exact
t $m examples/pipeline_add.lua
t $m examples/add.lua 268435456
$m --emit-ptx "$out" examples/matmul.lua 4096 8192 4096 > /dev/null 2>&1
ptxas -arch=sm_90a -v "$out/matmul.ptx" -o "$out/matmul.cubin" 2>&1 | grep -E "registers|spill|C75"
cuobjdump -sass "$out/matmul.cubin" > "$out/matmul.sass" 2>/dev/null && echo "SASS: $(grep -c HGMMA "$out/matmul.sass") HGMMA, $(grep -c UTMALDG "$out/matmul.sass") UTMALDG, $(grep -c USETMAXREG "$out/matmul.sass") USETMAXREG"
PYTHONUNBUFFERED=1 timeout 300 python3 -c "import sys; sys.path.insert(0, 'bench'); import anchors; anchors.torch_anchors()" 2>&1 | grep -E "copy|device|cuBLAS"
