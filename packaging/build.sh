#!/usr/bin/env bash
# Configures and builds into build/ (or $DUCTWORK_BUILD_DIR). Extra arguments
# go to CMake's configure step, e.g. -DDUCTWORK_ASAN=ON.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DUCTWORK_BUILD_DIR:-$root/build}
"$root/packaging/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
cmake --build "$build" -j2
