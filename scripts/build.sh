#!/usr/bin/env bash
# Configures and builds detverify into build/ (Release, Ninja). Extra arguments go to CMake,
# e.g. scripts/build.sh -DDETVERIFY_WERROR=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j "$(nproc)"
