#!/bin/sh
# --emit-ptx at GPU sizes is compile-only: arrays are abstract (nothing is
# allocated or filled), so each run takes well under 2 s in under 1 GB of
# address space and writes its PTX files.  A sanitizer build (third argument
# "sanitized") reserves terabytes of shadow address space and runs slower: it
# gets no address-space cap and 10 s.
#   check_emit_fast.sh MGPU OUTDIR [sanitized]
set -u
mgpu=$1 out=$2 limit_ms=2000 vmem=1048576
if [ "${3:-}" = sanitized ]; then limit_ms=10000 vmem=unlimited; fi
now() { date +%s%N; }
check() {   # check NAME EXPECTED.ptx SCRIPT ARGS...
  name=$1 want=$2; shift 2
  dir="$out/$name"
  rm -rf "$dir"
  t0=$(now)
  ( ulimit -v "$vmem"; "$mgpu" --emit-ptx "$dir" "$@" ) > "$dir.log" 2>&1 || { cat "$dir.log"; echo "FAIL: mgpu --emit-ptx $dir $*"; exit 1; }
  ms=$(( ($(now) - t0) / 1000000 ))
  [ -s "$dir/$want" ] || { echo "FAIL: $dir/$want was not written"; exit 1; }
  [ "$ms" -lt "$limit_ms" ] || { echo "FAIL: mgpu --emit-ptx $* took $ms ms (limit $limit_ms)"; exit 1; }
  echo "ok: $* -> $want in $ms ms"
}
mkdir -p "$out"
check matmul matmul.ptx examples/matmul.lua 8192 8192 8192 || exit 1
check add add.ptx examples/add.lua || exit 1
check add_big add.ptx examples/add.lua 4294967296 || exit 1
