#!/bin/sh
# The luarocks package as a user gets it: a clean clone of this repository's
# HEAD, `luarocks --lua-version 5.4 make` into a temporary tree, then plain
# lua5.4 with that tree's paths (luarocks path) runs a small kernel in the
# interpreter and mgpu.help reads the installed API reference.
#   check_rock.sh [SCRATCH_DIR]
set -eu
scratch=${1:-$(mktemp -d)}
rm -rf "$scratch/src" "$scratch/tree"
mkdir -p "$scratch"
git clone -q "$(git rev-parse --show-toplevel)" "$scratch/src"
(cd "$scratch/src" && luarocks --lua-version 5.4 make --tree="$scratch/tree" > "$scratch/make.log" 2>&1) ||
  { cat "$scratch/make.log"; exit 1; }
eval "$(luarocks --lua-version 5.4 --tree="$scratch/tree" path)"
cd "$scratch"   # away from both clones: only the tree's files load
MGPU_INTERPRET=1 lua5.4 -e '
local mgpu = require "mgpu"
local twice = mgpu.kernel{ out_shape = mgpu.shape({ 1000 }, "f32"), grid = { 1 },
  body = function(x, o) o:store(x:load() * 2) end }
local x = mgpu.random.normal({ 1000 }, "f32")
local y, xs = twice(x):to_table(), x:to_table()
for i = 1, 1000 do assert(y[i] == 2 * xs[i], "element " .. i) end
assert(package.searchpath("mgpu.core", package.cpath):find(os.getenv("PWD") .. "/tree", 1, true), "core from the tree")
print("rock: a kernel ran in the interpreter")'
lua5.4 -e 'require("mgpu").help("kernel")' | grep -q '^### `mgpu.kernel`$'
echo "rock ok"
