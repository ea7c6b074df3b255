#!/bin/sh
# Install the programs some tests drive (gcc for the C tool and the fault-injection shim,
# util-linux's unshare/nsenter/mount for private mount and PID namespaces, bsdutils' script
# for a terminal, gpg to sign a release and its tests) when one is missing. In CI (.ci/run)
# a test missing them fails, so they must be here. Idempotent: a no-op once installed.
set -eu

missing=""
for tool in gcc unshare nsenter mount script gpg; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_system_tools: missing:$missing and no apt-get here; install them by hand" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# The lock timeout: another install (a second checkout, a cold rehearsal) may hold
# dpkg's or apt's lock; without it apt-get fails at once.
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends gcc libc6-dev util-linux mount bsdutils gnupg >/dev/null
