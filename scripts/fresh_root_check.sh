#!/usr/bin/env bash
# Proves the install scripts on a machine that has never installed anything: builds a minimal
# Debian 12 root with debootstrap (once, cached), copies the committed tree into a fresh copy of
# it, and runs the install script and a CMake configure there (the configure finds every library
# the build needs, so a package missing from scripts/install_deps.sh fails here, not on a user's
# machine). A machine where packages were installed by hand cannot catch that; this can.
#
#   scripts/fresh_root_check.sh [--cache DIR] [--keep] [--build] [-- INSTALL_ARGS...]
#
# INSTALL_ARGS go to scripts/install_deps.sh (default: --with-browser --with-cross --with-models,
# what .ci/run installs). --build also builds and runs the unit tests inside the root (slow: a full
# build on a fresh machine). --keep leaves the used root for inspection. Run as root, from a git
# checkout. The pristine root lives in --cache (default /var/tmp/detverify-fresh-root) and uses
# this machine's apt sources. Certificates this machine trusts beyond Debian's bundle
# (/usr/local/share/ca-certificates, e.g. a TLS-inspecting proxy's) are trusted inside the root
# too, as an administrator would set up a new machine behind the same proxy.
# Exit status: 0 when everything passed, 1 when a step failed inside the root, 2 on a usage or
# setup error.
set -euo pipefail
cache=/var/tmp/detverify-fresh-root
keep=0
build=0
install_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache="${2:?--cache needs a folder}"; shift 2 ;;
    --keep) keep=1; shift ;;
    --build) build=1; shift ;;
    --) shift; install_args=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh_root_check.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#install_args[@]} -gt 0 ] || install_args=(--with-browser --with-cross --with-models)
fail_setup() { echo "fresh_root_check.sh: $*" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || fail_setup "run as root (debootstrap and chroot need it)"
top=$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2> /dev/null) ||
  fail_setup "run from the project's git checkout"

pristine="$cache/pristine"
if [ ! -f "$pristine/.complete" ]; then
  if ! command -v debootstrap > /dev/null; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends debootstrap > /dev/null ||
      fail_setup "cannot install debootstrap"
  fi
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2> /dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2> /dev/null || true)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  echo "fresh_root_check.sh: building a minimal Debian 12 root in $pristine (once; 1-2 minutes)"
  rm -rf "$pristine" && mkdir -p "$cache"
  debootstrap --variant=minbase bookworm "$pristine.tmp" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
    fail_setup "debootstrap failed (log: $cache/debootstrap.log)"
  rm -f "$pristine.tmp/etc/apt/sources.list"
  mkdir -p "$pristine.tmp/etc/apt/sources.list.d"
  cp /etc/apt/sources.list.d/*.sources "$pristine.tmp/etc/apt/sources.list.d/" 2> /dev/null ||
    cp /etc/apt/sources.list "$pristine.tmp/etc/apt/" 2> /dev/null || true
  touch "$pristine.tmp/.complete"
  mv "$pristine.tmp" "$pristine"
fi

root="$cache/root.$$"
cleanup() {
  for m in dev/pts dev proc sys; do umount -l "$root/$m" 2> /dev/null || true; done
  if [ "$keep" -eq 1 ]; then echo "fresh_root_check.sh: root kept in $root"; else rm -rf "$root"; fi
}
trap cleanup EXIT
cp -a "$pristine" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2> /dev/null || true
if compgen -G "/usr/local/share/ca-certificates/*.crt" > /dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
mkdir -p "$root/project"
git -C "$top" archive HEAD | tar -x -C "$root/project"
mount -t proc proc "$root/proc"
mount --bind /sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"

# Inside the root: a clean environment, nothing from this machine's shell.
steps='set -euo pipefail; cd /project
echo "fresh_root_check.sh: [root] scripts/install_deps.sh $*"
scripts/install_deps.sh "$@"
echo "fresh_root_check.sh: [root] cmake configure"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDETVERIFY_WERROR=ON > /tmp/configure.log 2>&1 ||
  { cat /tmp/configure.log; exit 1; }'
if [ "$build" -eq 1 ]; then
  steps+='
echo "fresh_root_check.sh: [root] scripts/test.sh -L unit"
scripts/test.sh -L unit'
fi
set +e
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 /bin/bash -c "$steps" bash "${install_args[@]}"
rc=$?
set -e
if [ $rc -eq 0 ]; then
  echo "fresh_root_check.sh: PASS in a fresh Debian 12 root (install_deps.sh ${install_args[*]})"
else
  echo "fresh_root_check.sh: FAIL (exit $rc) in a fresh Debian 12 root (install_deps.sh ${install_args[*]})" >&2
  rc=1
fi
exit $rc
