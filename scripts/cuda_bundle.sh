#!/usr/bin/env bash
# Packs a CUDA build of detverify for a GPU machine that cannot build it: a CUDA image with nvcc,
# CMake and ninja but none of the Debian libraries detverify links (yaml-cpp, SQLite, OpenSSL,
# OpenBLAS, ICU, GoogleTest) and no package registry to install them from. The bundle holds the
# CLI, the test programs that run on the cuda backend (the cuda tests, and the model tests that
# walk EveryExecutionPath) at their build-tree paths, and every shared library they load except
# the C library and CUDA's own (the GPU machine's driver and cuBLAS are used). One xz archive
# (about 20 MB), to copy there beside the source tree; scripts/cuda_device_check.sh --bundle
# ARCHIVE runs the checks from it.
# Usage: scripts/cuda_bundle.sh [BUILD_DIR] [ARCHIVE]   (defaults: build, .device-bundle/bundle.tar.xz)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
archive="${2:-.device-bundle/bundle.tar.xz}"
# What the check runs, as it names it.
mapfile -t programs < <(scripts/cuda_device_check.sh --programs)
for p in "${programs[@]}"; do
  [ -x "$build/$p" ] || { echo "cuda_bundle: $build/$p: not built (build with DETVERIFY_CUDA=ON first)" >&2; exit 1; }
done
# (grep reads all of ldd's output: with -q it may stop first, and pipefail would then take ldd's
# SIGPIPE for a failed check.)
if ! ldd "$build/cli/detverify" | grep 'libcublasLt' > /dev/null; then
  echo "cuda_bundle: $build/cli/detverify has no cuda backend (configure with -DDETVERIFY_CUDA=ON)" >&2
  exit 1
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib"
for p in "${programs[@]}"; do
  mkdir -p "$stage/$(dirname "$p")"
  strip -o "$stage/$p" "$build/$p"
done
# The libraries the programs load, but the C library (the GPU machine's own, which must be at
# least the newest GLIBC_ version the programs name: checked there) and CUDA's.
ldd "${programs[@]/#/$build/}" | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
  case "$name" in
    libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux*) ;;
    libcuda.so* | libcudart* | libcublas* | libnvidia*) ;;
    *) cp -L "$path" "$stage/lib/$name" ;;
  esac
done
objdump -T "${programs[@]/#/$build/}" | grep -o 'GLIBC_2\.[0-9]*' | sort -uV | tail -1 > "$stage/glibc-needed"
git describe --always --dirty > "$stage/commit" 2> /dev/null || echo unknown > "$stage/commit"
mkdir -p "$(dirname "$archive")"
tar -C "$stage" -cJf "$archive" .
echo "cuda_bundle: $archive ($(du -h "$archive" | cut -f1); commit $(cat "$stage/commit"), needs $(cat "$stage/glibc-needed"))"
