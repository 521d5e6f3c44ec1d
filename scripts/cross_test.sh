#!/usr/bin/env bash
# Cross-ISA proof: builds the engine, detverify-engine and the engine tests marked CROSS (golden,
# compat, trace, determinism, artifact, synth; label cross) for ARCH with Debian's cross compiler
# (cmake/toolchains/<triplet>.cmake, static binaries) into build-cross-ARCH, and runs them under
# qemu-user. The golden hashes and the DetLLM fixtures' per-step hashes these tests pin are the
# ones every x86-64 path gives.
# Needs scripts/install_deps.sh --with-cross. Extra arguments go to ctest.
# Usage: scripts/cross_test.sh aarch64|s390x [ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

arch="${1:-}"
case "$arch" in
  aarch64) triplet=aarch64-linux-gnu; isas=(scalar neon neondot) ;;
  s390x) triplet=s390x-linux-gnu; isas=(scalar) ;;
  *) echo "usage: scripts/cross_test.sh aarch64|s390x [ctest arguments]" >&2; exit 2 ;;
esac
shift
for tool in "$triplet-g++" "qemu-$arch"; do
  command -v "$tool" > /dev/null || {
    echo "cross_test.sh: $tool not found; run scripts/install_deps.sh --with-cross" >&2
    exit 2
  }
done

build="build-cross-$arch"
start=$(date +%s)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release --no-warn-unused-cli \
  -DCMAKE_TOOLCHAIN_FILE="cmake/toolchains/$triplet.cmake" \
  -DDETVERIFY_ENGINE_ONLY=ON -DDETVERIFY_WERROR=ON > /dev/null
cmake --build "$build" -j "$(nproc)"
built=$(date +%s)
# Its own cache: this architecture's binary synthesizes the synthetic model itself, and the golden
# test checks the bytes it wrote.
export DETVERIFY_CACHE="$PWD/$build/cache"
rm -rf "$DETVERIFY_CACHE"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 900 "$@"
# The engine binary end to end, as `detverify run` launches it: the golden run (test_golden.cc)
# on each execution path, which must all give one chain.
chains=()
for path in reference "${isas[@]/#/cpu/}"; do
  isa=""
  [ "$path" = reference ] || isa="${path#cpu/}"
  chain=$(DETVERIFY_CPU_ISA="$isa" qemu-"$arch" "$build/cli/detverify-engine" generate \
    --preset qwen3-tiny --seed 0 --prompt-ids 1,2,3,4,5,6,7,8 --max-new 64 --backend "${path%%/*}" |
    sed -n 's/^logits chain *//p')
  echo "cross_test.sh: $arch $path: logits chain $chain"
  chains+=("$chain")
done
if [ "$(printf '%s\n' "${chains[@]}" | sort -u | wc -l)" -ne 1 ]; then
  echo "cross_test.sh: $arch: the execution paths disagree" >&2
  exit 1
fi
done_at=$(date +%s)
echo "cross_test.sh: $arch: build $((built - start)) s, tests $((done_at - built)) s"
