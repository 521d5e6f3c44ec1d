#!/usr/bin/env bash
# Installs the Debian 12 packages detverify builds and tests with. Idempotent; run as root.
# Usage: scripts/install_deps.sh [--with-browser] [--with-cross]
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git binutils
  libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev libsqlite3-dev sqlite3 libssl-dev
  libboost-dev libboost-filesystem-dev libcli11-dev nlohmann-json3-dev
  libicu-dev libdivide-dev liblzma-dev
  clang-format
)
for arg in "$@"; do
  case "$arg" in
    --with-browser) packages+=(chromium) ;;
    --with-cross) packages+=(qemu-user g++-aarch64-linux-gnu g++-s390x-linux-gnu) ;;
    *) echo "install_deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps.sh: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
