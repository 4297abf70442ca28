#!/usr/bin/env bash
# Download Debian's bookworm-backports kernel (6.12: the first Debian kernel with weighted
# interleave) and unpack it under tests/numa_vm/cache/ for the NUMA guest. Nothing is installed
# and the machine's apt sources are left alone: apt runs on a private list and state directory.
# Idempotent: a second run with the kernel already unpacked does nothing.
#   bash tests/numa_vm/fetch_kernel.sh        prints the unpacked kernel's directory
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE="$HERE/cache"
KERNEL_DIR="$CACHE/kernel"
MIRROR=${NUMA_VM_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm-backports
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

die() { echo "fetch_kernel.sh: error: $*" >&2; exit 2; }

if [ -f "$KERNEL_DIR/.complete" ]; then
    echo "$KERNEL_DIR"
    exit 0
fi

command -v apt-get >/dev/null || die "apt-get not found: the guest kernel comes from Debian's archive, run this on Debian 12"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found: install dpkg"
[ -r "$KEYRING" ] || die "$KEYRING missing: apt-get install debian-archive-keyring"

APT_DIR="$CACHE/apt"
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/archives/partial" "$APT_DIR/sources.list.d" "$APT_DIR/preferences.d"
echo "deb [signed-by=$KEYRING] $MIRROR $SUITE main" > "$APT_DIR/sources.list"
: > "$APT_DIR/status"
APT_OPTS=(
    -o "Dir::Etc::SourceList=$APT_DIR/sources.list"
    -o "Dir::Etc::SourceParts=$APT_DIR/sources.list.d"
    -o "Dir::Etc::Preferences=$APT_DIR/preferences"
    -o "Dir::Etc::PreferencesParts=$APT_DIR/preferences.d"
    -o "Dir::State::Lists=$APT_DIR/lists"
    -o "Dir::State::status=$APT_DIR/status"
    -o "Dir::Cache=$APT_DIR"
    -o "Dir::Cache::archives=$APT_DIR/archives"
    -o "Debug::NoLocking=1"
    -o "APT::Get::List-Cleanup=0"
)

apt-get "${APT_OPTS[@]}" update -qq >"$APT_DIR/update.log" 2>&1 \
    || die "apt-get update of $SUITE failed ($(tail -n 1 "$APT_DIR/update.log")): check that $MIRROR is reachable"

# linux-image-amd64 in backports depends on the versioned image package; take the newest.
IMAGE=$(apt-cache "${APT_OPTS[@]}" depends linux-image-amd64 2>/dev/null \
        | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | sort -V | tail -n 1)
[ -n "$IMAGE" ] || die "no linux-image-*-amd64 found in $SUITE: the archive layout changed, set the package by hand in $0"

STAGE=$(mktemp -d "$CACHE/stage.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
(cd "$STAGE" && apt-get "${APT_OPTS[@]}" download -qq "$IMAGE" >"$STAGE/download.log" 2>&1) \
    || die "apt-get download $IMAGE failed: $(tail -n 1 "$STAGE/download.log")"
DEB=$(find "$STAGE" -maxdepth 1 -name '*.deb' | head -n 1)
dpkg-deb -x "$DEB" "$STAGE/root"
VMLINUZ=$(find "$STAGE/root/boot" -name 'vmlinuz-*' | head -n 1)
[ -f "$VMLINUZ" ] || die "$DEB has no /boot/vmlinuz-*"
RELEASE=${VMLINUZ##*/vmlinuz-}
[ -d "$STAGE/root/lib/modules/$RELEASE" ] || die "$DEB has no /lib/modules/$RELEASE"

rm -rf "$KERNEL_DIR"
mkdir -p "$KERNEL_DIR"
mv "$VMLINUZ" "$KERNEL_DIR/vmlinuz"
mv "$STAGE/root/lib/modules/$RELEASE" "$KERNEL_DIR/modules"
echo "$RELEASE" > "$KERNEL_DIR/release"
echo "$IMAGE" > "$KERNEL_DIR/package"
touch "$KERNEL_DIR/.complete"
echo "$KERNEL_DIR"
