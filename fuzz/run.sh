#!/bin/sh
# Build the fuzz targets (clang: libFuzzer, ASan, UBSan) into build-fuzz and
# run each for SECONDS (default 60) on its seed corpus plus what earlier runs
# found (build-fuzz/corpus).  A crash, leak, undefined behaviour, timeout or
# out-of-memory fails the run; the reproducer is left in build-fuzz/artifacts.
# FUZZ_SEED fixes libFuzzer's seed (CI uses 1, so that a CI run replays the
# mutations a longer run with that seed has already been through); unset, each
# run draws a fresh one and explores further.
#   [FUZZ_SEED=N] sh fuzz/run.sh [SECONDS] [TARGET...]   (targets: ir lua dlpack cache)
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-ir lua dlpack cache}
CC=clang cmake -S . -B build-fuzz -DMGPU_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
for t in $targets; do cmake --build build-fuzz -j2 --target fuzz_$t >/dev/null; done
mkdir -p build-fuzz/artifacts
status=0
for t in $targets; do
  mkdir -p build-fuzz/corpus/fuzz_$t
  log=build-fuzz/fuzz_$t.log
  echo "== fuzz_$t: $secs s"
  if build-fuzz/fuzz/fuzz_$t -seed="${FUZZ_SEED:-0}" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -close_fd_mask=1 \
       -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/fuzz_$t- \
       build-fuzz/corpus/fuzz_$t fuzz/corpus/fuzz_$t >"$log" 2>&1; then
    grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb" "$log" || true
  else
    tail -n 60 "$log"
    echo "fuzz_$t FAILED: reproducer in build-fuzz/artifacts (replay: build-fuzz/fuzz/fuzz_$t FILE)"
    status=1
  fi
done
exit $status
