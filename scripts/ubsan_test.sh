#!/usr/bin/env bash
# The integer engine under UndefinedBehaviorSanitizer: base/, engine/ (the core, the cpu backend
# at every ISA level this machine has, artifacts, generation) and their tests -- the DetLLM
# fixtures, the golden and determinism runs, the hostile artifacts at the loader's bounds -- built
# with -fsanitize=undefined -fno-sanitize-recover=all into build-ubsan, so the first signed
# overflow, out-of-range shift or misaligned access of a forward pass aborts its test. The slow
# label is left out (the 0.6B shapes take minutes under the sanitizer). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-ubsan
start=$(date +%s)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release --no-warn-unused-cli \
  -DDETVERIFY_UBSAN=ON -DDETVERIFY_WERROR=ON \
  -DDETVERIFY_MODULES="base;os;engine;core;cpu_backend" > /dev/null
cmake --build "$build" -j "$(nproc)"
built=$(date +%s)
export DETVERIFY_CACHE="$PWD/$build/cache"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 1800 -LE slow "$@"
echo "ubsan_test.sh: build $((built - start)) s, tests $(($(date +%s) - built)) s"
