#!/usr/bin/env bash
# engine/tools/build.sh <flavor> [ninja targets...]
#   release  : -O2, the binaries users run           -> engine/build/release
#   asan     : ASan+UBSan, -O1                        -> engine/build/asan
#   tsan     : TSan, -O1                              -> engine/build/tsan
#   fuzz     : clang + libFuzzer targets              -> engine/build/fuzz
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
flavor=${1:-release}; shift || true
build=$here/build/$flavor
args=(-G Ninja -S "$here" -B "$build")
case $flavor in
  release) args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  debug)   args+=(-DCMAKE_BUILD_TYPE=Debug) ;;
  asan)    args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDX_SANITIZE=address -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g") ;;
  tsan)    args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDX_SANITIZE=thread -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g") ;;
  fuzz)    args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DRDX_FUZZ=ON) ;;
  *) echo "unknown flavor $flavor (release|debug|asan|tsan|fuzz)" >&2; exit 2 ;;
esac
# Compiler cache outside the repo (content-addressed, in the rdx cache): a fresh clone does not recompile what any
# clone compiled before. Paths are hashed relative to the engine directory so clones at different paths share it
# (debug info then names the first clone's paths). RDX_CCACHE=0 turns it off.
if [ "${RDX_CCACHE:-1}" = 1 ] && command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-${RDX_CACHE:-$HOME/.cache/rdx}/ccache} CCACHE_BASEDIR=$here CCACHE_NOHASHDIR=true
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-4G}
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
else
  args+=(-UCMAKE_C_COMPILER_LAUNCHER -UCMAKE_CXX_COMPILER_LAUNCHER)
fi
cmake "${args[@]}" >/dev/null
ninja -C "$build" -j "${RDX_JOBS:-2}" "$@"
