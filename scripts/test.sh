#!/usr/bin/env bash
# Builds with warnings as errors and runs every test (labels: unit compat golden determinism e2e
# slow; a test that needs what this machine lacks, such as the real SmolLM2 model, skips and says
# why). Extra arguments go to ctest, e.g. scripts/test.sh -L unit.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh -DDETVERIFY_WERROR=ON
ctest --test-dir build --output-on-failure -j 2 --timeout 1800 "$@"
