# Sourced by the multi-GPU tools (tools/bench_dist, tools/gpu_launch.sh) from
# the repository root: unless MGPU_NVSHMEM names NVSHMEM's host library, find
# it in pip's nvidia-nvshmem wheel and put its directory (its bootstrap and
# transport plugins) on the loader's path.
if [ -z "${MGPU_NVSHMEM:-}" ] && command -v python3 > /dev/null; then
  lib=$(python3 -c 'import glob, site, sys; print(next(iter(sorted(g for d in site.getsitepackages() + sys.path for g in glob.glob(d + "/nvidia/nvshmem/lib/libnvshmem_host.so*"))), ""))' 2> /dev/null)
  if [ -n "$lib" ]; then
    MGPU_NVSHMEM=$lib; export MGPU_NVSHMEM
    LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; export LD_LIBRARY_PATH
  fi
fi
