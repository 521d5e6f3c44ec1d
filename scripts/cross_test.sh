#!/usr/bin/env bash
# Cross-ISA proof: builds the engine, checkpoint and prepare modules, detverify-engine and the
# tests marked CROSS (golden, compat, trace, determinism, artifact, synth, checkpoint, prepare;
# label cross) for ARCH with Debian's cross compiler (cmake/toolchains/<triplet>.cmake, static
# binaries) into build-cross-ARCH, and runs them under qemu-user. The golden hashes, the DetLLM
# fixtures' per-step hashes and the prepared artifacts' SHA-256 these tests pin are the ones every
# x86-64 path gives. Then the binary end to end: generate on every execution path, and prepare of
# a synthetic checkpoint, whose model.safetensors must have the x86-64 SHA-256.
# Needs scripts/install_deps.sh --with-cross. Extra arguments go to ctest.
# Usage: scripts/cross_test.sh aarch64|s390x [ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

arch="${1:-}"
case "$arch" in
  aarch64) triplet=aarch64-linux-gnu; isas=(scalar neon neondot); fma='fn?m(add|sub)|fml[as]' ;;
  s390x) triplet=s390x-linux-gnu; isas=(scalar) ;
    fma='[vw]fn?m[as]([ds]b)?|m[as][de]br|m[as][de]b' ;;
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
# prepare of the synthetic qwen3-tiny checkpoint with the built-in calibration: the same bytes as
# on x86-64 at every GEMM level (tests/prepare/prepare_golden_test.cc pins them).
want=d9b6b5228f8679aeb1598bd3364a7078dfbc0285ba24b30a199797d17f4ec8bd
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
qemu-"$arch" "$build/cli/detverify-engine" synth --format hf --preset qwen3-tiny --out "$work/hf" > /dev/null
got=$(qemu-"$arch" "$build/cli/detverify-engine" prepare --hf "$work/hf" --out "$work/int8" \
  --model-id qwen3-tiny --quiet 2> /dev/null | sed -n 's|  .*/model.safetensors$||p')
echo "cross_test.sh: $arch prepare qwen3-tiny: model.safetensors $got"
if [ "$got" != "$want" ]; then
  echo "cross_test.sh: $arch: prepare gives $got, x86-64 gives $want" >&2
  exit 1
fi
# No fused multiply-add in dv_prepare's object code for this architecture either (the x86-64
# build's prepare_object_code_test reads its own).
if "$triplet-objdump" -d --no-show-raw-insn "$build/prepare/libdv_prepare.a" |
    awk -F'\t' 'NF >= 2 {print $2}' | awk '{print $1}' | grep -Eqx "$fma"; then
  echo "cross_test.sh: $arch: fused multiply-add instructions in dv_prepare:" >&2
  "$triplet-objdump" -d --no-show-raw-insn "$build/prepare/libdv_prepare.a" |
    awk -F'\t' 'NF >= 2 {print $2}' | awk '{print $1}' | grep -Ex "$fma" | sort | uniq -c >&2
  exit 1
fi
done_at=$(date +%s)
echo "cross_test.sh: $arch: build $((built - start)) s, tests $((done_at - built)) s"
