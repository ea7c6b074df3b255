#!/usr/bin/env bash
# Install podman (which carries buildah's builder) and runc from Debian, and
# write the project's containers.conf into build/podman/. Every podman call of
# the project runs with CONTAINERS_CONF pointing at it; the machine's own
# /etc/containers is left alone. A no-op once done.
#
# Why the settings (measured on this project's CI machine kind: a VM with the
# cgroup v1 controllers and a cgroup2 mount, root):
# - runtime runc: crun 1.8 refuses to create containers on this hybrid cgroup
#   layout; runc 1.1 runs them.
# - default_ulimits: podman's default raises RLIMIT_NOFILE/NPROC above what the
#   VM grants, and every container start fails with "setrlimit ... operation
#   not permitted"; these limits are granted.
# No network backend is configured: builds use the host's network (pip reaches
# PyPI) and the image tests need none (the socket is on a shared volume).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONF_DIR="$ROOT/build/podman"
CONF="$CONF_DIR/containers.conf"

need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "ensure_podman: need root to apt-get install ${need[*]}" >&2
    exit 1
  fi
  echo "ensure_podman: apt-get install ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # The lock timeout: other installs may hold dpkg's lock on a shared machine.
  apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
    podman runc debootstrap >/dev/null
fi

mkdir -p "$CONF_DIR"
cat >"$CONF.tmp" <<'EOF'
# Written by scripts/ensure_podman.sh; used through CONTAINERS_CONF.
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=20000:20000"]
[engine]
runtime = "runc"
EOF
mv "$CONF.tmp" "$CONF"
