#!/usr/bin/env bash
# Configures and builds detverify into build/ (Release, Ninja). Extra arguments go to CMake,
# e.g. scripts/build.sh -DDETVERIFY_WERROR=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
# nproc is GNU coreutils; macOS says hw.ncpu.
cmake --build build -j "$(nproc 2> /dev/null || sysctl -n hw.ncpu 2> /dev/null || echo 2)"
