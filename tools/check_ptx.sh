#!/bin/sh
# Emit the PTX of a script's kernels (mgpu --emit-ptx) and assemble every
# file with ptxas for sm_90a (tools/ptxas_all.sh: errors and "(C75.." notes fail).
#   check_ptx.sh MGPU PTXAS OUTDIR SCRIPT [ARGS...]
set -u
mgpu=$1 ptxas=$2 out=$3
shift 3
rm -rf "$out"
mkdir -p "$(dirname "$out")"
"$mgpu" --emit-ptx "$out" "$@" > "$out.log" 2>&1 || { cat "$out.log"; echo "FAIL: mgpu --emit-ptx $*"; exit 1; }
exec sh "$(dirname "$0")/ptxas_all.sh" "$ptxas" "$out" "$*"
