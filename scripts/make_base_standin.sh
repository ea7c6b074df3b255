#!/usr/bin/env bash
# Make a local stand-in for the Dockerfile's pinned base image
# (python:3.11.7-slim-bookworm) from Debian's packages, for machines that reach
# Debian's mirror but no container registry. Prints the image's name.
#
# The stand-in mimics the real base where the Dockerfile depends on it, so the
# Dockerfile stays the same for both: Debian bookworm, Python 3.11 as `python3`
# and `python`, `pip` on PATH and allowed to install into the system (the real
# base's Python is its own build in /usr/local, not Debian's, so it carries no
# EXTERNALLY-MANAGED marker), pip's console scripts in /usr/local/bin, groupadd
# and useradd, the same ENV LANG/PATH and CMD. What differs and cannot be
# hidden: Debian's Python is 3.11.2 (the real base: 3.11.7) and lives in /usr.
#
# Cached: the rootfs tarball under build/image/ is made once (debootstrap, a few
# minutes); the image is re-imported from it when podman's store lacks it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAME="localhost/interrupt-sidecar-base:standin-python3.11-slim-bookworm"
DIR="$ROOT/build/image"
TAR="$DIR/standin-rootfs.tar"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/build/podman/containers.conf}"

if podman image exists "$NAME" 2>/dev/null; then
  echo "$NAME"
  exit 0
fi
if [[ ! -f "$TAR" ]]; then
  echo "make_base_standin: debootstrap bookworm into a rootfs (once, a few minutes)" >&2
  mkdir -p "$DIR"
  rootfs="$(mktemp -d "$DIR/rootfs.XXXXXX")"
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase --include=python3,python3-pip,ca-certificates \
    bookworm "$rootfs" "$MIRROR" >"$DIR/debootstrap.log" 2>&1 ||
    { tail -20 "$DIR/debootstrap.log" >&2; exit 1; }
  # The real base's pip installs into its own interpreter without complaint.
  rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED
  ln -sf /usr/bin/python3 "$rootfs/usr/local/bin/python"
  ln -sf /usr/bin/pip3 "$rootfs/usr/local/bin/pip"
  # As slim as the real one: no apt lists, caches, docs or man pages.
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/usr/share/doc/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/var/log/*
  find "$rootfs" -name __pycache__ -type d -prune -exec rm -rf {} +
  tar --numeric-owner -C "$rootfs" -cf "$TAR.tmp" .
  mv "$TAR.tmp" "$TAR"
fi
podman import --quiet \
  --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  "$TAR" "$NAME" >/dev/null
echo "$NAME"
