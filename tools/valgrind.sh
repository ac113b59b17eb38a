#!/bin/sh
# tools/valgrind.sh BUILD_DIR: the C unit tests, the script-embedding test and
# the embed example under valgrind's memcheck, in interpret mode (no GPU) and
# against the fake CUDA driver.  Fails on any memcheck error or definite leak.
# The 1-ulp PTX math checks stand down under valgrind: its long double is a
# double (they say so).  About 3 minutes on 2 cores.
set -eu
build=${1:?usage: tools/valgrind.sh BUILD_DIR}
cd "$(dirname "$0")/.."
export MGPU_INTERPRET=1 MGPU_FAKE_CUDA="$build/libfake_cuda.so"
vg() {
  echo "== valgrind $*"
  # --fair-sched=yes: round-robin threads; valgrind's default lets one thread
  # starve another, and test_threads needs two that run at once
  valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --show-leak-kinds=definite "$@"
}
vg "$build/test_c"
vg "$build/script_test"
vg "$build/embed" examples/embed_kernels.lua 1000
