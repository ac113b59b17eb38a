#!/bin/sh
# Nsight Compute counters of examples/matmul.lua's kernel and of cuBLAS's, one
# process, the card's own clocks (--clock-control none), through tools/bench.lua:
#   sh tools/gpu_ncu.sh [MxNxK] [matmul key=value ...]
# Prints time, clock, cycles, SMEM bank traffic, wgmma SMEM wavefronts, L2
# bytes (and their sources) and instructions per launch (bench/RESULTS.md runs 74
# and 78).
set -u
shape=${1:-4096x4096x4096}
[ $# -gt 0 ] && shift
m=./build/mgpu
command -v ncu > /dev/null || { echo "gpu_ncu: ncu (Nsight Compute) is not on PATH"; exit 1; }
metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max
metrics=$metrics,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed
metrics=$metrics,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum,lts__t_bytes.sum,smsp__inst_executed.sum
metrics=$metrics,l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum
# L2 sectors by source: the SMs' reads, and requests from the other L2 partition (run 78)
metrics=$metrics,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum
log=${OUT:-/tmp}/gpu_ncu.log
# skip the correctness calls, then two launches of each (the timing rounds alternate the kernels)
ncu --clock-control none --kernel-name regex:'^(matmul|nvjet.*|.*gemm.*)$' --launch-skip 2 --launch-count 6 \
  --metrics "$metrics" "$m" tools/bench.lua "$shape" reps=2 inner=2 warmup=4 "$@" > "$log" 2>&1
status=$?
grep -E "^ +[a-z_]|rror" "$log" | grep -v "Section\|^ *-" | sed 's/  */ /g'
exit $status
