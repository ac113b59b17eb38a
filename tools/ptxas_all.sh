#!/bin/sh
# Assemble every PTX file of a directory with ptxas for the target it names
# (.target sm_90a or sm_100a).  Fails on
# any ptxas error and on the notes that mean a feature silently did not
# take effect ("(C75..": ignored setmaxnreg, injected wgmma waits;
# "Potential Performance Loss").
#   ptxas_all.sh PTXAS DIR [WHAT]    (WHAT names the source in messages)
set -u
ptxas=$1 dir=$2 what=${3:-$2}
n=0 bad=0
for f in "$dir"/*.ptx; do
  [ -e "$f" ] || { echo "FAIL: no PTX was written for $what"; exit 1; }
  n=$((n + 1))
  arch=$(sed -n 's/^\.target \(sm_[0-9a-z]*\).*/\1/p' "$f")
  msg=$("$ptxas" -arch="$arch" -v "$f" -o "$f.cubin" 2>&1)
  rc=$?
  rm -f "$f.cubin"
  if [ $rc -ne 0 ] || echo "$msg" | grep -q -e '(C75' -e 'Potential Performance Loss'; then
    echo "FAIL: $f"; echo "$msg" | grep -v '^ptxas info    : \(Function properties\|Compiling\)' | head -20
    bad=$((bad + 1))
  fi
done
echo "$n PTX files assembled for their targets, $bad failed"
[ $bad -eq 0 ]
