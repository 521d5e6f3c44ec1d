#!/usr/bin/env bash
# Builds with warnings as errors and runs every test (labels: unit compat golden determinism e2e
# slow; cuda tests are skipped, visibly, without a GPU). Extra arguments go to ctest, e.g.
# scripts/test.sh -L unit.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh -DDETVERIFY_WERROR=ON
ctest --test-dir build --output-on-failure -j 2 --timeout 1800 "$@"
