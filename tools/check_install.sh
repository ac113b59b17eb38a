#!/bin/sh
# Install the build into a scratch prefix and use it the ways a user would:
# build examples/embed.c with pkg-config and with CMake's find_package, and
# load the Lua modules under lua5.4 (C module) and LuaJIT (FFI); mgpu.help
# finds the installed API reference from each.
#   check_install.sh BUILD_DIR SCRATCH_DIR
set -eu
build=$1 scratch=$2
prefix=$scratch/prefix
rm -rf "$scratch"
mkdir -p "$scratch"
cmake --install "$build" --prefix "$prefix" > "$scratch/install.log"
libdir=$(ls -d "$prefix"/lib*/ | head -1)
libdir=${libdir%/}
echo "== pkg-config, exactly as the README says, run with no library path set"
PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_PATH
cc examples/embed.c $(pkg-config --cflags --libs mgpu) -o "$scratch/embed_pc"
env -u LD_LIBRARY_PATH "$scratch/embed_pc" examples/embed_kernels.lua 3000
cc -std=c99 -Wall -Wextra -Werror examples/embed.c $(pkg-config --cflags --libs mgpu) -o "$scratch/embed_pc_strict"
echo "== find_package"
mkdir -p "$scratch/consumer"
cp examples/embed.c "$scratch/consumer/"
cat > "$scratch/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(mgpu 0.1 REQUIRED)
add_executable(embed embed.c)
target_link_libraries(embed PRIVATE mgpu::mgpu_script m)
CM
cmake -S "$scratch/consumer" -B "$scratch/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" > "$scratch/consumer.log"
cmake --build "$scratch/consumer/build" >> "$scratch/consumer.log"
"$scratch/consumer/build/embed" examples/embed_kernels.lua 3000
echo "== lua5.4 with the installed C module"
LUA_PATH="$prefix/share/lua/5.4/?.lua;$prefix/share/lua/5.4/?/init.lua;;" \
LUA_CPATH="$libdir/lua/5.4/?.so;;" lua5.4 examples/add.lua 2000
echo "== luajit with the installed FFI module"
LUA_PATH="$prefix/share/lua/5.1/?.lua;$prefix/share/lua/5.1/?/init.lua;;" luajit examples/saxpy.lua 2000
"$prefix/bin/mgpu" --version
echo "== mgpu.help reads the installed reference (run away from the source tree)"
entry='^### `mgpu.kernel`$'
(cd "$scratch" && LUA_PATH="$prefix/share/lua/5.4/?.lua;$prefix/share/lua/5.4/?/init.lua;;" \
  LUA_CPATH="$libdir/lua/5.4/?.so;;" lua5.4 -e 'require("mgpu").help("kernel")' | grep -q "$entry")
(cd "$scratch" && LUA_PATH="$prefix/share/lua/5.1/?.lua;$prefix/share/lua/5.1/?/init.lua;;" \
  luajit -e 'require("mgpu").help("kernel")' | grep -q "$entry")
(cd "$scratch" && "$prefix/bin/mgpu" -e 'require("mgpu").help("kernel")' | grep -q "$entry")
echo "installed tree ok"
