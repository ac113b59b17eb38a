#!/bin/sh
# Two builds of the engine on the GPU, for a change in code generation:
# processes of tools/bench.lua alternate between ./build/mgpu ("new") and
# another build ("old"), each timing its matmul against cuBLAS in the same
# process, so machine drift weighs on both builds alike and the ratios to
# cuBLAS compare across processes.
#
#   sh tools/gpu_ab.sh OLD [rounds=3] [MxNxK ...] [key=value ...]
#
# OLD is another checkout's directory with its build/mgpu (say, an earlier
# commit built in a git worktree and carried along): it runs its own
# tools/bench.lua and examples/matmul.lua.  Or OLD is an mgpu binary alone
# (self-contained: Lua and the engine are linked in), which runs this tree's
# scripts; its embedded Lua modules must accept what they pass.  The kernel
# cache is off.  Other arguments go to tools/bench.lua (shapes, matmul
# options, also=...).  Prints every process's rows labelled with its build,
# then the mean ratio to cuBLAS per row and build.  Logs in $OUT (or
# /tmp/mgpu-ab).
set -u
[ $# -ge 1 ] || { sed -n '8p' "$0" | sed 's/^# *//'; exit 2; }
arg=$1; shift
case $arg in /*) abs=$arg ;; *) abs=$PWD/$arg ;; esac
if [ -d "$arg" ]; then olddir=$abs old=$abs/build/mgpu; else olddir=. old=$abs; fi
[ -x "$old" ] || { echo "gpu_ab: $arg is neither a checkout with build/mgpu nor an mgpu binary" >&2; exit 2; }
cd "$(dirname "$0")/.." || exit 1
[ -x build/mgpu ] || { echo "gpu_ab: build/mgpu is missing: build first" >&2; exit 2; }
rounds=3
case ${1:-} in rounds=*) rounds=${1#rounds=}; shift ;; esac
out=${OUT:-/tmp/mgpu-ab}
mkdir -p "$out"
rows="$out/ab_rows.txt"
: > "$rows"
status=0
r=1
while [ "$r" -le "$rounds" ]; do
  for b in new old; do
    bin=./build/mgpu dir=.
    [ "$b" = old ] && bin=$old dir=$olddir
    log="$out/ab_${b}_$r.log"
    (cd "$dir" && MGPU_CACHE=off timeout 300 "$bin" tools/bench.lua "$@") > "$log" 2>&1 || status=1
    # the shape rows (ratio in column 7) and the also= rows ("+ label", ratio in column 5)
    awk -v b="$b" -v r="$r" '$1 ~ /^[0-9]+x[0-9]+x[0-9]+$/ { s = $1; print b, r, s, $7; next }
                             $1 == "+" && NF >= 5 { print b, r, s "+" $2, $5 }
                             /FAILED/ { print b, r, "FAILED:", $0 }' "$log" | tee -a "$rows"
  done
  r=$((r + 1))
done
echo "== mean ratio to cuBLAS over $rounds rounds (row, new, old, new/old)"
awk '$3 != "FAILED:" { n[$3 " " $1]++; s[$3 " " $1] += $4; rows[$3] = 1 }
     END { for (k in rows) { a = n[k " new"] ? s[k " new"] / n[k " new"] : 0; o = n[k " old"] ? s[k " old"] / n[k " old"] : 0
                             printf "%-40s %.3f %.3f %+.1f%%\n", k, a, o, (a && o) ? 100 * (a / o - 1) : 0 } }' "$rows" | sort
grep -q "FAILED" "$rows" && status=1
exit $status
