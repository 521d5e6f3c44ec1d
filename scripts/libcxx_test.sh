#!/usr/bin/env bash
# The build and unit tests with clang and libc++ (Debian's clang, libc++-dev, libc++abi-dev), a
# proxy for Apple's toolchain: another compiler and another C++ standard library than GCC's
# libstdc++, with warnings as errors. GoogleTest is built from source against libc++
# (DETVERIFY_GTEST_FROM_SOURCE). Modules whose Debian libraries expose libstdc++ types in their
# C++ API are left out: harness/ (yaml-cpp, Boost.Filesystem), cli/ (it links the harness) and
# bench/ (Google Benchmark); on macOS Homebrew's libc++ builds of those serve (README, "macOS").
# The cuda backend is left out too: nvcc compiles its kernels with GCC and libstdc++, and CUDA is
# no part of the macOS toolchain this build stands in for.
# Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in clang++; do
  command -v "$tool" > /dev/null || {
    echo "libcxx_test.sh: $tool not found; run scripts/install_deps.sh" >&2
    exit 2
  }
done
build=build-libcxx
start=$(date +%s)
modules="base;os;engine;checkpoint;float_engine;tokenizer;gguf;fingerprint;plan;db;float_contrast;verdict;reports;attest"
tests="core;cpu_backend;layering;float_guard;reports_gate"
CXX=clang++ CC=clang cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release --no-warn-unused-cli \
  -DCMAKE_CXX_FLAGS="-stdlib=libc++" -DCMAKE_EXE_LINKER_FLAGS="-stdlib=libc++ -lc++abi" \
  -DDETVERIFY_GTEST_FROM_SOURCE=ON -DDETVERIFY_WERROR=ON -DDETVERIFY_CUDA=OFF \
  -DDETVERIFY_MODULES="$modules;$tests" > /dev/null
cmake --build "$build" -j "$(nproc)"
built=$(date +%s)
export DETVERIFY_CACHE="$PWD/$build/cache"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 1800 -L unit "$@"
echo "libcxx_test.sh: build $((built - start)) s, tests $(($(date +%s) - built)) s"
