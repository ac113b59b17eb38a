#!/bin/sh
# Faults on a real GPU (the fake driver covers them in spec/gpu_faults_spec.lua):
# a kernel that stores far past its SMEM faults, is named at the script line
# and the command exits 1; the REPL makes a fresh context after it and goes on;
# MGPU_TIMEOUT_MS ends a kernel that never finishes.  Prints one line per
# check and exits 1 if any fails.    sh tools/gpu_faults.sh
set -u
m=./build/mgpu
bad=0
check() {   # name, expected exit status, texts the output must hold (one per line), command...
  name=$1 want=$2 texts=$3; shift 3
  out=$(MGPU_CACHE=off timeout 120 "$@" 2>&1); rc=$?
  ok=yes
  [ "$rc" -eq "$want" ] || ok=no
  while IFS= read -r text; do printf '%s' "$out" | grep -qF -- "$text" || ok=no; done <<TEXTS
$texts
TEXTS
  if [ $ok = yes ]; then echo "ok    $name (exit $rc)"
  else echo "FAIL  $name (exit $rc, wanted $want and: $texts)"; printf '%s\n' "$out" | tail -8 | sed 's/^/      /'; bad=1
  fi
  printf '%s\n' "$out" | grep -E "faulted|still running|context" | head -3 | sed 's/^/      /'
}
check "an SMEM store far out of range faults" 1 "kernel 'oob' faulted" $m spec/faults/gpu_oob.lua
# (the driver keeps an illegal-instruction fault for the process's life: the REPL goes on in the interpreter)
check "the REPL says the context was lost and goes on" 0 "kernel 'oob' faulted
mgpu: the GPU context was lost
relaunch	2.0
still here" sh -c "$m < spec/faults/gpu_repl.txt"
check "after a watchdog timeout the REPL makes a fresh GPU context" 0 "was still running 500 ms after its launch
the GPU context was lost; a fresh one is ready
relaunch	2.0" sh -c "MGPU_TIMEOUT_MS=500 $m < spec/faults/gpu_spin_repl.txt"
t0=$(date +%s)
check "MGPU_TIMEOUT_MS ends a kernel that never does" 1 "kernel 'spin' was still running 500 ms after its launch" env MGPU_TIMEOUT_MS=500 $m spec/faults/spin.lua
echo "      (the watchdog run took $(( $(date +%s) - t0 )) s)"
check "a fresh process runs normally afterwards" 0 "relative error" $m examples/matmul_basic.lua 256 256 256
exit $bad
