#!/usr/bin/env bash
# libFuzzer campaigns (tests/fuzz/README.md): builds the fuzz targets with clang, ASan and UBSan
# into build-fuzz/ (-DDETVERIFY_FUZZ=ON), then runs each named target (all by default) for a
# number of seconds and/or executions over a working copy of its corpus (the checked-in seeds,
# plus the repository's own test files of that format), with its dictionary.
#
#   scripts/fuzz.sh [--seconds N] [--runs N] [--max-len BYTES] [--jobs N] [--build-dir DIR]
#                   [--build-only] [--run-only] [TARGET...]
#   TARGET: safetensors artifact hf_config gguf scenario db dsse tokenizer_json tokenizer_encode
#
# --max-len bounds the inputs libFuzzer makes (default 4096: every header and document format
# here is exercised within it, and short inputs keep the executions per second high).
# Each run's log goes to DIR/fuzz-logs/<target>.log and ends with libFuzzer's statistics
# (stat::number_of_executed_units, peak RSS). A crash, leak, timeout (-timeout, 10 s) or
# out-of-memory (-rss_limit_mb, 2048) stops the run and leaves the input in DIR/fuzz-crashes/;
# the script then exits 1. Copy such an input into tests/fuzz/corpus/<target>/ once fixed: the
# ordinary build replays every corpus file (ctest -L fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
seconds=60 runs=-1 max_len=4096 build_dir=build-fuzz build=1 run=1 jobs=$(nproc)
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --max-len) max_len=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --build-only) run=0; shift ;;
    --run-only) build=0; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "scripts/fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all=(safetensors artifact hf_config gguf scenario db dsse tokenizer_json tokenizer_encode)
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "scripts/fuzz.sh: unknown target '$t'" >&2; exit 2; }
done

if [ "$build" = 1 ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++ -DDETVERIFY_FUZZ=ON
  cmake --build "$build_dir" -j "$jobs" --target "${targets[@]/#/fuzz_}"
fi
[ "$run" = 1 ] || exit 0

# Extra seeds: the repository's own files of each format (read, never written).
extra_seeds() {
  case "$1" in
    safetensors) echo "$src/tests/data/gguf/llama_tiny_hf.safetensors" ;;
    artifact) ls "$src"/../shared/detllm/fixtures/*/config.json 2>/dev/null || true ;;
    gguf) ls "$src"/tests/data/gguf/*.gguf ;;
    scenario) ls "$src"/scenarios/*.yaml ;;
    tokenizer_json) ;;
  esac
}

mkdir -p "$build_dir/fuzz-logs" "$build_dir/fuzz-crashes"
status=0
for t in "${targets[@]}"; do
  work="$build_dir/fuzz-corpus/$t"
  mkdir -p "$work"
  cp -n "$src/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  for f in $(extra_seeds "$t"); do cp -n "$f" "$work/seed-$(basename "$(dirname "$f")")-$(basename "$f")"; done
  dict=()
  [ -f "$src/tests/fuzz/dict/$t.dict" ] && dict=(-dict="$src/tests/fuzz/dict/$t.dict")
  log="$build_dir/fuzz-logs/$t.log"
  echo "fuzz_$t: ${seconds}s / ${runs} runs -> $log"
  if ! "$build_dir/tests/fuzz/fuzz_$t" "${dict[@]}" -max_total_time="$seconds" -runs="$runs" \
      -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 \
      -artifact_prefix="$build_dir/fuzz-crashes/$t-" "$work" >"$log" 2>&1; then
    echo "fuzz_$t: FAILED (see $log)"; tail -n 30 "$log"; status=1
  else
    grep -E "stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|^Done " "$log" | sed "s/^/fuzz_$t: /" || true
  fi
done
exit $status
