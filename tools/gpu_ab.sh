#!/bin/sh
# Two builds of the engine on the GPU, for a change in code generation:
# processes of tools/bench.lua alternate between ./build/mgpu ("new") and
# another build's mgpu binary ("old"), each timing its matmul against cuBLAS
# in the same process, so machine drift weighs on both builds alike and the
# ratios to cuBLAS compare across processes.
#
#   sh tools/gpu_ab.sh OLD_MGPU [rounds=3] [MxNxK ...] [key=value ...]
#
# OLD_MGPU is a self-contained mgpu binary (Lua and the engine are linked in),
# e.g. from an earlier commit built in a git worktree and carried along.
# Both builds run this tree's examples/matmul.lua and tools/bench.lua, with
# the kernel cache off.  Other arguments go to tools/bench.lua (shapes,
# matmul options, also=...).  Prints every process's rows labelled with its
# build, then the mean ratio to cuBLAS per row and build.  Logs in $OUT (or
# /tmp/mgpu-ab).
set -u
cd "$(dirname "$0")/.." || exit 1
[ $# -ge 1 ] || { sed -n '8p' "$0" | sed 's/^# *//'; exit 2; }
old=$1; shift
[ -x "$old" ] || { echo "gpu_ab: $old is not an executable mgpu" >&2; exit 2; }
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
    bin=./build/mgpu
    [ "$b" = old ] && bin=$old
    log="$out/ab_${b}_$r.log"
    MGPU_CACHE=off timeout 300 "$bin" tools/bench.lua "$@" > "$log" 2>&1 || status=1
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
