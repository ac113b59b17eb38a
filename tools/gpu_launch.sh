#!/bin/sh
# Jobs started by launchers on a machine with 2 GPUs (spec/launcher_spec.lua
# covers them on a stand-in GPU and NVSHMEM): torchrun runs ./build/mgpu as
# each of its workers, which joins the job through torchrun's TCP store (its
# static rendezvous, then --standalone), through MGPU_RENDEZVOUS_FILE, and with
# the variables srun and Open MPI's mpirun set (neither is needed here: they
# are set by hand, and the ranks meet in a file in /tmp); a rank whose rank 0
# never comes ends at MGPU_RENDEZVOUS_TIMEOUT.  `mgpu -n 2` runs first, for
# comparison.  Prints one line per check, then PASS or FAIL.
#
#   sh tools/gpu_launch.sh        (uses build/ as it is; torch gives torchrun)
#
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0, NVSHMEM_DISABLE_NVLS=1).
set -u
cd "$(dirname "$0")/.." || exit 1
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
. tools/nvshmem_env.sh
m=./build/mgpu
[ -x $m ] || { echo "gpu_launch: $m is missing: build first" >&2; exit 1; }
if command -v torchrun > /dev/null; then torchrun="torchrun"; else torchrun="python3 -m torch.distributed.run"; fi
echo "torch $(python3 -c 'import torch; print(torch.__version__)' 2>&1 | tail -1); NVSHMEM: ${MGPU_NVSHMEM:-(on the loader's path)}"
nvidia-smi -L 2> /dev/null | head -4
bad=0
check() {   # name, expected exit status, texts the output must hold (one per line), command...
  name=$1 want=$2 texts=$3; shift 3
  t0=$(date +%s)
  out=$("$@" 2>&1); rc=$?
  ok=yes
  [ "$rc" -eq "$want" ] || ok=no
  while IFS= read -r text; do printf '%s' "$out" | grep -qF -- "$text" || ok=no; done <<TEXTS
$texts
TEXTS
  if [ $ok = yes ]; then echo "ok    $name (exit $rc, $(( $(date +%s) - t0 )) s)"
  else echo "FAIL  $name (exit $rc, wanted $want and: $texts)"; printf '%s\n' "$out" | tail -12 | sed 's/^/      /'; bad=1
  fi
  printf '%s\n' "$out" | grep -E "GB/s" | sed 's/^/      /'
}

# Both ranks of a job whose variables are those `launcher` (srun or mpirun) sets, started by hand; the mgpu arguments follow.
pair() {
  launcher=$1; shift
  d=$(mktemp -d)
  for r in 0 1; do
    if [ "$launcher" = srun ]; then
      vars="SLURM_STEP_ID=0 SLURM_PROCID=$r SLURM_LOCALID=$r SLURM_STEP_NUM_TASKS=2 SLURM_NTASKS=2 SLURM_STEP_NUM_NODES=1 SLURM_JOB_ID=launch$$"
    else
      vars="OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_SIZE=2 PMIX_NAMESPACE=launch$$"
    fi
    # shellcheck disable=SC2086
    (env $vars timeout 300 $m "$@" > "$d/out$r" 2>&1; echo $? > "$d/rc$r") &
  done
  wait
  cat "$d/out0" "$d/out1"
  rc=$(( $(cat "$d/rc0") + $(cat "$d/rc1") ))
  rm -rf "$d"
  [ $rc -eq 0 ]
}

gathered="device 0 of 2: all-gather of 8192x4096 bf16 per device: max rel. error 0
device 1 of 2: all-gather of 8192x4096 bf16 per device: max rel. error 0"
check "mgpu -n 2 examples/allgather.lua (for comparison)" 0 "$gathered" timeout 300 $m -n 2 examples/allgather.lua
check "torchrun --no-python --nproc-per-node 2 ./build/mgpu examples/allgather.lua" 0 "$gathered" \
  timeout 300 $torchrun --no-python --nproc-per-node 2 $m examples/allgather.lua
check "torchrun ... ./build/mgpu examples/reduce_scatter.lua" 0 "device 0 of 2: reduce-scatter of
device 1 of 2: reduce-scatter of" timeout 300 $torchrun --no-python --nproc-per-node 2 $m examples/reduce_scatter.lua
check "torchrun --standalone (c10d rendezvous, a free port)" 0 "$gathered" \
  timeout 300 $torchrun --standalone --no-python --nproc-per-node 2 $m examples/allgather.lua
dir=$(mktemp -d)
check "torchrun with MGPU_RENDEZVOUS_FILE" 0 "$gathered" \
  env MGPU_RENDEZVOUS_FILE="$dir/uid" timeout 300 $torchrun --no-python --nproc-per-node 2 $m examples/allgather.lua
if [ -e "$dir/uid" ]; then echo "FAIL  rank 0 left the rendezvous file $dir/uid"; bad=1; fi
rm -rf "$dir"
check "srun's variables (set by hand): the ranks meet in /tmp" 0 "$gathered" pair srun examples/allgather.lua
check "Open MPI's variables (set by hand): the ranks meet in /tmp" 0 "$gathered" pair mpirun examples/allgather.lua
check "a rank whose rank 0 never comes stops at MGPU_RENDEZVOUS_TIMEOUT" 1 "distributed.init: the ranks of torchrun could not meet
in time" env WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29599 MGPU_RENDEZVOUS_TIMEOUT=5 \
  timeout 60 $m examples/allgather.lua
if [ $bad = 0 ]; then echo PASS; else echo FAIL; fi
exit $bad
