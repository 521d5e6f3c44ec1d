#!/usr/bin/env bash
# Lints the fleet workflow, docs/github-actions.yml (or the files given), with schema-aware
# checkers: check-jsonschema against its vendored copy of SchemaStore's GitHub workflow schema
# (every key, its type and allowed values), and actionlint (expressions, contexts, matrix and
# needs references, action inputs) where it is installed. Both come from scripts/install_deps.sh
# (a virtual environment in ${DETVERIFY_TOOLS:-/opt/detverify-tools}/venv) or the PATH. A checker
# that is not installed is reported SKIPPED, never passed silently; --require NAME makes its
# absence an error (.ci/run requires check-jsonschema: install_deps.sh --with-workflow-lint).
# tests/ci_workflow checks what no schema can: the fleet's shape and every detverify command in
# it against the binary's own options.
# Exit status: 0 every available checker passed, 1 a checker found a problem, 2 a required checker
# is missing or a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."
required=()
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --require) required+=("${2:?--require needs check-jsonschema or actionlint}"); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) files+=("$1"); shift ;;
  esac
done
[ ${#files[@]} -gt 0 ] || files=(docs/github-actions.yml)
venv="${DETVERIFY_TOOLS:-/opt/detverify-tools}/venv/bin"

find_tool() {
  if command -v "$1" > /dev/null; then
    command -v "$1"
  elif [ -x "$venv/$1" ]; then
    echo "$venv/$1"
  fi
}

status=0
ran=0
for tool in check-jsonschema actionlint; do
  path=$(find_tool "$tool")
  if [ -z "$path" ]; then
    for r in "${required[@]+"${required[@]}"}"; do
      if [ "$r" = "$tool" ]; then
        echo "lint_workflow.sh: $tool is required but not installed (scripts/install_deps.sh --with-workflow-lint)" >&2
        exit 2
      fi
    done
    echo "lint_workflow.sh: $tool SKIPPED (not installed; scripts/install_deps.sh --with-workflow-lint)"
    continue
  fi
  ran=$((ran + 1))
  case "$tool" in
    check-jsonschema) cmd=("$path" --builtin-schema vendor.github-workflows "${files[@]}") ;;
    actionlint) cmd=("$path" -no-color "${files[@]}") ;;
  esac
  if "${cmd[@]}"; then
    echo "lint_workflow.sh: $tool: ${files[*]} passed"
  else
    echo "lint_workflow.sh: $tool: ${files[*]} FAILED" >&2
    status=1
  fi
done
[ "$ran" -gt 0 ] || echo "lint_workflow.sh: no workflow linter installed: nothing was checked"
exit "$status"
