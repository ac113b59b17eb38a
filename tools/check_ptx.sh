#!/bin/sh
# Emit the PTX of a script's kernels (mgpu --emit-ptx) and assemble every
# file with ptxas for the target it names (.target sm_90a or sm_100a; mgpu flags such as
# --target go before the script; tools/ptxas_all.sh: errors and "(C75.." notes fail).
#   check_ptx.sh MGPU PTXAS OUTDIR SCRIPT [ARGS...]
set -u
mgpu=$1 ptxas=$2 out=$3
shift 3
rm -rf "$out"
mkdir -p "$(dirname "$out")"
"$mgpu" --emit-ptx "$out" "$@" > "$out.log" 2>&1 || { cat "$out.log"; echo "FAIL: mgpu --emit-ptx $*"; exit 1; }
exec sh "$(dirname "$0")/ptxas_all.sh" "$ptxas" "$out" "$*"
