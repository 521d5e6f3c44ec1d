#!/usr/bin/env bash
# The cuda backend's checks on a machine with an NVIDIA GPU, in one run, with every log kept: a
# -Werror build for the GPU's own architecture, the cuda tests (the device GEMMs against
# MatmulI8Ref for each kernel), the whole suite except slow (compat, golden, trace, wrap rows and
# edges then run on `cuda` through EveryExecutionPath), the generate chains of cuda (its resident
# forward pass, and with DETVERIFY_CUDA_FORWARD=host-rows its host row work) against cpu on the
# built-in qwen3-0.6b model, `detverify run scenarios/quick.yaml` and `detverify bench
# --backend cuda` beside the cpu backend, and the fp16 cuBLAS float rows (generate, bench).
# Writes nvidia-smi's answer, each step's log and a summary to OUT (default
# build-cuda-check/out); the exit status is the first failure's.
# Usage: scripts/cuda_device_check.sh [OUT]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-build-cuda-check/out}}"
mkdir -p "$out"
build=build-cuda-check
summary="$out/summary.txt"
: > "$summary"
status=0
step() {  # step NAME COMMAND...: runs it, logs to OUT/NAME.log, records the outcome
  local name="$1"
  shift
  local t0=$(date +%s)
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "$name: rc $rc, $(($(date +%s) - t0)) s" | tee -a "$summary"
  [ "$rc" -ne 0 ] && [ "$status" -eq 0 ] && status=$rc
  return $rc
}
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi: not found or failed" >> "$summary"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -1 | tr -d '.')
step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDETVERIFY_WERROR=ON \
  -DDETVERIFY_CUDA=ON ${arch:+-DCMAKE_CUDA_ARCHITECTURES=$arch} || { cat "$summary"; exit 1; }
step build cmake --build "$build" -j "$(nproc)" || { cat "$summary"; exit 1; }
export DETVERIFY_CACHE="$PWD/$build/cache"
step ctest-cuda ctest --test-dir "$build" -L cuda --output-on-failure
step ctest-all ctest --test-dir "$build" -LE slow -j "$(nproc)" --output-on-failure --timeout 900
bin="$build/cli/detverify"
prompt=$(seq -s, 1 64)
for backend in cpu cuda cuda-host-rows; do
  for batch in 1 8; do
    # cuda-host-rows: the cuda backend with its row work on the host (DETVERIFY_CUDA_FORWARD).
    forward=resident
    [ "$backend" = cuda-host-rows ] && forward=host-rows
    step "generate-$backend-b$batch" env DETVERIFY_CUDA_FORWARD="$forward" "$bin" generate \
      --backend "${backend%-host-rows}" --preset qwen3-0.6b --prompt-ids "$prompt" --max-new 64 \
      --batch "$batch" --co-prompts random
  done
done
# Every generate row prints the same chain, or the backend is not bit-identical.
chains=$(awk '/^logits chain/ {print $NF}' "$out"/generate-*.log | sort -u | wc -l)
echo "generate: $chains distinct logits chains over cpu/cuda x b1/b8 (must be 1)" | tee -a "$summary"
[ "$chains" -eq 1 ] || status=1
step run-quick "$bin" run scenarios/quick.yaml --db "$out/results.sqlite"
step bench-cuda "$bin" bench --preset qwen3-0.6b --backend cuda --repeats 3
step bench-cuda-host-rows env DETVERIFY_CUDA_FORWARD=host-rows "$bin" bench --preset qwen3-0.6b \
  --backend cuda --repeats 1 --scaling off
step bench-cpu "$bin" bench --preset qwen3-0.6b --backend cpu --repeats 3
# The fp16 cuBLAS contrast: the float engine's GEMMs on the GPU, batch 1 and 8 (chains expected
# to differ between them; recorded, never judged), and its bench beside the int8 rows'.
for batch in 1 8; do
  step "float-generate-fp16-cuda-b$batch" "$bin" generate --engine float --backend cuda \
    --preset qwen3-0.6b --prompt-ids "$prompt" --max-new 64 --batch "$batch" --co-prompts random
done
step float-bench-fp16-cuda "$bin" bench --engine float --preset qwen3-0.6b --backend cuda \
  --prefill 64 --decode-batch 1,8 --repeats 1 --scaling off
cat "$summary"
exit "$status"
