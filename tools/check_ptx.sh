#!/bin/sh
# Emit the PTX of a script's kernels (mgpu --emit-ptx) and assemble every
# file with ptxas for the target it names (.target sm_90a or sm_100a; mgpu
# flags such as --target go before the script).  Fails on any ptxas error and on the notes
# that mean a feature silently did not take effect ("(C75..": ignored
# setmaxnreg, injected wgmma waits; "Potential Performance Loss").
#   check_ptx.sh MGPU PTXAS OUTDIR SCRIPT [ARGS...]
set -u
mgpu=$1 ptxas=$2 out=$3
shift 3
rm -rf "$out"
mkdir -p "$(dirname "$out")"
"$mgpu" --emit-ptx "$out" "$@" > "$out.log" 2>&1 || { cat "$out.log"; echo "FAIL: mgpu --emit-ptx $*"; exit 1; }
n=0 bad=0
for f in "$out"/*.ptx; do
  [ -e "$f" ] || { echo "FAIL: no PTX was written for $*"; exit 1; }
  n=$((n + 1))
  arch=$(sed -n 's/^\.target \(sm_[0-9a-z]*\).*/\1/p' "$f")
  msg=$("$ptxas" -arch="$arch" -v "$f" -o "$f.cubin" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || echo "$msg" | grep -q -e '(C75' -e 'Potential Performance Loss'; then
    echo "FAIL: $f"; echo "$msg" | grep -v '^ptxas info    : \(Function properties\|Compiling\)' | head -20
    bad=$((bad + 1))
  fi
done
echo "$n PTX files assembled for their targets, $bad failed"
[ $bad -eq 0 ]
