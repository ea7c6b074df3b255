#!/usr/bin/env bash
# What a one-node Kubernetes needs besides its own binaries
# (scripts/ensure_kubernetes.sh): containerd, runc and the CNI plugins from
# Debian, and a pause image built here (no registry is reachable to pull
# registry.k8s.io/pause), saved under build/kubernetes/. A no-op once done.
#
# Debian's containerd package is installed but not started (its service is left
# to the machine): the e2e starts its own containerd, with its own config,
# socket and state, and stops it by PID.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/build/kubernetes"
PAUSE_TAR="$OUT/pause.tar"
PAUSE_NAME="localhost/pause:e2e"
mkdir -p "$OUT"

need=()
command -v containerd >/dev/null 2>&1 || need+=(containerd)
command -v runc >/dev/null 2>&1 || need+=(runc)
[[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
if ((${#need[@]})); then
  echo "ensure_node: apt-get install ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  # policy-rc.d: the package's postinst must not start a machine-wide containerd.
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

if [[ ! -f "$PAUSE_TAR" ]]; then
  bash "$ROOT/scripts/ensure_podman.sh"
  export CONTAINERS_CONF="$ROOT/build/podman/containers.conf"
  ctx="$(mktemp -d)"
  trap 'rm -rf "$ctx"' EXIT
  # The sandbox's process, doing what Kubernetes' own pause does: it holds the
  # pod's namespaces, ends on SIGTERM/SIGINT, and, being PID 1 of a pod with a
  # shared PID namespace (the chart's), reaps the orphans reparented to it, such
  # as a tool's setsid grandchild whose parent has exited.
  cat >"$ctx/pause.c" <<'EOF'
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}
int main(void) {
  struct sigaction sa = {0};
  sa.sa_handler = stop;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sa.sa_handler = reap;
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  for (;;) pause();
}
EOF
  gcc -static -O2 -o "$ctx/pause" "$ctx/pause.c"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Containerfile"
  podman build --network none -t "$PAUSE_NAME" -f "$ctx/Containerfile" "$ctx" >/dev/null
  podman save --quiet --format docker-archive -o "$PAUSE_TAR.tmp" "$PAUSE_NAME" >/dev/null
  mv "$PAUSE_TAR.tmp" "$PAUSE_TAR"
fi
