#!/usr/bin/env bash
# The cuda backend's checks on a machine with an NVIDIA GPU, in one run, with every log kept: the
# cuda tests (the device GEMMs against MatmulI8Ref for each kernel, the resident forward pass
# against the reference), the generate chains of cuda (its resident forward pass, and with
# DETVERIFY_CUDA_FORWARD=host-rows its host row work) against cpu on the built-in qwen3-0.6b
# model, `detverify bench --backend cuda` for both passes, the fp16 cuBLAS float rows (generate,
# bench), the demo's GPU rows beside its cpu row, the model tests (compat, golden, trace, wrap
# rows, edges then run on `cuda` through EveryExecutionPath), `detverify run
# scenarios/quick.yaml`, short cuda benches at step-kernel widths 256 and 512
# (DETVERIFY_CUDA_STEP_THREADS), and the cpu backend's bench on the same machine. The most
# telling checks run first; each step gets what is left of the time budget, so a run that is cut
# short still returns its logs.
#
# Two ways to get the programs:
#   --bundle ARCHIVE  run a build packed by scripts/cuda_bundle.sh (for a CUDA image with nvcc,
#                     CMake and ninja but not the Debian libraries detverify links, and no
#                     package registry: it cannot build detverify)
#   (default)         a -Werror build for the GPU's own architecture into build-cuda-check/, on a
#                     machine that has scripts/install_deps.sh's packages; then the whole suite
#                     but slow labels runs too
# Writes summary.txt, nvidia-smi.txt and logs.tar.gz (each step's log, the scenario's DB) to OUT
# (default build-cuda-check/out, or $OUT: three files, little to copy back from the GPU machine);
# the exit status is the first failure's.
# Usage: scripts/cuda_device_check.sh [--bundle ARCHIVE] [--budget SECONDS] [OUT]
#        scripts/cuda_device_check.sh --programs   (what it runs, at build-tree paths; the bundle's)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# The test programs it runs: the cuda tests, then the model tests that walk every execution path.
cuda_tests=(tests/cuda_backend/cuda_backend_test tests/float_engine/float_cuda_test)
model_tests=()
for t in compat golden llama_golden trace wrap_rows row_ops_edges hostile_artifact logit_scale \
  determinism device_forward; do
  model_tests+=("tests/engine/test_$t")
done
bundle="" budget=540 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    --programs) printf '%s\n' cli/detverify "${cuda_tests[@]}" "${model_tests[@]}"; exit 0 ;;
    -h | --help) sed -n '2,/^# *scripts.cuda_device_check.sh --programs/p' "$0"; exit 0 ;;
    *) out="$1"; shift ;;
  esac
done
out="${out:-${OUT:-build-cuda-check/out}}"
mkdir -p "$out" && out=$(cd "$out" && pwd)
summary="$out/summary.txt"
: > "$summary"
logs="${TMPDIR:-/tmp}/detverify-check-logs"
rm -rf "$logs" && mkdir -p "$logs"
trap 'tar -C "$logs" -czf "$out/logs.tar.gz" .' EXIT
status=0
deadline=$(($(date +%s) + budget))
step() {  # step NAME COMMAND...: runs it within the time left, logs to OUT/NAME.log
  local name="$1"
  shift
  local t0 left rc
  t0=$(date +%s)
  left=$((deadline - t0))
  if [ "$left" -le 5 ]; then
    echo "$name: not run (the ${budget} s budget is spent)" | tee -a "$summary"
    return 124
  fi
  timeout --kill-after=5 "$left" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  echo "$name: rc $rc, $(($(date +%s) - t0)) s$([ "$rc" -eq 124 ] && echo ' (out of time)')" |
    tee -a "$summary"
  [ "$rc" -ne 0 ] && [ "$status" -eq 0 ] && status=$rc
  return $rc
}
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi: not found or failed" >> "$summary"

if [ -n "$bundle" ]; then
  root="${TMPDIR:-/tmp}/detverify-bundle"
  rm -rf "$root" && mkdir -p "$root"
  step unpack tar -C "$root" -xJf "$bundle" || exit 1
  # The GPU machine's C library must be at least the one the programs were linked for.
  have=$(ldd --version 2> /dev/null | head -1 | grep -o '[0-9]*\.[0-9]*$')
  need=$(sed 's/GLIBC_//' "$root/glibc-needed")
  echo "bundle: commit $(cat "$root/commit"), C library $have here, $need needed" | tee -a "$summary"
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    echo "bundle: this machine's C library is older than the bundle needs" | tee -a "$summary"
    exit 1
  fi
  # CUDA's libraries from the machine: the toolkit's, else the PyPI wheels'.
  cuda_libs=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
    $(python3 -c 'import nvidia, os; [print(os.path.join(p, "cu13", "lib")) for p in nvidia.__path__]' 2> /dev/null) \
    $(python3 -c 'import nvidia.cublas, os; [print(os.path.join(p, "lib")) for p in nvidia.cublas.__path__]' 2> /dev/null); do
    [ -e "$d/libcublasLt.so.13" ] && cuda_libs="$cuda_libs:$d"
  done
  export LD_LIBRARY_PATH="$root/lib$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  bin="$root/cli/detverify"
  tests="$root"
  step libraries ldd "$bin" "$root/tests/cuda_backend/cuda_backend_test"
  grep -q 'not found' "$logs/libraries.log" && { status=1; echo "libraries: some not found" | tee -a "$summary"; }
else
  build="build-cuda-check"
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -1 | tr -d '.')
  step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDETVERIFY_WERROR=ON \
    -DDETVERIFY_CUDA=ON ${arch:+-DCMAKE_CUDA_ARCHITECTURES=$arch} || exit 1
  step build cmake --build "$build" -j "$(nproc)" || exit 1
  bin="$build/cli/detverify"
  tests="$build"
fi
export DETVERIFY_CACHE="${DETVERIFY_CACHE:-${TMPDIR:-/tmp}/detverify-check-cache}"
export DETVERIFY_SOURCE_DIR="$PWD" DETVERIFY_BINARY_DIR="$tests" DETVERIFY_SHARED_DIR="$PWD/../shared"
gtest() {  # gtest PROGRAM: one test program, its summary lines kept, logged as its name
  step "$(basename "$1")" "$tests/$1" --gtest_brief=1
}
for t in "${cuda_tests[@]}"; do gtest "$t"; done

prompt=$(seq -s, 1 64)
backends=(cpu cuda cuda-host-rows) batches=(1 8)
for backend in "${backends[@]}"; do
  for batch in "${batches[@]}"; do
    # cuda-host-rows: the cuda backend with its row work on the host (DETVERIFY_CUDA_FORWARD).
    forward=resident
    [ "$backend" = cuda-host-rows ] && forward=host-rows
    step "generate-$backend-b$batch" env DETVERIFY_CUDA_FORWARD="$forward" "$bin" generate \
      --backend "${backend%-host-rows}" --preset qwen3-0.6b --prompt-ids "$prompt" --max-new 64 \
      --batch "$batch" --co-prompts random
  done
done
# Every generate row prints the same chain, or the backend is not bit-identical.
want=$((${#backends[@]} * ${#batches[@]}))
rows=$(grep -l '^logits chain' "$logs"/generate-*.log 2> /dev/null | wc -l)
chains=$(awk '/^logits chain/ {print $NF}' "$logs"/generate-*.log | sort -u | wc -l)
echo "generate: $rows of $want rows gave a chain, $chains distinct (must be $want and 1)" |
  tee -a "$summary"
[ "$rows" -eq "$want" ] && [ "$chains" -eq 1 ] || status=1
step bench-cuda "$bin" bench --preset qwen3-0.6b --backend cuda --repeats 3
step bench-cuda-host-rows env DETVERIFY_CUDA_FORWARD=host-rows "$bin" bench --preset qwen3-0.6b \
  --backend cuda --repeats 1 --scaling off
# The fp16 cuBLAS contrast: the float engine's GEMMs on the GPU, batch 1 and 8 (chains expected
# to differ between them; recorded, never judged), and its bench beside the int8 rows'.
for batch in 1 8; do
  step "float-generate-fp16-cuda-b$batch" "$bin" generate --engine float --backend cuda \
    --preset qwen3-0.6b --prompt-ids "$prompt" --max-new 64 --batch "$batch" --co-prompts random
done
step float-bench-fp16-cuda "$bin" bench --engine float --preset qwen3-0.6b --backend cuda \
  --prefill 64 --decode-batch 1,8 --repeats 1 --scaling off
# The demo's GPU rows beside its batch-1 cpu row (512 steps on the prepared built-in model): the
# int8-cuda rows must show the cpu row's hash; the fp16 rows are the float contrast.
step demo-gpu-rows "$bin" run scenarios/demo.yaml --db "$logs/demo.sqlite" --config int8-cpu-b1 \
  --config int8-cuda-b1 --config int8-cuda-b8 --config int8-cuda-split --config fp16-cuda-b1 \
  --config fp16-cuda-b8 --config fp16-cuda-split
# The model tests, each walking every execution path (cuda's included), side by side.
pids=()
for t in "${model_tests[@]}"; do
  gtest "$t" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { [ "$status" -eq 0 ] && status=1; }; done
step run-quick "$bin" run scenarios/quick.yaml --db "$logs/results.sqlite"
# The step kernels' block width, the first knob of the resident pass's speed (the same bits at
# any width; cuda_backend_test's CudaResidentWidths checks 32 and 512 above).
for threads in 256 512; do
  step "bench-cuda-step-threads-$threads" env DETVERIFY_CUDA_STEP_THREADS="$threads" "$bin" bench \
    --preset qwen3-0.6b --backend cuda --prefill 64 --decode-batch 1,8 --repeats 1 --scaling off
done
if [ -z "$bundle" ]; then
  step ctest-all ctest --test-dir "$build" -LE slow -j "$(nproc)" --output-on-failure --timeout 900
fi
step bench-cpu "$bin" bench --preset qwen3-0.6b --backend cpu --repeats 1 --scaling off
echo "cuda device check: exit status $status (logs in $out/logs.tar.gz)" | tee -a "$summary"
exit "$status"
